//! Typed errors of the segment store. Every problem with a file's bytes is one of these; nothing
//! read from disk can panic.

use std::path::PathBuf;

use thiserror::Error;

/// A segment could not be written, read or verified.
#[derive(Debug, Error)]
pub enum SegmentError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid segment writer config: {0}")]
    Config(String),
    #[error("segment {0} already exists")]
    Exists(PathBuf),
    #[error("segment truncated: {what} needs {need} bytes, the file has {have}")]
    Truncated {
        what: &'static str,
        need: u64,
        have: u64,
    },
    #[error("bad {0} magic: not an HD segment or damaged")]
    Magic(&'static str),
    #[error("unsupported segment version {0}")]
    Version(u16),
    #[error("segment header checksum does not match")]
    HeaderChecksum,
    #[error("segment footer checksum does not match")]
    FooterChecksum,
    #[error("corrupt segment: {0}")]
    Corrupt(String),
    #[error("records of block {0} do not match their checksum")]
    BlockChecksum(u64),
    #[error("hash chain does not verify at block {0}")]
    ChainMismatch(u64),
    #[error("closing hash mismatch: expected {expected}, computed {actual}")]
    ClosingHash { expected: String, actual: String },
    #[error("batch ends with a partial record of {0} bytes")]
    PartialRecord(usize),
    #[error("{0}")]
    Range(String),
    #[error("segment writer is closed")]
    Closed,
}

impl SegmentError {
    /// Stable code for the bridge (`err.code` in TypeScript).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "ERR_SEGMENT_IO",
            Self::Config(_) => "ERR_SEGMENT_CONFIG",
            Self::Exists(_) => "ERR_SEGMENT_EXISTS",
            Self::Truncated { .. } => "ERR_SEGMENT_TRUNCATED",
            Self::Magic(_) => "ERR_SEGMENT_MAGIC",
            Self::Version(_) => "ERR_SEGMENT_VERSION",
            Self::HeaderChecksum => "ERR_SEGMENT_HEADER_CHECKSUM",
            Self::FooterChecksum => "ERR_SEGMENT_FOOTER_CHECKSUM",
            Self::Corrupt(_) => "ERR_SEGMENT_CORRUPT",
            Self::BlockChecksum(_) => "ERR_SEGMENT_BLOCK_CHECKSUM",
            Self::ChainMismatch(_) => "ERR_SEGMENT_CHAIN",
            Self::ClosingHash { .. } => "ERR_SEGMENT_CLOSING_HASH",
            Self::PartialRecord(_) => "ERR_SEGMENT_PARTIAL_RECORD",
            Self::Range(_) => "ERR_SEGMENT_RANGE",
            Self::Closed => "ERR_SEGMENT_CLOSED",
        }
    }

    /// Whether the error says the file's bytes are damaged (as opposed to I/O or caller errors):
    /// recovery quarantines segments that fail with one of these.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            Self::Truncated { .. }
                | Self::Magic(_)
                | Self::Version(_)
                | Self::HeaderChecksum
                | Self::FooterChecksum
                | Self::Corrupt(_)
                | Self::BlockChecksum(_)
                | Self::ChainMismatch(_)
                | Self::ClosingHash { .. }
        )
    }
}

/// Wraps an I/O error with the operation and path.
pub(crate) fn io<'a>(
    op: &'static str,
    path: &'a std::path::Path,
) -> impl FnOnce(std::io::Error) -> SegmentError + 'a {
    move |source| SegmentError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}
