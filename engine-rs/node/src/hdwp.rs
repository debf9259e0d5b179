//! HDWP exports: a stateless scanner that decodes every whole frame of a buffer in one call, and
//! one encoder per frame kind plus the batched records encoder.
//!
//! The scanner returns numbers, not objects: per frame a fixed run of [`SLOTS`] doubles holding
//! the kind, numeric fields and byte offsets into the scanned buffer, so TypeScript builds frames
//! with `subarray` views and no record bytes are copied. The slot layout is documented on
//! `hdwpScan` in `engine-rs/native.ts`; keep the two in step.

use hd_engine_core::batch_id::{BatchId, BATCH_ID_LEN};
use hd_engine_core::hdwp::{
    check_mtu, decode_frame, encode_frame, peek_frame, AggregatePartial, BadBatch, Cancel,
    ColumnsFrame, Credit, EndOfBatch, ErrorFrame, Frame, HdwpError, Hello, Peek, Query, QueryAuth,
    Records, RecordsPlan, Role, AUTH_LEN, HEADER_LEN, MAX_PAYLOAD_CEILING, TOKEN_LEN,
};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::throw_coded;

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

fn batch_id<'cx>(cx: &mut FunctionContext<'cx>, bytes: &[u8]) -> NeonResult<BatchId> {
    match <[u8; BATCH_ID_LEN]>::try_from(bytes) {
        Ok(a) => Ok(BatchId(a)),
        Err(_) => invalid(
            cx,
            "batch id",
            &format!("must be {BATCH_ID_LEN} bytes, got {}", bytes.len()),
        ),
    }
}

/// Query id + token from JS; a null token means "no query block".
fn auth<'cx>(
    cx: &mut FunctionContext<'cx>,
    query_id: f64,
    token: Option<&[u8]>,
) -> NeonResult<Option<QueryAuth>> {
    let Some(token) = token else { return Ok(None) };
    let query_id = int(cx, query_id, u32::MAX as u64, "query id")? as u32;
    match <[u8; TOKEN_LEN]>::try_from(token) {
        Ok(token) => Ok(Some(QueryAuth { query_id, token })),
        Err(_) => invalid(
            cx,
            "token",
            &format!("must be {TOKEN_LEN} bytes, got {}", token.len()),
        ),
    }
}

fn required_auth<'cx>(
    cx: &mut FunctionContext<'cx>,
    query_id: f64,
    token: &[u8],
) -> NeonResult<QueryAuth> {
    match auth(cx, query_id, Some(token))? {
        Some(a) => Ok(a),
        None => invalid(cx, "token", "missing"),
    }
}

fn record_size<'cx>(cx: &mut FunctionContext<'cx>, v: f64) -> NeonResult<u16> {
    Ok(int(cx, v, u16::MAX as u64, "record size")? as u16)
}

/// Encodes one small frame into a fresh Buffer.
fn emit<'cx>(cx: &mut FunctionContext<'cx>, frame: &Frame<'_>) -> JsResult<'cx, JsBuffer> {
    let mut out = Vec::new();
    match encode_frame(frame, &mut out, MAX_PAYLOAD_CEILING) {
        Ok(()) => JsBuffer::from_slice(cx, &out),
        Err(e) => throw_hdwp(cx, &e),
    }
}

/// [`emit`] for a frame that borrows a JS typed array's bytes: `frame` builds it from the borrowed
/// slice, which must be released before the Buffer is allocated.
fn emit_borrowing<'cx>(
    cx: &mut FunctionContext<'cx>,
    bytes: Handle<'cx, JsTypedArray<u8>>,
    frame: impl for<'a> FnOnce(&'a [u8]) -> Frame<'a>,
) -> JsResult<'cx, JsBuffer> {
    let mut out = Vec::new();
    let res = encode_frame(&frame(bytes.as_slice(cx)), &mut out, MAX_PAYLOAD_CEILING);
    match res {
        Ok(()) => JsBuffer::from_slice(cx, &out),
        Err(e) => throw_hdwp(cx, &e),
    }
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

#[neon::export(name = "hdwpEncodeHello")]
fn hdwp_encode_hello<'cx>(
    cx: &mut FunctionContext<'cx>,
    version: f64,
    role: f64,
    rs: f64,
    dataset_id: String,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let version = int(cx, version, u8::MAX as u64, "version")? as u8;
    let role = match Role::from_u8(int(cx, role, u8::MAX as u64, "role")? as u8) {
        Some(r) => r,
        None => return invalid(cx, "role", "names no role"),
    };
    let record_size = record_size(cx, rs)?;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(
        cx,
        &Frame::Hello(Hello {
            auth,
            version,
            role,
            record_size,
            dataset_id: &dataset_id,
        }),
    )
}

/// One records frame from exactly `count` records.
#[neon::export(name = "hdwpEncodeRecordsFrame")]
fn hdwp_encode_records_frame<'cx>(
    cx: &mut FunctionContext<'cx>,
    id: Vec<u8>,
    rs: f64,
    count: f64,
    payload: Handle<'cx, JsTypedArray<u8>>,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let batch_id = batch_id(cx, &id)?;
    let record_size = record_size(cx, rs)?;
    let count = int(cx, count, u32::MAX as u64, "record count")? as u32;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit_borrowing(cx, payload, |payload| {
        Frame::Records(Records {
            auth,
            batch_id,
            record_size,
            count,
            payload,
        })
    })
}

