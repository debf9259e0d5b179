//! Frames only query result streams carry that end or describe a whole transfer rather than one
//! batch: [`EndOfBatches`] (eobs, several batches ended at once) and [`TraceContextFrame`] (the
//! sender's W3C trace context). docs/hdwp.md, "eobs" and "trace_context".

use std::collections::HashSet;

use super::checks::{check_exact, check_json_object};
use super::error::HdwpError;
use super::frame::QueryAuth;
use crate::batch_id::{BatchId, BATCH_ID_LEN};

/// Most batches one eobs frame ends; a sender with more sends several frames.
pub const MAX_EOBS_BATCHES: usize = 65_535;
/// Bytes of one eobs entry: batch id and record count (u64).
pub const EOBS_ENTRY_LEN: usize = BATCH_ID_LEN + 8;

/// One batch an [`EndOfBatches`] frame ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchEnd {
    /// The batch that ends.
    pub batch_id: BatchId,
    /// Records the batch delivered in total, at most 2^53 - 1.
    pub record_count: u64,
}

/// Ends several batches of a query at once (kind eobs): sent by a Storage Node that merged the
/// results of many small batches, in place of one eob per batch. Result streams only; no closing
/// hash (result streams send an empty one in eob).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndOfBatches {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// The batches ended, 1..=65535 of them, each at most once, in the sender's order.
    pub batches: Vec<BatchEnd>,
}

impl EndOfBatches {
    /// Count 1..=65535, every record count at most 2^53 - 1, no batch id twice
    /// (`ERR_HDWP_INVALID_VALUE`).
    pub fn validate(&self) -> Result<(), HdwpError> {
        check_batch_count(self.batches.len() as u64)?;
        let mut seen: HashSet<&BatchId> = HashSet::with_capacity(self.batches.len());
        for (i, b) in self.batches.iter().enumerate() {
            check_exact("record count", b.record_count)?;
            if !seen.insert(&b.batch_id) {
                return Err(HdwpError::invalid(
                    "batch id",
                    format!("entry {i} names a batch an earlier entry of the frame ends"),
                ));
            }
        }
        Ok(())
    }
}

/// The eobs count field: 1..=65535 (`ERR_HDWP_INVALID_VALUE`). Checked on the wire before the
/// entries' length, so a count out of range is reported as such whatever follows it.
pub(crate) fn check_batch_count(count: u64) -> Result<(), HdwpError> {
    if count == 0 || count > MAX_EOBS_BATCHES as u64 {
        return Err(HdwpError::invalid(
            "batch count",
            format!("must be 1..={MAX_EOBS_BATCHES}, got {count}"),
        ));
    }
    Ok(())
}

/// The W3C trace context of the sender's span (kind trace_context), sent by a Storage Node right
/// after hello on a result stream so the client can parent its span for the transfer
/// (docs/observability.md, "Traces"). The codec checks only that it is a JSON object; the layout of
/// `traceparent` is the receiver's to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContextFrame<'a> {
    /// Query binding for a result stream.
    pub auth: Option<QueryAuth>,
    /// UTF-8 JSON object `{"traceparent": "00-…-…-..", "tracestate"?: "…"}`, nested at most 64
    /// deep, bounded by the payload limit.
    pub json: &'a str,
}

impl TraceContextFrame<'_> {
    /// The JSON is an object nested at most 64 deep (`ERR_HDWP_BAD_JSON`).
    pub fn validate(&self) -> Result<(), HdwpError> {
        check_json_object(self.json)
    }
}
