//! Frame → bytes, and the batched records encoder.

use super::error::HdwpError;
use super::frame::{check_record_size, check_token, Frame, QueryAuth};
use super::frame_results::EOBS_ENTRY_LEN;
use super::header::{frame_checksum, open_frame, seal_frame};
use super::kind::FrameKind;
use super::{
    AUTH_LEN, DIGEST_KIND_BLAKE3, FLAG_AUTH, HEADER_LEN, MAX_DATAGRAM, MAX_PAYLOAD_CEILING,
};
use crate::batch_id::{BatchId, BATCH_ID_LEN};

/// Fixed bytes of a records payload before the records: batch id, record size, count.
pub const RECORDS_FIXED_LEN: usize = BATCH_ID_LEN + 2 + 4;

/// Appends one encoded frame to `out`. The frame is validated first; a payload over
/// `max_payload` fails with [`HdwpError::TooLarge`] and leaves `out` as it was.
pub fn encode_frame(
    frame: &Frame<'_>,
    out: &mut Vec<u8>,
    max_payload: u32,
) -> Result<(), HdwpError> {
    frame.validate()?;
    let auth = frame.auth_block();
    let start = open_frame(
        out,
        frame.kind(),
        if auth.is_some() { FLAG_AUTH } else { 0 },
    );
    if let Some(a) = auth {
        put_auth(out, &a);
    }
    match frame {
        Frame::Hello(f) => {
            out.push(f.version);
            out.push(f.role as u8);
            out.extend_from_slice(&f.record_size.to_be_bytes());
            out.extend_from_slice(f.dataset_id.as_bytes());
        }
        Frame::Records(f) => {
            out.reserve(RECORDS_FIXED_LEN + f.payload.len());
            put_records_head(out, &f.batch_id, f.record_size, f.count);
            out.extend_from_slice(f.payload);
        }
        Frame::Eob(f) => {
            out.extend_from_slice(&f.batch_id.0);
            out.extend_from_slice(&f.record_count.to_be_bytes());
            // validate() bounds the hash to 64 bytes, so the length fits its byte.
            out.push(f.closing_hash.len() as u8);
            out.extend_from_slice(f.closing_hash);
            // validate() allows no digest or exactly BATCH_DIGEST_LEN bytes.
            if !f.digest.is_empty() {
                out.push(DIGEST_KIND_BLAKE3);
                out.extend_from_slice(f.digest);
            }
        }
        Frame::Bbn(f) => {
            out.extend_from_slice(&f.batch_id.0);
            out.extend_from_slice(f.reason.as_bytes());
        }
        Frame::Query(f) => {
            put_auth(out, &f.auth);
            out.extend_from_slice(f.json.as_bytes());
        }
        Frame::Cancel(f) => put_auth(out, &f.auth),
        Frame::Error(f) => {
            out.extend_from_slice(&f.code.to_be_bytes());
            out.extend_from_slice(f.message.as_bytes());
        }
        Frame::Credit(f) => out.extend_from_slice(&f.bytes.to_be_bytes()),
        Frame::Aggregate(f) => {
            out.extend_from_slice(&f.batch_id.0);
            out.extend_from_slice(f.json.as_bytes());
        }
        Frame::Columns(f) => {
            out.reserve(BATCH_ID_LEN + 4 + f.body.len());
            out.extend_from_slice(&f.batch_id.0);
            out.extend_from_slice(&f.rows.to_be_bytes());
            out.extend_from_slice(f.body);
        }
        Frame::Eobs(f) => {
            out.reserve(4 + f.batches.len() * EOBS_ENTRY_LEN);
            // validate() bounds the count to 1..=65535, so it fits the u32.
            out.extend_from_slice(&(f.batches.len() as u32).to_be_bytes());
            for b in &f.batches {
                out.extend_from_slice(&b.batch_id.0);
                out.extend_from_slice(&b.record_count.to_be_bytes());
            }
        }
        Frame::TraceContext(f) => out.extend_from_slice(f.json.as_bytes()),
    }
    seal_frame(out, start, max_payload)
}

