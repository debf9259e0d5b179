//! Bytes → frame. Never trusts a length, never panics: every read is bounds-checked and every
//! malformation is an [`HdwpError`].

use super::encode::check_mtu;
use super::error::HdwpError;
use super::frame::{
    AggregatePartial, BadBatch, BatchEnd, Cancel, ColumnsFrame, Credit, EndOfBatch, EndOfBatches,
    ErrorFrame, Frame, Hello, Query, QueryAuth, Records, TraceContextFrame,
};
use super::frame_results::{check_batch_count, EOBS_ENTRY_LEN};
use super::header::{check_header, frame_checksum, Header};
use super::kind::{FrameKind, Role};
use super::{
    BATCH_DIGEST_LEN, DIGEST_KIND_BLAKE3, HEADER_LEN, MAX_DATASET_ID_LEN, MAX_JSON_LEN,
    MAX_TEXT_LEN, TOKEN_LEN,
};
use crate::batch_id::{BatchId, BATCH_ID_LEN};

/// What the bytes at the start of a buffer hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peek {
    /// No whole frame yet: the frame needs this many bytes in total (the header length while the
    /// header itself is incomplete). Everything present so far is valid.
    Need(usize),
    /// A whole frame of this many bytes (header included) is present; its header is valid.
    Whole(usize),
}

/// Checks the header at the start of `buf` (as far as it is present) and says whether a whole
/// frame is there. A payload length over `max_payload` fails here, before any payload is awaited.
pub fn peek_frame(buf: &[u8], max_payload: u32) -> Result<Peek, HdwpError> {
    match check_header(buf, max_payload)? {
        None => Ok(Peek::Need(HEADER_LEN)),
        Some(h) if buf.len() < h.frame_len() => Ok(Peek::Need(h.frame_len())),
        Some(h) => Ok(Peek::Whole(h.frame_len())),
    }
}

/// Decodes the frame at the start of `buf`: `Ok(None)` while it is incomplete, otherwise the
/// frame and the number of bytes it occupies.
pub fn decode_frame(buf: &[u8], max_payload: u32) -> Result<Option<(Frame<'_>, usize)>, HdwpError> {
    match check_header(buf, max_payload)? {
        Some(h) if buf.len() >= h.frame_len() => {
            let n = h.frame_len();
            Ok(Some((parse_frame(&buf[..n], &h)?, n)))
        }
        _ => Ok(None),
    }
}

/// Decodes one datagram: exactly one whole frame of at most `mtu` bytes, nothing after it.
pub fn decode_datagram(datagram: &[u8], mtu: usize) -> Result<Frame<'_>, HdwpError> {
    check_mtu(mtu)?;
    let max_payload = (mtu - HEADER_LEN) as u32;
    match check_header(datagram, max_payload)? {
        None => Err(HdwpError::TruncatedFrame {
            have: datagram.len() as u64,
            need: HEADER_LEN as u64,
        }),
        Some(h) if datagram.len() < h.frame_len() => Err(HdwpError::TruncatedFrame {
            have: datagram.len() as u64,
            need: h.frame_len() as u64,
        }),
        Some(h) if datagram.len() > h.frame_len() => Err(HdwpError::inconsistent(
            h.kind,
            format!(
                "datagram of {} bytes holds a frame of {} and trailing bytes",
                datagram.len(),
                h.frame_len()
            ),
        )),
        Some(h) => parse_frame(datagram, &h),
    }
}

