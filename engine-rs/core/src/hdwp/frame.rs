//! Decoded HDWP frames and the value rules every frame satisfies.
//!
//! Frames borrow their variable-length parts (records, text, JSON, hash) from the buffer they were
//! decoded from, so decoding copies nothing. The same [`Frame::validate`] runs before encoding
//! and after decoding, so the encoder can never write what the decoder would reject.

use super::checks::{check_exact, check_json_object, check_len};
pub(crate) use super::checks::{check_record_size, check_token};
use super::error::HdwpError;
pub use super::frame_results::{BatchEnd, EndOfBatches, TraceContextFrame};
use super::kind::{FrameKind, Role};
use super::{
    BATCH_DIGEST_LEN, MAX_DATASET_ID_LEN, MAX_HASH_LEN, MAX_JSON_LEN, MAX_TEXT_LEN, TOKEN_LEN,
    VERSION,
};
use crate::batch_id::BatchId;

/// The query id and per-query token that authenticate a query result stream. Carried as the
/// optional block that opens the payload of every kind but query and cancel (header flag bit 0),
/// and as the leading fields of query and cancel frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueryAuth {
    /// The query id (HDQuery `query_id`).
    pub query_id: u32,
    /// The 128-bit random token issued with the query; never all zero.
    pub token: [u8; TOKEN_LEN],
}

/// Opens a stream and binds it: protocol version, sender role, dataset and record size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// Protocol version the sender speaks (1).
    pub version: u8,
    /// Who opened the stream.
    pub role: Role,
    /// Record size of every records frame on the stream, 1..=65535.
    pub record_size: u16,
    /// Dataset id (the schema id), 1..=255 UTF-8 bytes.
    pub dataset_id: &'a str,
}

/// A run of whole fixed-width records of one batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Records<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// The batch the records belong to.
    pub batch_id: BatchId,
    /// Bytes per record, 1..=65535.
    pub record_size: u16,
    /// Number of records, at least 1.
    pub count: u32,
    /// `count * record_size` bytes of records.
    pub payload: &'a [u8],
}

/// End of batch: the batch is complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndOfBatch<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// The batch that ends.
    pub batch_id: BatchId,
    /// Records the batch holds in total, at most 2^53 - 1.
    pub record_count: u64,
    /// Closing hash of the batch's hash chain, 0..=64 bytes (empty: none).
    pub closing_hash: &'a [u8],
    /// The sender's batch digest: BLAKE3-256 of every record byte of the batch in order, 32
    /// bytes, or empty for none (an eob written before the field existed).
    pub digest: &'a [u8],
}

/// Bad batch notice: the batch is void.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadBatch<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// The batch that is void.
    pub batch_id: BatchId,
    /// Why, at most 4096 UTF-8 bytes.
    pub reason: &'a str,
}

/// A query sent to an SCC or Storage Node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query<'a> {
    /// Query id and the token its results must carry.
    pub auth: QueryAuth,
    /// The HDQuery JSON wire form: a JSON object of at most 1 MiB.
    pub json: &'a str,
}

/// Cancels a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancel {
    /// Query id and token of the query to cancel; the token proves the sender owns the query.
    pub auth: QueryAuth,
}

/// An error that closes the stream (or, with a query block, one query's results).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorFrame<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// Error code (see docs/hdwp.md for assigned values).
    pub code: u16,
    /// Human-readable message, at most 4096 UTF-8 bytes.
    pub message: &'a str,
}

/// Flow-control credit: the receiver grants the sender more bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credit {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// Frame bytes (headers included) the sender may send beyond earlier grants, 1..=2^53 - 1.
    pub bytes: u64,
}

/// A batch's partial aggregate, sent by a Storage Node in place of the batch's records frames when
/// the query carries an `aggregate` (docs/query.md, "Aggregates"); the batch still ends with eob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregatePartial<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// The batch the partial covers.
    pub batch_id: BatchId,
    /// The partial as UTF-8 JSON: an object `{ "v": 1, "groups": [...] }` (bounded by the payload limit).
    pub json: &'a str,
}