/// How many records of `record_size` bytes fit in one records frame of at most `max_frame_len`
/// bytes (header included). Fails with [`HdwpError::TooLarge`] when not even one fits.
pub fn records_per_frame(
    record_size: u16,
    max_frame_len: usize,
    with_auth: bool,
) -> Result<u32, HdwpError> {
    check_record_size(record_size)?;
    let overhead = HEADER_LEN + if with_auth { AUTH_LEN } else { 0 } + RECORDS_FIXED_LEN;
    let max_frame_len = max_frame_len.min(HEADER_LEN + MAX_PAYLOAD_CEILING as usize);
    let room = max_frame_len.saturating_sub(overhead);
    let n = room / record_size as usize;
    if n == 0 {
        return Err(HdwpError::TooLarge {
            what: "records frame with one record",
            len: (overhead + record_size as usize) as u64,
            max: max_frame_len as u64,
        });
    }
    Ok(n.min(u32::MAX as usize) as u32)
}

/// Appends the records in `records` (whole records of `record_size` bytes) as records frames of
/// at most `max_frame_len` bytes each, headers included, packing as many whole records into each
/// frame as fit; records are never split across frames. Returns the number of frames written;
/// no records means no frames. On error `out` is left as it was.
///
/// For TCP streams pass `HEADER_LEN + DEFAULT_MAX_PAYLOAD`; for datagrams pass the MTU
/// (`MTU_STANDARD` or `MTU_JUMBO`), then each frame is one datagram.
pub fn encode_records(
    out: &mut Vec<u8>,
    auth: Option<QueryAuth>,
    batch_id: &BatchId,
    record_size: u16,
    records: &[u8],
    max_frame_len: usize,
) -> Result<usize, HdwpError> {
    let plan = RecordsPlan::new(auth, record_size, records.len(), max_frame_len)?;
    let start = out.len();
    out.resize(start + plan.encoded_len, 0);
    plan.encode_into(&mut out[start..], batch_id, records)?;
    Ok(plan.frames)
}

/// The frame layout of one batched records encode, computed before any byte is written so a
/// caller can allocate the exact output (the Node bridge writes straight into a JS Buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordsPlan {
    /// Frames the records need.
    pub frames: usize,
    /// Total encoded bytes, headers included.
    pub encoded_len: usize,
    records_len: usize,
    chunk_bytes: usize,
    auth: Option<QueryAuth>,
    record_size: u16,
}

impl RecordsPlan {
    /// Plans `records_len` bytes of `record_size`-byte records in frames of at most
    /// `max_frame_len` bytes. Fails on partial records, record size 0, a zero token, or a frame
    /// limit too small for one record.
    pub fn new(
        auth: Option<QueryAuth>,
        record_size: u16,
        records_len: usize,
        max_frame_len: usize,
    ) -> Result<Self, HdwpError> {
        check_record_size(record_size)?;
        if !records_len.is_multiple_of(record_size as usize) {
            return Err(HdwpError::inconsistent(
                FrameKind::Records,
                format!("{records_len} bytes are not whole records of {record_size} bytes"),
            ));
        }
        if let Some(a) = &auth {
            check_token(a)?;
        }
        let per = records_per_frame(record_size, max_frame_len, auth.is_some())? as usize;
        let chunk_bytes = per * record_size as usize;
        let frames = records_len.div_ceil(chunk_bytes);
        let overhead = HEADER_LEN + if auth.is_some() { AUTH_LEN } else { 0 } + RECORDS_FIXED_LEN;
        let encoded_len = records_len + frames * overhead;
        Ok(RecordsPlan {
            frames,
            encoded_len,
            records_len,
            chunk_bytes,
            auth,
            record_size,
        })
    }

