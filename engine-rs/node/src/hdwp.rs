//! HDWP exports: a stateless scanner that decodes every whole frame of a buffer in one call, and
//! ([`encode`]) one encoder per frame kind plus the batched records encoder.
//!
//! The scanner returns numbers, not objects: per frame a fixed run of [`SLOTS`] doubles holding
//! the kind, numeric fields and byte offsets into the scanned buffer, so TypeScript builds frames
//! with `subarray` views and no record bytes are copied. The slot layout is documented on
//! `hdwpScan` in `engine-rs/native.ts`; keep the two in step.

use hd_engine_core::batch_id::BATCH_ID_LEN;
use hd_engine_core::hdwp::{
    decode_frame, peek_frame, Frame, HdwpError, Peek, AUTH_LEN, HEADER_LEN, MAX_PAYLOAD_CEILING,
};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::throw_coded;

mod encode;

/// Doubles per frame in the scan descriptor.
const SLOTS: usize = 10;

fn throw_hdwp<'cx, T>(cx: &mut FunctionContext<'cx>, e: &HdwpError) -> NeonResult<T> {
    throw_coded(cx, e.code(), &e.to_string())
}

fn invalid<'cx, T>(cx: &mut FunctionContext<'cx>, field: &str, detail: &str) -> NeonResult<T> {
    throw_coded(
        cx,
        "ERR_HDWP_INVALID_VALUE",
        &format!("invalid {field}: {detail}"),
    )
}

/// A JS number that must be an integer in `0..=max`.
fn int<'cx>(cx: &mut FunctionContext<'cx>, v: f64, max: u64, field: &str) -> NeonResult<u64> {
    if v.fract() != 0.0 || v < 0.0 || v > max as f64 {
        return invalid(cx, field, &format!("must be an integer 0..={max}, got {v}"));
    }
    Ok(v as u64)
}

/// Offset of `part` inside `whole`; `part` is always a subslice of the scanned buffer.
fn offset_in(whole: &[u8], part: &[u8]) -> f64 {
    (part.as_ptr() as usize - whole.as_ptr() as usize) as f64
}

/// Appends one frame's descriptor: kind, start, end, query id, token offset, then five
/// kind-specific slots (see `hdwpScan` in native.ts).
fn describe(buf: &[u8], start: usize, len: usize, f: &Frame<'_>, out: &mut Vec<f64>) {
    let body = start
        + HEADER_LEN
        + if f.auth_block().is_some() {
            AUTH_LEN
        } else {
            0
        };
    let (qid, tok) = match (f, f.auth_block()) {
        (Frame::Query(q), _) => (q.auth.query_id as f64, (start + HEADER_LEN + 4) as f64),
        (Frame::Cancel(c), _) => (c.auth.query_id as f64, (start + HEADER_LEN + 4) as f64),
        (_, Some(a)) => (a.query_id as f64, (start + HEADER_LEN + 4) as f64),
        (_, None) => (-1.0, -1.0),
    };
    let rest: [f64; 5] = match f {
        Frame::Hello(h) => {
            let d = offset_in(buf, h.dataset_id.as_bytes());
            [
                d,
                d + h.dataset_id.len() as f64,
                h.version as f64,
                h.role as u8 as f64,
                h.record_size as f64,
            ]
        }
        Frame::Records(r) => {
            let p = offset_in(buf, r.payload);
            [
                body as f64,
                r.record_size as f64,
                r.count as f64,
                p,
                p + r.payload.len() as f64,
            ]
        }
        Frame::Eob(e) => {
            let h = body + BATCH_ID_LEN + 9;
            [
                body as f64,
                e.record_count as f64,
                h as f64,
                (h + e.closing_hash.len()) as f64,
                // The digest, when present, follows its kind byte right after the closing hash.
                if e.digest.is_empty() { 0.0 } else { 1.0 },
            ]
        }
        Frame::Bbn(b) => {
            let r = offset_in(buf, b.reason.as_bytes());
            [body as f64, r, r + b.reason.len() as f64, 0.0, 0.0]
        }
        Frame::Query(q) => {
            let j = offset_in(buf, q.json.as_bytes());
            [j, j + q.json.len() as f64, 0.0, 0.0, 0.0]
        }
        Frame::Cancel(_) => [0.0; 5],
        Frame::Error(e) => {
            let m = offset_in(buf, e.message.as_bytes());
            [e.code as f64, m, m + e.message.len() as f64, 0.0, 0.0]
        }
        Frame::Credit(c) => [c.bytes as f64, 0.0, 0.0, 0.0, 0.0],
        Frame::Aggregate(g) => {
            let j = offset_in(buf, g.json.as_bytes());
            [body as f64, j, j + g.json.len() as f64, 0.0, 0.0]
        }
        Frame::Columns(c) => {
            let p = offset_in(buf, c.body);
            [body as f64, c.rows as f64, p, p + c.body.len() as f64, 0.0]
        }
        // The entries (64-byte batch id, u64 big-endian record count each) follow the u32 count;
        // TypeScript reads them from the buffer, so a 65535-entry frame costs no slots here.
        Frame::Eobs(e) => [(body + 4) as f64, e.batches.len() as f64, 0.0, 0.0, 0.0],
        Frame::TraceContext(t) => {
            let j = offset_in(buf, t.json.as_bytes());
            [j, j + t.json.len() as f64, 0.0, 0.0, 0.0]
        }
    };
    out.extend_from_slice(&[
        f.kind() as u8 as f64,
        start as f64,
        (start + len) as f64,
        qid,
        tok,
    ]);
    out.extend_from_slice(&rest);
}