/// A run of a batch's matching records as columns (docs/hdwp.md, "columns"): the columnar body
/// (`crate::columnar`) is checked by the client against the columns it asked for, not here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnsFrame<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// The batch the rows belong to.
    pub batch_id: BatchId,
    /// Rows the body holds, at least 1.
    pub rows: u32,
    /// The columnar body, not empty.
    pub body: &'a [u8],
}

/// One HDWP frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// See [`Hello`].
    Hello(Hello<'a>),
    /// See [`Records`].
    Records(Records<'a>),
    /// See [`EndOfBatch`].
    Eob(EndOfBatch<'a>),
    /// See [`BadBatch`].
    Bbn(BadBatch<'a>),
    /// See [`Query`].
    Query(Query<'a>),
    /// See [`Cancel`].
    Cancel(Cancel),
    /// See [`ErrorFrame`].
    Error(ErrorFrame<'a>),
    /// See [`Credit`].
    Credit(Credit),
    /// See [`AggregatePartial`].
    Aggregate(AggregatePartial<'a>),
    /// See [`ColumnsFrame`].
    Columns(ColumnsFrame<'a>),
    /// See [`EndOfBatches`].
    Eobs(EndOfBatches),
    /// See [`TraceContextFrame`].
    TraceContext(TraceContextFrame<'a>),
}

impl Frame<'_> {
    /// The frame's kind.
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Hello(_) => FrameKind::Hello,
            Frame::Records(_) => FrameKind::Records,
            Frame::Eob(_) => FrameKind::Eob,
            Frame::Bbn(_) => FrameKind::Bbn,
            Frame::Query(_) => FrameKind::Query,
            Frame::Cancel(_) => FrameKind::Cancel,
            Frame::Error(_) => FrameKind::Error,
            Frame::Credit(_) => FrameKind::Credit,
            Frame::Aggregate(_) => FrameKind::Aggregate,
            Frame::Columns(_) => FrameKind::Columns,
            Frame::Eobs(_) => FrameKind::Eobs,
            Frame::TraceContext(_) => FrameKind::TraceContext,
        }
    }

    /// The optional query authentication block (`None` for query and cancel, whose id and token
    /// are fields of their own).
    pub fn auth_block(&self) -> Option<QueryAuth> {
        match self {
            Frame::Hello(f) => f.auth,
            Frame::Records(f) => f.auth,
            Frame::Eob(f) => f.auth,
            Frame::Bbn(f) => f.auth,
            Frame::Error(f) => f.auth,
            Frame::Credit(f) => f.auth,
            Frame::Aggregate(f) => f.auth,
            Frame::Columns(f) => f.auth,
            Frame::Eobs(f) => f.auth,
            Frame::TraceContext(f) => f.auth,
            Frame::Query(_) | Frame::Cancel(_) => None,
        }
    }

    /// Checks every value rule of the frame's kind. Runs before encoding and after decoding.
    pub fn validate(&self) -> Result<(), HdwpError> {
        if let Some(a) = self.auth_block() {
            check_token(&a)?;
        }
        match self {
            Frame::Hello(f) => {
                if f.version != VERSION {
                    return Err(HdwpError::UnsupportedVersion { version: f.version });
                }
                check_record_size(f.record_size)?;
                if f.dataset_id.is_empty() {
                    return Err(HdwpError::invalid("dataset id", "must not be empty"));
                }
                check_len("dataset id", f.dataset_id.len(), MAX_DATASET_ID_LEN)
            }
            Frame::Records(f) => {
                check_record_size(f.record_size)?;
                if f.count == 0 {
                    return Err(HdwpError::invalid(
                        "record count",
                        "a records frame carries at least one record",
                    ));
                }
                let want = f.count as u64 * f.record_size as u64;
                if f.payload.len() as u64 != want {
                    return Err(HdwpError::inconsistent(
                        FrameKind::Records,
                        format!(
                            "{} record bytes, but count {} x record size {} = {want}",
                            f.payload.len(),
                            f.count,
                            f.record_size
                        ),
                    ));
                }
                Ok(())
            }
            Frame::Eob(f) => {
                check_exact("record count", f.record_count)?;
                check_len("closing hash", f.closing_hash.len(), MAX_HASH_LEN)?;
                if !f.digest.is_empty() && f.digest.len() != BATCH_DIGEST_LEN {
                    return Err(HdwpError::invalid(
                        "batch digest",
                        format!(
                            "{} bytes; a BLAKE3 batch digest is {BATCH_DIGEST_LEN}",
                            f.digest.len()
                        ),
                    ));
                }
                Ok(())
            }
            Frame::Bbn(f) => check_len("bad batch reason", f.reason.len(), MAX_TEXT_LEN),
            Frame::Query(f) => {
                check_token(&f.auth)?;
                check_len("query JSON", f.json.len(), MAX_JSON_LEN)?;
                check_json_object(f.json)
            }
            Frame::Cancel(f) => check_token(&f.auth),
            Frame::Error(f) => check_len("error message", f.message.len(), MAX_TEXT_LEN),
            Frame::Credit(f) => {
                if f.bytes == 0 {
                    return Err(HdwpError::invalid(
                        "credit",
                        "a grant of zero bytes is meaningless",
                    ));
                }
                check_exact("credit", f.bytes)
            }
            Frame::Aggregate(f) => check_json_object(f.json),
            Frame::Columns(f) => {
                if f.rows == 0 {
                    return Err(HdwpError::invalid(
                        "row count",
                        "a columns frame carries at least one row",
                    ));
                }
                if f.body.is_empty() {
                    return Err(HdwpError::invalid(
                        "columnar body",
                        "a columns frame carries a body",
                    ));
                }
                Ok(())
            }
            Frame::Eobs(f) => f.validate(),
            Frame::TraceContext(f) => f.validate(),
        }
    }
}

/// Assigned values of [`ErrorFrame::code`] (docs/hdwp.md, "Error frame codes"). Any u16 is
/// accepted on the wire, so later versions can add codes.
pub mod error_codes {
    /// The peer sent a malformed frame; the message names the `ERR_HDWP_*` code.
    pub const PROTOCOL: u16 = 1;
    /// Version, role or dataset not served here.
    pub const UNSUPPORTED: u16 = 2;
    /// Query id or token unknown or mismatched.
    pub const UNKNOWN_QUERY: u16 = 3;
    /// The query was cancelled.
    pub const CANCELLED: u16 = 4;
    /// The query or batch timed out.
    pub const TIMEOUT: u16 = 5;
    /// Admission refused.
    pub const OVERLOADED: u16 = 6;
    /// An internal failure.
    pub const INTERNAL: u16 = 7;
    /// The sender sent more records bytes than it was granted.
    pub const CREDIT_EXCEEDED: u16 = 8;
    /// The receiver is stopping; the stream closes, unacknowledged batches stay open.
    pub const SHUTTING_DOWN: u16 = 9;
    /// One batch refused: its content does not match its end-of-batch, or it is durable with other content.
    pub const BATCH_REFUSED: u16 = 10;
    /// The HDQuery failed validation on a node; the message names the key.
    pub const BAD_QUERY: u16 = 11;
    /// verify_hash found a chain that does not match the stored closing hash.
    pub const HASH_MISMATCH: u16 = 12;
    /// The segment is damaged (checksum) or missing.
    pub const BATCH_UNREADABLE: u16 = 13;
    /// An eob does not describe what the receiver holds for its batch (record count or the
    /// sender's batch digest differ): nothing was acknowledged; the sender re-sends the batch.
    pub const BATCH_MISMATCH: u16 = 14;
}
