//! Batch ID exports.

use hd_engine_core::batch_id::{ids_for_time_range, BatchId};
use neon::prelude::*;
use neon::types::buffer::TypedArray;
use neon::types::JsBigInt;

use crate::util::throw_coded;

/// Most ids one `batchIdsTime` call may return.
const MAX_IDS: usize = 10_000_000;

#[neon::export(name = "batchIdString")]
fn batch_id_string<'cx>(cx: &mut FunctionContext<'cx>, s: String) -> JsResult<'cx, JsBuffer> {
    JsBuffer::from_slice(cx, &BatchId::from_str_bytes(s.as_bytes()).0)
}

#[neon::export(name = "batchIdNumber")]
fn batch_id_number<'cx>(
    cx: &mut FunctionContext<'cx>,
    n: Handle<'cx, JsBigInt>,
) -> JsResult<'cx, JsBuffer> {
    let v = match n.to_u64(cx) {
        Ok(v) => v,
        Err(_) => {
            return throw_coded(
                cx,
                "ERR_RANGE",
                "batch id number must fit in an unsigned 64-bit integer",
            )
        }
    };
    JsBuffer::from_slice(cx, &BatchId::from_number(v).0)
}

#[neon::export(name = "batchIdTime")]
fn batch_id_time<'cx>(
    cx: &mut FunctionContext<'cx>,
    start: f64,
    end: f64,
    interval: f64,
) -> JsResult<'cx, JsBuffer> {
    JsBuffer::from_slice(
        cx,
        &BatchId::from_time(start as i64, end as i64, interval as i64).0,
    )
}

/// All ids of a time range, concatenated (64 bytes each).
#[neon::export(name = "batchIdsTime")]
fn batch_ids_time<'cx>(
    cx: &mut FunctionContext<'cx>,
    start: f64,
    end: f64,
    interval: f64,
) -> JsResult<'cx, JsBuffer> {
    match ids_for_time_range(start as i64, end as i64, interval as i64, MAX_IDS) {
        Ok(ids) => {
            let mut buf = JsBuffer::new(cx, ids.len() * 64)?;
            for (dst, id) in buf.as_mut_slice(cx).chunks_exact_mut(64).zip(ids.iter()) {
                dst.copy_from_slice(&id.0);
            }
            Ok(buf)
        }
        Err(msg) => throw_coded(cx, "ERR_RANGE", &msg),
    }
}
