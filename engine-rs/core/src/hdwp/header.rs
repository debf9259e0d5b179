//! The 16-byte frame header and the frame checksum.
//!
//! | offset | size | field                                              |
//! |--------|------|----------------------------------------------------|
//! | 0      | 4    | magic "HDWP"                                       |
//! | 4      | 1    | version (1)                                        |
//! | 5      | 1    | kind                                               |
//! | 6      | 2    | flags (bit 0: query authentication block present)  |
//! | 8      | 4    | payload length                                     |
//! | 12     | 4    | CRC-32C of header bytes 0..12 followed by payload  |

use super::error::HdwpError;
use super::kind::FrameKind;
use super::{FLAG_AUTH, HEADER_LEN, KNOWN_FLAGS, MAGIC, VERSION};

/// A validated frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The frame kind.
    pub kind: FrameKind,
    /// The flags word (only known bits allowed for the kind are ever set here).
    pub flags: u16,
    /// Payload bytes following the header.
    pub payload_len: u32,
    /// The CRC-32C carried in the header.
    pub checksum: u32,
}

impl Header {
    /// Whether the payload opens with a query authentication block.
    pub fn has_auth(&self) -> bool {
        self.flags & FLAG_AUTH != 0
    }

    /// Total frame length: header plus payload.
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + self.payload_len as usize
    }
}

/// Validates as much of a header as `buf` holds, field by field in wire order, and returns the
/// header once all 16 bytes are present.
///
/// Checking each field as soon as its bytes arrive rejects garbage early, and because fields are
/// checked in the order they arrive, the same bytes give the same error however they are split.
pub fn check_header(buf: &[u8], max_payload: u32) -> Result<Option<Header>, HdwpError> {
    let magic_len = buf.len().min(MAGIC.len());
    if buf[..magic_len] != MAGIC[..magic_len] {
        return Err(HdwpError::BadMagic {
            found: buf[..magic_len].to_vec(),
        });
    }
    if let Some(&version) = buf.get(4) {
        if version != VERSION {
            return Err(HdwpError::UnsupportedVersion { version });
        }
    }
    let kind = match buf.get(5) {
        None => return Ok(None),
        Some(&b) => FrameKind::from_u8(b).ok_or(HdwpError::UnknownKind { kind: b })?,
    };
    let flags = match buf.get(6..8) {
        None => return Ok(None),
        Some(b) => u16::from_be_bytes([b[0], b[1]]),
    };
    if flags & !KNOWN_FLAGS != 0 || (flags & FLAG_AUTH != 0 && !kind.allows_auth()) {
        return Err(HdwpError::BadFlags { kind, flags });
    }
    let payload_len = match buf.get(8..12) {
        None => return Ok(None),
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
    };
    if payload_len > max_payload {
        return Err(HdwpError::TooLarge {
            what: "frame payload",
            len: payload_len as u64,
            max: max_payload as u64,
        });
    }
    let checksum = match buf.get(12..16) {
        None => return Ok(None),
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
    };
    Ok(Some(Header {
        kind,
        flags,
        payload_len,
        checksum,
    }))
}

/// CRC-32C (Castagnoli) of a frame: header bytes 0..12, then the payload. Hardware-accelerated
/// (SSE4.2 `crc32` on x86-64, the CRC extension on ARMv8) with a table fallback.
pub fn frame_checksum(header12: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(header12), payload)
}

/// Appends a header with a zero checksum and the given payload length placeholder; returns the
/// frame's start offset in `out`. [`seal_frame`] fills length and checksum once the payload is written.
pub(crate) fn open_frame(out: &mut Vec<u8>, kind: FrameKind, flags: u16) -> usize {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind as u8);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0u8; 8]);
    start
}

/// Fills in the payload length and checksum of the frame opened at `start`, or rolls the frame
/// back and fails when the payload exceeds `max_payload`.
pub(crate) fn seal_frame(
    out: &mut Vec<u8>,
    start: usize,
    max_payload: u32,
) -> Result<(), HdwpError> {
    let payload_len = out.len() - start - HEADER_LEN;
    if payload_len > max_payload as usize {
        out.truncate(start);
        return Err(HdwpError::TooLarge {
            what: "frame payload",
            len: payload_len as u64,
            max: max_payload as u64,
        });
    }
    out[start + 8..start + 12].copy_from_slice(&(payload_len as u32).to_be_bytes());
    let crc = frame_checksum(&out[start..start + 12], &out[start + HEADER_LEN..]);
    out[start + 12..start + 16].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}
