//! The typed errors of HDWP: one variant per malformation, each with a stable code string.

use super::kind::FrameKind;

/// Why bytes are not a valid HDWP frame (decoding) or a frame cannot be written (encoding).
///
/// The [`code`](HdwpError::code) strings are part of the contract: TypeScript sees them as
/// `HdwpError.code`, logs and tests match on them, and they never change meaning.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HdwpError {
    /// The frame does not start with "HDWP".
    #[error("bad magic: expected \"HDWP\", got bytes {found:02x?}")]
    BadMagic {
        /// The bytes read where the magic belongs (as many as were present).
        found: Vec<u8>,
    },
    /// The header or hello frame names a protocol version this implementation does not speak.
    #[error("unsupported HDWP version {version}; this implementation speaks version 1")]
    UnsupportedVersion {
        /// The version byte.
        version: u8,
    },
    /// The header's kind byte names no frame kind of this version.
    #[error("unknown frame kind 0x{kind:02x}")]
    UnknownKind {
        /// The kind byte.
        kind: u8,
    },
    /// The header sets a flag this version does not define, or one the kind does not allow.
    #[error("bad flags 0x{flags:04x} on a {kind} frame", kind = kind.name())]
    BadFlags {
        /// The frame's kind.
        kind: FrameKind,
        /// The flags word.
        flags: u16,
    },
    /// A length exceeds its bound: the payload, a text or JSON field, or a record for a frame limit.
    #[error("{what} is {len} bytes, over the limit of {max}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// Its length in bytes.
        len: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// The CRC-32C in the header does not match the frame's bytes.
    #[error("checksum mismatch: header says 0x{expected:08x}, frame hashes to 0x{actual:08x}")]
    ChecksumMismatch {
        /// The checksum carried in the header.
        expected: u32,
        /// The checksum computed over the received bytes.
        actual: u32,
    },
    /// The payload ends inside a fixed field.
    #[error("{kind} frame truncated: payload ends inside field {field}", kind = kind.name())]
    TruncatedField {
        /// The frame's kind.
        kind: FrameKind,
        /// The field that was cut short.
        field: &'static str,
    },
    /// Lengths disagree: records bytes vs count × record size, trailing bytes, a datagram with
    /// more or less than one frame.
    #[error("{kind} frame: {detail}", kind = kind.name())]
    InconsistentLength {
        /// The frame's kind.
        kind: FrameKind,
        /// Which lengths disagree, with their values.
        detail: String,
    },
    /// A field holds a value outside its domain (record size 0, unknown role, zero token, ...).
    #[error("invalid {field}: {detail}")]
    InvalidValue {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// A text field is not valid UTF-8.
    #[error("{field} is not valid UTF-8 (first bad byte at offset {valid_up_to})")]
    BadUtf8 {
        /// The field.
        field: &'static str,
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// The query frame's JSON is not a JSON object.
    #[error("query JSON is not a valid JSON object: {detail}")]
    BadJson {
        /// The parser's complaint.
        detail: String,
    },
    /// The stream ended in the middle of a frame.
    #[error("stream ended inside a frame: {have} of {need} bytes present")]
    TruncatedFrame {
        /// Bytes of the partial frame that arrived.
        have: u64,
        /// Bytes the frame needs (at least the header when the header itself is incomplete).
        need: u64,
    },
}

impl HdwpError {
    /// The stable code string of this error, e.g. `ERR_HDWP_BAD_MAGIC`.
    pub fn code(&self) -> &'static str {
        match self {
            HdwpError::BadMagic { .. } => "ERR_HDWP_BAD_MAGIC",
            HdwpError::UnsupportedVersion { .. } => "ERR_HDWP_UNSUPPORTED_VERSION",
            HdwpError::UnknownKind { .. } => "ERR_HDWP_UNKNOWN_KIND",
            HdwpError::BadFlags { .. } => "ERR_HDWP_BAD_FLAGS",
            HdwpError::TooLarge { .. } => "ERR_HDWP_TOO_LARGE",
            HdwpError::ChecksumMismatch { .. } => "ERR_HDWP_CHECKSUM_MISMATCH",
            HdwpError::TruncatedField { .. } => "ERR_HDWP_TRUNCATED_FIELD",
            HdwpError::InconsistentLength { .. } => "ERR_HDWP_INCONSISTENT_LENGTH",
            HdwpError::InvalidValue { .. } => "ERR_HDWP_INVALID_VALUE",
            HdwpError::BadUtf8 { .. } => "ERR_HDWP_BAD_UTF8",
            HdwpError::BadJson { .. } => "ERR_HDWP_BAD_JSON",
            HdwpError::TruncatedFrame { .. } => "ERR_HDWP_TRUNCATED_FRAME",
        }
    }

    /// Shorthand for [`HdwpError::InvalidValue`].
    pub(crate) fn invalid(field: &'static str, detail: impl Into<String>) -> Self {
        HdwpError::InvalidValue {
            field,
            detail: detail.into(),
        }
    }

    /// Shorthand for [`HdwpError::InconsistentLength`].
    pub(crate) fn inconsistent(kind: FrameKind, detail: impl Into<String>) -> Self {
        HdwpError::InconsistentLength {
            kind,
            detail: detail.into(),
        }
    }
}
