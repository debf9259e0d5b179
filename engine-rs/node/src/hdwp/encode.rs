//! HDWP encoders: one export per frame kind plus the batched records encoder. Each validates in
//! Rust (the same rules the decoder applies) and returns the frame's bytes as a fresh Buffer.

use hd_engine_core::batch_id::{BatchId, BATCH_ID_LEN};
use hd_engine_core::hdwp::{
    check_mtu, encode_frame, AggregatePartial, BadBatch, BatchEnd, Cancel, ColumnsFrame, Credit,
    EndOfBatch, EndOfBatches, ErrorFrame, Frame, HdwpError, Hello, Query, QueryAuth, Records,
    RecordsPlan, Role, TraceContextFrame, MAX_EXACT_INT, MAX_PAYLOAD_CEILING, TOKEN_LEN,
};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use super::{int, invalid, throw_hdwp};

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

/// One eobs frame ending `recordCounts.length` batches: `batchIds` holds their 64-byte ids back to
/// back, `recordCounts` each batch's record count in the same order (1..=65535 batches, counts at
/// most 2^53 - 1, no id twice; `ERR_HDWP_INVALID_VALUE` otherwise).
#[neon::export(name = "hdwpEncodeEobs")]
fn hdwp_encode_eobs<'cx>(
    cx: &mut FunctionContext<'cx>,
    batch_ids: Handle<'cx, JsTypedArray<u8>>,
    record_counts: Handle<'cx, JsTypedArray<f64>>,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let auth = auth(cx, query_id, token.as_deref())?;
    let batches = {
        let ids = batch_ids.as_slice(cx);
        let counts = record_counts.as_slice(cx);
        batch_ends(ids, counts)
    };
    match batches {
        Ok(batches) => emit(cx, &Frame::Eobs(EndOfBatches { auth, batches })),
        Err((field, detail)) => invalid(cx, field, &detail),
    }
}

/// Pairs back-to-back 64-byte batch ids with their record counts (integers; the frame's own
/// validation bounds them to 2^53 - 1).
fn batch_ends(ids: &[u8], counts: &[f64]) -> Result<Vec<BatchEnd>, (&'static str, String)> {
    if ids.len() != counts.len() * BATCH_ID_LEN {
        return Err((
            "batch ids",
            format!(
                "{} bytes for {} record counts; each batch id is {BATCH_ID_LEN} bytes",
                ids.len(),
                counts.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(counts.len());
    for (id, &n) in ids.chunks_exact(BATCH_ID_LEN).zip(counts) {
        // Past 2^53 a double is not exact; any such value is refused as over the limit.
        if n.fract() != 0.0 || n < 0.0 || n > MAX_EXACT_INT as f64 + 1.0 {
            return Err((
                "record count",
                format!("must be an integer 0..={MAX_EXACT_INT}, got {n}"),
            ));
        }
        let mut batch_id = [0u8; BATCH_ID_LEN];
        batch_id.copy_from_slice(id);
        out.push(BatchEnd {
            batch_id: BatchId(batch_id),
            record_count: n as u64,
        });
    }
    Ok(out)
}

/// One trace_context frame: the sender's W3C trace context as a JSON object.
#[neon::export(name = "hdwpEncodeTraceContext")]
fn hdwp_encode_trace_context<'cx>(
    cx: &mut FunctionContext<'cx>,
    json: String,
    query_id: f64,
    token: Option<Vec<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let auth = auth(cx, query_id, token.as_deref())?;
    emit(
        cx,
        &Frame::TraceContext(TraceContextFrame { auth, json: &json }),
    )
}
