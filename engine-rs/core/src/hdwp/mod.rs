//! HDWP v1, HD's data-plane wire protocol: length-prefixed, versioned, checksummed frames.
//!
//! Every frame is a 16-byte [`header`] followed by a payload whose layout depends on the frame
//! [`kind`]. All integers are big-endian. The CRC-32C in the header covers the first 12 header
//! bytes and the whole payload. `docs/hdwp.md` is the normative description; this module is its
//! implementation:
//!
//! * [`frame`]: the decoded frame values ([`Frame`]) and the value rules they must satisfy
//!   ([`frame_results`]: the result-stream frames eobs and trace_context);
//! * [`encode`]: frame → bytes, and the batched records encoder that packs a chunk of records into
//!   as many frames as a frame limit (a TCP limit or a datagram MTU) requires;
//! * [`decode`]: bytes → frame, never trusting a length and never panicking;
//! * [`decoder`]: [`FrameDecoder`], the streaming cursor that takes arbitrary chunks;
//! * [`error`]: [`HdwpError`], one variant per malformation, each with a stable code string.

mod checks;
pub mod decode;
pub mod decoder;
pub mod encode;
pub mod error;
pub mod frame;
pub mod frame_results;
pub mod header;
pub mod kind;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_eobs;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_stream;

pub use decode::{decode_datagram, decode_frame, peek_frame, Peek};
pub use decoder::FrameDecoder;
pub use encode::{
    check_mtu, encode_datagrams, encode_frame, encode_records, encode_records_for_mtu,
    records_per_frame, RecordsPlan,
};
pub use error::HdwpError;
pub use frame::{
    error_codes, AggregatePartial, BadBatch, BatchEnd, Cancel, ColumnsFrame, Credit, EndOfBatch,
    EndOfBatches, ErrorFrame, Frame, Hello, Query, QueryAuth, Records, TraceContextFrame,
};
pub use frame_results::{EOBS_ENTRY_LEN, MAX_EOBS_BATCHES};
pub use header::Header;
pub use kind::{FrameKind, Role};

/// The four bytes every frame starts with: ASCII "HDWP".
pub const MAGIC: [u8; 4] = *b"HDWP";
/// The protocol version this implementation speaks, in every header and in hello frames.
pub const VERSION: u8 = 1;
/// Bytes in a frame header.
pub const HEADER_LEN: usize = 16;
/// Bytes in a per-query token.
pub const TOKEN_LEN: usize = 16;
/// Bytes of the query authentication block (query id u32 + token) that opens a payload when
/// [`FLAG_AUTH`] is set.
pub const AUTH_LEN: usize = 4 + TOKEN_LEN;
/// Header flag: the payload opens with a query authentication block.
pub const FLAG_AUTH: u16 = 0x0001;
/// Every flag bit this version defines; any other bit set is an error.
pub const KNOWN_FLAGS: u16 = FLAG_AUTH;

/// Default largest payload a decoder accepts and the batched encoder produces on streams: 16 MiB.
pub const DEFAULT_MAX_PAYLOAD: u32 = 16 << 20;
/// The largest payload limit a decoder may be configured with: 1 GiB.
pub const MAX_PAYLOAD_CEILING: u32 = 1 << 30;
/// Longest bad batch reason and error message, in UTF-8 bytes.
pub const MAX_TEXT_LEN: usize = 4096;
/// Longest dataset id in a hello frame, in UTF-8 bytes.
pub const MAX_DATASET_ID_LEN: usize = 255;
/// Longest JSON document in a query frame, in bytes.
pub const MAX_JSON_LEN: usize = 1 << 20;
/// Deepest nesting of objects and arrays in a query frame's JSON.
pub const MAX_JSON_DEPTH: usize = 64;
/// Longest closing hash in an end-of-batch frame, in bytes.
pub const MAX_HASH_LEN: usize = 64;
/// Length of the sender's batch digest an end-of-batch frame may carry (BLAKE3-256).
pub const BATCH_DIGEST_LEN: usize = 32;
/// Digest kind byte of a BLAKE3-256 batch digest (the only kind assigned).
pub const DIGEST_KIND_BLAKE3: u8 = 1;
/// Largest value of a 64-bit count field (record count, credit): 2^53 - 1, so that every
/// implementation, JavaScript included, holds it exactly.
pub const MAX_EXACT_INT: u64 = (1 << 53) - 1;

/// Standard datagram MTU of the data plane (the reference's default), in bytes per datagram.
pub const MTU_STANDARD: usize = 1200;
/// Jumbo datagram MTU of the data plane, in bytes per datagram (links must carry at least 8550).
pub const MTU_JUMBO: usize = 8500;
/// Largest UDP payload over IPv4, the ceiling of any datagram MTU.
pub const MAX_DATAGRAM: usize = 65_507;