/// Whole records packed into as many records frames of at most `maxFrameBytes` as needed, written
/// straight into one Buffer (the records are copied once). `mtu` true also checks the limit is a
/// valid datagram MTU.
#[neon::export(name = "hdwpEncodeRecords")]
#[allow(clippy::too_many_arguments)]
fn hdwp_encode_records<'cx>(
    cx: &mut FunctionContext<'cx>,
    id: Vec<u8>,
    rs: f64,
    records: Handle<'cx, JsTypedArray<u8>>,
    max_frame_bytes: f64,
    mtu: bool,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let batch_id = batch_id(cx, &id)?;
    let record_size = record_size(cx, rs)?;
    let limit = int(cx, max_frame_bytes, u32::MAX as u64, "max frame bytes")? as usize;
    if mtu {
        if let Err(e) = check_mtu(limit) {
            return throw_hdwp(cx, &e);
        }
    }
    let auth = auth(cx, query_id, token.as_deref())?;
    let len = records.as_slice(cx).len();
    let plan = match RecordsPlan::new(auth, record_size, len, limit) {
        Ok(p) => p,
        Err(e) => return throw_hdwp(cx, &e),
    };
    let mut out = JsBuffer::new(cx, plan.encoded_len)?;
    let lock = cx.lock();
    let res = match (records.try_borrow(&lock), out.try_borrow_mut(&lock)) {
        (Ok(input), Ok(mut output)) => plan.encode_into(&mut output, &batch_id, &input),
        _ => Err(HdwpError::InvalidValue {
            field: "records",
            detail: "buffer is not readable".into(),
        }),
    };
    drop(lock);
    match res {
        Ok(()) => Ok(out),
        Err(e) => throw_hdwp(cx, &e),
    }
}

#[neon::export(name = "hdwpEncodeEob")]
fn hdwp_encode_eob<'cx>(
    cx: &mut FunctionContext<'cx>,
    id: Vec<u8>,
    record_count: f64,
    closing_hash: Vec<u8>,
    digest: Vec<u8>,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let batch_id = batch_id(cx, &id)?;
    let record_count = int(cx, record_count, u64::MAX, "record count")?;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(
        cx,
        &Frame::Eob(EndOfBatch {
            auth,
            batch_id,
            record_count,
            closing_hash: &closing_hash,
            digest: &digest,
        }),
    )
}

#[neon::export(name = "hdwpEncodeBbn")]
fn hdwp_encode_bbn<'cx>(
    cx: &mut FunctionContext<'cx>,
    id: Vec<u8>,
    reason: String,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let batch_id = batch_id(cx, &id)?;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(
        cx,
        &Frame::Bbn(BadBatch {
            auth,
            batch_id,
            reason: &reason,
        }),
    )
}

#[neon::export(name = "hdwpEncodeQuery")]
fn hdwp_encode_query<'cx>(
    cx: &mut FunctionContext<'cx>,
    query_id: f64,
    token: Vec<u8>,
    json: String,
) -> JsResult<'cx, JsBuffer> {
    let auth = required_auth(cx, query_id, &token)?;
    emit(cx, &Frame::Query(Query { auth, json: &json }))
}

#[neon::export(name = "hdwpEncodeCancel")]
fn hdwp_encode_cancel<'cx>(
    cx: &mut FunctionContext<'cx>,
    query_id: f64,
    token: Vec<u8>,
) -> JsResult<'cx, JsBuffer> {
    let auth = required_auth(cx, query_id, &token)?;
    emit(cx, &Frame::Cancel(Cancel { auth }))
}

#[neon::export(name = "hdwpEncodeError")]
fn hdwp_encode_error<'cx>(
    cx: &mut FunctionContext<'cx>,
    code: f64,
    message: String,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let code = int(cx, code, u16::MAX as u64, "error code")? as u16;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(
        cx,
        &Frame::Error(ErrorFrame {
            auth,
            code,
            message: &message,
        }),
    )
}

#[neon::export(name = "hdwpEncodeCredit")]
fn hdwp_encode_credit<'cx>(
    cx: &mut FunctionContext<'cx>,
    bytes: f64,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let bytes = int(cx, bytes, u64::MAX, "credit")?;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(cx, &Frame::Credit(Credit { auth, bytes }))
}

#[neon::export(name = "hdwpEncodeAggregate")]
fn hdwp_encode_aggregate<'cx>(
    cx: &mut FunctionContext<'cx>,
    id: Vec<u8>,
    json: String,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let batch_id = batch_id(cx, &id)?;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(
        cx,
        &Frame::Aggregate(AggregatePartial {
            auth,
            batch_id,
            json: &json,
        }),
    )
}

/// One columns frame: a batch's rows as a columnar body (`columnarEncode`), `rows` of them.
#[neon::export(name = "hdwpEncodeColumns")]
fn hdwp_encode_columns<'cx>(
    cx: &mut FunctionContext<'cx>,
    id: Vec<u8>,
    rows: f64,
    body: Handle<'cx, JsTypedArray<u8>>,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let batch_id = batch_id(cx, &id)?;
    let rows = int(cx, rows, u32::MAX as u64, "row count")? as u32;
    let auth = auth(cx, query_id, token.as_deref())?;
    emit_borrowing(cx, body, |body| {
        Frame::Columns(ColumnsFrame {
            auth,
            batch_id,
            rows,
            body,
        })
    })
}
