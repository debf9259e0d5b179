//! The segment store: one file per dataset batch holding its records in hash-chain blocks, zone
//! maps per block, a batch filter and a footer with the closing hash. docs/segment.md holds the
//! byte layout, the durability protocol and the recovery rules.

mod direct;
mod error;
mod footer_cache;
mod layout;
mod reader;
mod record_cache;
mod recover;
mod stats;
#[cfg(test)]
mod tests;
mod uring;
mod writer;
mod zone;

pub use direct::{direct_io_supported, SegmentIo, DIRECT_ALIGN, DIRECT_CHUNK};
pub use error::SegmentError;
pub use footer_cache::FOOTER_CACHE_BYTES;
pub use layout::{BlockEntry, SegmentHeader, MAGIC, TAIL_LEN, TRAILER_MAGIC, VERSION};
pub use reader::{SegmentReader, MAX_READ_BYTES};
pub use record_cache::{
    record_cache_stats, set_record_cache_bytes, PieceLookup, RecordCacheStats,
    DEFAULT_RECORD_CACHE_BYTES,
};
pub use recover::{
    recover_dir, verify_segment, Quarantined, RecoverOptions, Recovery, Verified, QUARANTINE_DIR,
};
pub use stats::{BatchStats, CodeField, CodeStats, StatsBuilder, MAX_CODE_FIELDS, STATS_VERSION};
pub use uring::{uring_io_refusal, URING_CHUNK, URING_DEPTH};
pub use writer::{segment_file_name, sync_dir, SegmentConfig, SegmentSummary, SegmentWriter};
pub use zone::{zone_fields_from_schema, Zone, ZoneField, ZoneKind, MAX_ZONE_FIELDS};

/// Extension of a complete segment file.
pub const SEGMENT_EXT: &str = ".hdseg";
/// Suffix of a segment still being written.
pub const PARTIAL_SUFFIX: &str = ".partial";