/// Verifies the checksum of a whole frame (`frame.len() == header.frame_len()`) and decodes
/// its payload.
pub(crate) fn parse_frame<'a>(frame: &'a [u8], h: &Header) -> Result<Frame<'a>, HdwpError> {
    let actual = frame_checksum(&frame[..12], &frame[HEADER_LEN..]);
    if actual != h.checksum {
        return Err(HdwpError::ChecksumMismatch {
            expected: h.checksum,
            actual,
        });
    }
    let mut r = Reader {
        buf: &frame[HEADER_LEN..],
        pos: 0,
        kind: h.kind,
    };
    let auth = if h.has_auth() { Some(r.auth()?) } else { None };
    let f = match h.kind {
        FrameKind::Hello => {
            let version = r.u8("version")?;
            let role_byte = r.u8("role")?;
            let role = Role::from_u8(role_byte).ok_or_else(|| {
                HdwpError::invalid("role", format!("0x{role_byte:02x} names no role"))
            })?;
            let record_size = r.u16("record size")?;
            let dataset_id = r.rest_str("dataset id", MAX_DATASET_ID_LEN)?;
            Frame::Hello(Hello {
                auth,
                version,
                role,
                record_size,
                dataset_id,
            })
        }
        FrameKind::Records => {
            let batch_id = r.batch_id()?;
            let record_size = r.u16("record size")?;
            let count = r.u32("record count")?;
            Frame::Records(Records {
                auth,
                batch_id,
                record_size,
                count,
                payload: r.rest(),
            })
        }
        FrameKind::Eob => {
            let batch_id = r.batch_id()?;
            let record_count = r.u64("record count")?;
            let hash_len = r.u8("closing hash length")?;
            let closing_hash = r.bytes(hash_len as usize, "closing hash")?;
            // Optional since the field was added: an eob may end after its closing hash.
            let digest = if r.at_end() {
                &[][..]
            } else {
                let kind = r.u8("digest kind")?;
                if kind != DIGEST_KIND_BLAKE3 {
                    return Err(HdwpError::invalid(
                        "digest kind",
                        format!("0x{kind:02x} names no digest (1: BLAKE3-256)"),
                    ));
                }
                r.bytes(BATCH_DIGEST_LEN, "batch digest")?
            };
            r.end()?;
            Frame::Eob(EndOfBatch {
                auth,
                batch_id,
                record_count,
                closing_hash,
                digest,
            })
        }
        FrameKind::Bbn => {
            let batch_id = r.batch_id()?;
            Frame::Bbn(BadBatch {
                auth,
                batch_id,
                reason: r.rest_str("bad batch reason", MAX_TEXT_LEN)?,
            })
        }
        FrameKind::Query => {
            let auth = r.auth()?;
            Frame::Query(Query {
                auth,
                json: r.rest_str("query JSON", MAX_JSON_LEN)?,
            })
        }
        FrameKind::Cancel => {
            let auth = r.auth()?;
            r.end()?;
            Frame::Cancel(Cancel { auth })
        }
        FrameKind::Error => {
            let code = r.u16("error code")?;
            Frame::Error(ErrorFrame {
                auth,
                code,
                message: r.rest_str("error message", MAX_TEXT_LEN)?,
            })
        }
        FrameKind::Credit => {
            let bytes = r.u64("credit")?;
            r.end()?;
            Frame::Credit(Credit { auth, bytes })
        }
        FrameKind::Aggregate => {
            let batch_id = r.batch_id()?;
            Frame::Aggregate(AggregatePartial {
                auth,
                batch_id,
                json: r.rest_str("aggregate JSON", usize::MAX)?,
            })
        }
        FrameKind::Columns => {
            let batch_id = r.batch_id()?;
            let rows = r.u32("row count")?;
            Frame::Columns(ColumnsFrame {
                auth,
                batch_id,
                rows,
                body: r.rest(),
            })
        }
        FrameKind::Eobs => {
            let count = r.u32("batch count")?;
            // The count is checked before the entries' length, so it bounds the allocation below.
            check_batch_count(count as u64)?;
            let want = count as usize * EOBS_ENTRY_LEN;
            if r.remaining() != want {
                return Err(HdwpError::inconsistent(
                    FrameKind::Eobs,
                    format!(
                        "{} entry bytes, but count {count} x {EOBS_ENTRY_LEN} = {want}",
                        r.remaining()
                    ),
                ));
            }
            let mut batches = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let batch_id = r.batch_id()?;
                let record_count = r.u64("record count")?;
                batches.push(BatchEnd {
                    batch_id,
                    record_count,
                });
            }
            Frame::Eobs(EndOfBatches { auth, batches })
        }
        FrameKind::TraceContext => Frame::TraceContext(TraceContextFrame {
            auth,
            json: r.rest_str("trace context JSON", usize::MAX)?,
        }),
    };
    f.validate()?;
    Ok(f)
}

/// A bounds-checked cursor over one payload.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    kind: FrameKind,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], HdwpError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(HdwpError::TruncatedField {
                kind: self.kind,
                field,
            }),
        }
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], HdwpError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N, field)?);
        Ok(a)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, HdwpError> {
        Ok(self.array::<1>(field)?[0])
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, HdwpError> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, HdwpError> {
        Ok(u32::from_be_bytes(self.array(field)?))
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, HdwpError> {
        Ok(u64::from_be_bytes(self.array(field)?))
    }

    fn batch_id(&mut self) -> Result<BatchId, HdwpError> {
        Ok(BatchId(self.array::<BATCH_ID_LEN>("batch id")?))
    }

    fn auth(&mut self) -> Result<QueryAuth, HdwpError> {
        let query_id = self.u32("query id")?;
        let token = self.array::<TOKEN_LEN>("token")?;
        Ok(QueryAuth { query_id, token })
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos.min(self.buf.len())..];
        self.pos = self.buf.len();
        s
    }

    /// The rest of the payload as text, length-checked before the UTF-8 scan so an oversized
    /// field costs nothing to reject.
    fn rest_str(&mut self, field: &'static str, max: usize) -> Result<&'a str, HdwpError> {
        let b = self.rest();
        if b.len() > max {
            return Err(HdwpError::TooLarge {
                what: field,
                len: b.len() as u64,
                max: max as u64,
            });
        }
        std::str::from_utf8(b).map_err(|e| HdwpError::BadUtf8 {
            field,
            valid_up_to: e.valid_up_to(),
        })
    }

    /// Fixed-size payloads end exactly after their last field.
    fn end(&self) -> Result<(), HdwpError> {
        if self.pos != self.buf.len() {
            return Err(HdwpError::inconsistent(
                self.kind,
                format!(
                    "{} trailing bytes after the last field",
                    self.buf.len() - self.pos
                ),
            ));
        }
        Ok(())
    }
}
