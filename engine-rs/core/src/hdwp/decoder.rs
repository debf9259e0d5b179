//! [`FrameDecoder`]: a cursor over a byte stream that arrives in arbitrary chunks.

use super::decode::parse_frame;
use super::error::HdwpError;
use super::frame::Frame;
use super::header::check_header;
use super::{DEFAULT_MAX_PAYLOAD, HEADER_LEN, MAX_PAYLOAD_CEILING};

/// Streaming HDWP decoder: [`push`](FrameDecoder::push) chunks as they arrive, then take whole
/// frames with [`next_frame`](FrameDecoder::next_frame) until it returns `Ok(None)`.
///
/// A malformed frame is an error that sticks: the cursor stays at the bad frame, so every later
/// call reports the same error and nothing after it is ever decoded (the stream is closed).
/// Frames taken before the bad one are unaffected. [`position`](FrameDecoder::position) is then
/// the stream offset of the bad frame.
///
/// ```
/// use hd_engine_core::hdwp::{encode_frame, Frame, FrameDecoder, Credit, DEFAULT_MAX_PAYLOAD};
/// let mut bytes = Vec::new();
/// encode_frame(&Frame::Credit(Credit { auth: None, bytes: 4096 }), &mut bytes, DEFAULT_MAX_PAYLOAD).unwrap();
/// let mut d = FrameDecoder::new();
/// d.push(&bytes[..5]);
/// assert!(d.next_frame().unwrap().is_none());
/// d.push(&bytes[5..]);
/// assert_eq!(d.next_frame().unwrap(), Some(Frame::Credit(Credit { auth: None, bytes: 4096 })));
/// ```
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Start of the next undecoded frame in `buf`.
    start: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    max_payload: u32,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    /// A decoder with the default payload limit of 16 MiB.
    pub fn new() -> Self {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            base: 0,
            max_payload: DEFAULT_MAX_PAYLOAD,
        }
    }

    /// A decoder that rejects payloads over `max_payload` bytes (1..=1 GiB).
    pub fn with_max_payload(max_payload: u32) -> Result<Self, HdwpError> {
        if max_payload == 0 || max_payload > MAX_PAYLOAD_CEILING {
            return Err(HdwpError::invalid(
                "max payload",
                format!("must be 1..={MAX_PAYLOAD_CEILING}, got {max_payload}"),
            ));
        }
        Ok(FrameDecoder {
            max_payload,
            ..Self::new()
        })
    }

    /// The payload limit in force.
    pub fn max_payload(&self) -> u32 {
        self.max_payload
    }

    /// Appends a chunk of the stream. Bytes of frames already taken are dropped first, so the
    /// buffer holds at most one partial frame plus the new chunk.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.base += self.start as u64;
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame, `Ok(None)` when more bytes are needed, or the error of a bad frame.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, HdwpError> {
        let begin = self.start;
        let rest = &self.buf[begin..];
        let header = match check_header(rest, self.max_payload)? {
            Some(h) if rest.len() >= h.frame_len() => h,
            _ => return Ok(None),
        };
        let n = header.frame_len();
        // On error the cursor stays put: the same bytes give the same error on every later call.
        let frame = parse_frame(&rest[..n], &header)?;
        self.start = begin + n;
        Ok(Some(frame))
    }

    /// Stream offset of the next frame to decode (of the bad frame, after an error).
    pub fn position(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Bytes received but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Declares the end of the stream: fails with [`HdwpError::TruncatedFrame`] when a partial
    /// frame is left, or with the stream's error if it holds a bad frame.
    pub fn finish(&self) -> Result<(), HdwpError> {
        let rest = &self.buf[self.start..];
        if rest.is_empty() {
            return Ok(());
        }
        match check_header(rest, self.max_payload)? {
            // A whole frame still buffered is reported only if it is bad; an untaken good frame
            // is the caller's business, not truncation.
            Some(h) if rest.len() >= h.frame_len() => {
                parse_frame(&rest[..h.frame_len()], &h).map(|_| ())
            }
            Some(h) => Err(HdwpError::TruncatedFrame {
                have: rest.len() as u64,
                need: h.frame_len() as u64,
            }),
            None => Err(HdwpError::TruncatedFrame {
                have: rest.len() as u64,
                need: HEADER_LEN as u64,
            }),
        }
    }
}
