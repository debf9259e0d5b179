//! Top-k exports: a `TopPlanHandle` (a compiled HDQuery `top`: one field's order, k, which end is
//! best) and its selection over records in memory, on the calling thread (one pass plus a select,
//! once per scan step).

use std::sync::Arc;

use hd_engine_core::scan::{QueryError, TopPlan, MAX_TOP_K};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use super::throw_query;
use crate::schema::unbox;
use crate::util::throw_coded;

/// The boxed state behind a `TopPlanHandle`.
pub struct TopBox(Arc<TopPlan>);
impl Finalize for TopBox {}

/// Compiles a `top` against a schema and the caller's field mask (one record of bytes, or null).
/// Throws `code: 'ERR_QUERY'` with `path` (`top.field`, `top.k`, `field_mask`) and `reason`.
#[neon::export(name = "scanTopCompile")]
fn scan_top_compile<'cx>(
    cx: &mut FunctionContext<'cx>,
    schema: Handle<'cx, JsValue>,
    field: String,
    k: f64,
    desc: bool,
    mask: Option<Vec<u8>>,
) -> JsResult<'cx, JsBox<TopBox>> {
    let schema = unbox(cx, schema)?;
    // A whole number up to 2^53 converts exactly; anything else is refused here, by path.
    if !(k.is_finite() && k.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&k)) {
        let e = QueryError::new(
            "top.k",
            format!("must be a whole number 1..={MAX_TOP_K}, got {k}"),
        );
        return throw_query(cx, &e);
    }
    match TopPlan::compile(&schema, &field, k as u64, desc, mask.as_deref()) {
        Ok(p) => Ok(cx.boxed(TopBox(Arc::new(p)))),
        Err(e) => throw_query(cx, &e),
    }
}

/// The records of `records` (whole records) whose key ranks within the plan's best k, ties with
/// the k-th kept, in their order. Throws a RangeError when `records` is not whole records.
#[neon::export(name = "scanTopSelect")]
fn scan_top_select<'cx>(
    cx: &mut FunctionContext<'cx>,
    plan: Handle<'cx, JsValue>,
    records: Handle<'cx, JsTypedArray<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let p = unbox_top(cx, plan)?;
    let out = p.select(records.as_slice(cx));
    match out {
        Ok(out) => JsBuffer::from_slice(cx, &out),
        Err(e) => cx.throw_range_error(e.to_string()),
    }
}

/// The plan behind a `TopPlanHandle` (throws `ERR_SCAN_HANDLE` for anything else).
pub(super) fn unbox_top<'cx, C: Context<'cx>>(
    cx: &mut C,
    plan: Handle<'cx, JsValue>,
) -> NeonResult<Arc<TopPlan>> {
    match plan.downcast::<JsBox<TopBox>, _>(cx) {
        Ok(p) => Ok(Arc::clone(&p.0)),
        Err(_) => throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "expected a TopPlanHandle from scanTopCompile",
        ),
    }
}