/// Decodes every whole frame at the start of `buf`. Returns `{ frames, consumed, need, code,
/// message }`: `frames` the descriptors, `consumed` the bytes they occupy, `need` the total bytes
/// the next (incomplete) frame requires, and `code`/`message` the error of a bad frame at
/// `consumed` (null when none). Frames before a bad one are always returned.
#[neon::export(name = "hdwpScan")]
fn hdwp_scan<'cx>(
    cx: &mut FunctionContext<'cx>,
    buf: Handle<'cx, JsTypedArray<u8>>,
    max_payload: f64,
) -> JsResult<'cx, JsObject> {
    let max_payload = int(cx, max_payload, MAX_PAYLOAD_CEILING as u64, "max payload")? as u32;
    let (desc, consumed, need, error) = {
        let data = buf.as_slice(cx);
        let (mut desc, mut pos, mut need, mut error) = (Vec::new(), 0usize, HEADER_LEN, None);
        loop {
            let rest = &data[pos..];
            if rest.is_empty() {
                break;
            }
            match decode_frame(rest, max_payload) {
                Ok(Some((f, n))) => {
                    describe(data, pos, n, &f, &mut desc);
                    pos += n;
                }
                Ok(None) => {
                    need = match peek_frame(rest, max_payload) {
                        Ok(Peek::Need(n)) => n,
                        _ => HEADER_LEN,
                    };
                    break;
                }
                Err(e) => {
                    error = Some((e.code(), e.to_string()));
                    break;
                }
            }
        }
        debug_assert_eq!(desc.len() % SLOTS, 0);
        (desc, pos, need, error)
    };
    let obj = cx.empty_object();
    let frames = JsFloat64Array::from_slice(cx, &desc)?;
    obj.set(cx, "frames", frames)?;
    let consumed = cx.number(consumed as f64);
    obj.set(cx, "consumed", consumed)?;
    let need = cx.number(need as f64);
    obj.set(cx, "need", need)?;
    let (code, message): (Handle<JsValue>, Handle<JsValue>) = match error {
        Some((c, m)) => (cx.string(c).upcast(), cx.string(m).upcast()),
        None => (cx.null().upcast(), cx.null().upcast()),
    };
    obj.set(cx, "code", code)?;
    obj.set(cx, "message", message)?;
    Ok(obj)
}