    /// Writes the frames into `out`, which must be exactly `encoded_len` bytes, from `records`,
    /// which must be the planned length.
    pub fn encode_into(
        &self,
        out: &mut [u8],
        batch_id: &BatchId,
        records: &[u8],
    ) -> Result<(), HdwpError> {
        if out.len() != self.encoded_len || records.len() != self.records_len {
            return Err(HdwpError::inconsistent(
                FrameKind::Records,
                format!(
                    "planned {} record bytes into {} output bytes, given {} into {}",
                    self.records_len,
                    self.encoded_len,
                    records.len(),
                    out.len()
                ),
            ));
        }
        let flags = if self.auth.is_some() { FLAG_AUTH } else { 0 };
        let mut frame_start = 0;
        for chunk in records.chunks(self.chunk_bytes) {
            // A small Vec for the fixed part keeps the layout code shared with encode_frame.
            let mut head = Vec::with_capacity(HEADER_LEN + AUTH_LEN + RECORDS_FIXED_LEN);
            open_frame(&mut head, FrameKind::Records, flags);
            if let Some(a) = &self.auth {
                put_auth(&mut head, a);
            }
            let count = (chunk.len() / self.record_size as usize) as u32;
            put_records_head(&mut head, batch_id, self.record_size, count);
            let payload_len = (head.len() - HEADER_LEN + chunk.len()) as u32;
            head[8..12].copy_from_slice(&payload_len.to_be_bytes());
            let frame = &mut out[frame_start..frame_start + head.len() + chunk.len()];
            frame[..head.len()].copy_from_slice(&head);
            frame[head.len()..].copy_from_slice(chunk);
            let crc = frame_checksum(&frame[..12], &frame[HEADER_LEN..]);
            frame[12..16].copy_from_slice(&crc.to_be_bytes());
            frame_start += frame.len();
        }
        Ok(())
    }
}

/// [`encode_records`] for a datagram transport: every frame fits in `mtu` bytes.
pub fn encode_records_for_mtu(
    out: &mut Vec<u8>,
    auth: Option<QueryAuth>,
    batch_id: &BatchId,
    record_size: u16,
    records: &[u8],
    mtu: usize,
) -> Result<usize, HdwpError> {
    check_mtu(mtu)?;
    encode_records(out, auth, batch_id, record_size, records, mtu)
}

/// [`encode_records_for_mtu`] as one buffer per datagram: the frames a datagram transport sends,
/// each at most `mtu` bytes.
pub fn encode_datagrams(
    auth: Option<QueryAuth>,
    batch_id: &BatchId,
    record_size: u16,
    records: &[u8],
    mtu: usize,
) -> Result<Vec<Vec<u8>>, HdwpError> {
    let mut all = Vec::new();
    encode_records_for_mtu(&mut all, auth, batch_id, record_size, records, mtu)?;
    let mut out = Vec::new();
    let mut at = 0;
    // Our own frames: each header's payload length (bytes 8..12) says where the next one starts.
    while at + HEADER_LEN <= all.len() {
        let len = HEADER_LEN
            + u32::from_be_bytes([all[at + 8], all[at + 9], all[at + 10], all[at + 11]]) as usize;
        out.push(all[at..at + len].to_vec());
        at += len;
    }
    Ok(out)
}

fn put_auth(out: &mut Vec<u8>, a: &QueryAuth) {
    out.extend_from_slice(&a.query_id.to_be_bytes());
    out.extend_from_slice(&a.token);
}

fn put_records_head(out: &mut Vec<u8>, batch_id: &BatchId, record_size: u16, count: u32) {
    out.extend_from_slice(&batch_id.0);
    out.extend_from_slice(&record_size.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
}

/// A datagram MTU must hold at least a header and at most the largest UDP payload over IPv4.
pub fn check_mtu(mtu: usize) -> Result<(), HdwpError> {
    if !(HEADER_LEN..=MAX_DATAGRAM).contains(&mtu) {
        return Err(HdwpError::invalid(
            "mtu",
            format!("must be {HEADER_LEN}..={MAX_DATAGRAM}, got {mtu}"),
        ));
    }
    Ok(())
}
