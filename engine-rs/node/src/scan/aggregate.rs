//! Aggregate exports: an `AggregatePlanHandle` (a compiled HDQuery `aggregate`), setting it on a
//! scanner, and an `AggregateAccumulatorHandle` that merges the partials of many batches of one
//! query. Folds and takes run on the JS thread: a merge of one batch's groups is cheap.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use hd_engine_core::scan::aggregate::{AggregateAccumulator, AggregatePlan, MergeError};
use neon::prelude::*;

use super::{throw_query, unbox_scanner};
use crate::schema::unbox;
use crate::util::throw_coded;

/// The boxed state behind an `AggregatePlanHandle`.
pub struct AggregateBox(Arc<AggregatePlan>);
impl Finalize for AggregateBox {}

/// Compiles an HDQuery `aggregate` (JSON) against a schema and the caller's field mask (one
/// record of bytes, or null). Throws `code: 'ERR_QUERY'` with `path` and `reason`.
#[neon::export(name = "scanAggregateCompile")]
fn scan_aggregate_compile<'cx>(
    cx: &mut FunctionContext<'cx>,
    schema: Handle<'cx, JsValue>,
    json: String,
    mask: Option<Vec<u8>>,
) -> JsResult<'cx, JsBox<AggregateBox>> {
    let schema = unbox(cx, schema)?;
    match AggregatePlan::compile(&schema, &json, mask.as_deref()) {
        Ok(p) => Ok(cx.boxed(AggregateBox(Arc::new(p)))),
        Err(e) => throw_query(cx, &e),
    }
}

pub(super) fn unbox_plan<'cx, C: Context<'cx>>(
    cx: &mut C,
    h: Handle<'cx, JsValue>,
) -> NeonResult<Arc<AggregatePlan>> {
    match h.downcast::<JsBox<AggregateBox>, _>(cx) {
        Ok(p) => Ok(Arc::clone(&p.0)),
        Err(_) => throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "expected an AggregatePlanHandle from scanAggregateCompile",
        ),
    }
}

/// Makes an open scanner accumulate `aggregate` instead of returning records (before its first step).
#[neon::export(name = "scanSetAggregate")]
fn scan_set_aggregate<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    aggregate: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsValue> {
    let b = unbox_scanner(cx, handle)?;
    let plan = unbox_plan(cx, aggregate)?;
    let Ok(mut guard) = b.scanner.try_lock() else {
        return throw_coded(cx, "ERR_SCAN_BUSY", "a step of the scanner is running");
    };
    match guard.as_mut() {
        Some(s) => {
            s.set_aggregate(plan);
            // A batch its summary answers needs no step: its partial goes back at once.
            match s.summary_partial() {
                Some(p) => Ok(cx.string(p).upcast()),
                None => Ok(cx.undefined().upcast()),
            }
        }
        None => throw_coded(cx, "ERR_SCAN_CLOSED", "the segment scanner is closed"),
    }
}

/// Like `scanSetAggregate`, but the batch's partial stays native for `scanFoldInto` (no JSON is
/// built); returns whether the batch summary answered it (no step needs to run).
#[neon::export(name = "scanSetAggregateFold")]
fn scan_set_aggregate_fold<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    aggregate: Handle<'cx, JsValue>,
) -> NeonResult<bool> {
    let b = unbox_scanner(cx, handle)?;
    let plan = unbox_plan(cx, aggregate)?;
    let Ok(mut guard) = b.scanner.try_lock() else {
        return throw_coded(cx, "ERR_SCAN_BUSY", "a step of the scanner is running");
    };
    match guard.as_mut() {
        Some(s) if !b.closed.load(Ordering::Acquire) => Ok(s.set_aggregate_fold(plan)),
        _ => throw_coded(cx, "ERR_SCAN_CLOSED", "the segment scanner is closed"),
    }
}

/// The boxed state behind an `AggregateAccumulatorHandle`. Only the JS thread uses it; the
/// Mutex is there because a box hands out shared references and the accumulator changes.
pub struct AccumulatorBox(pub(super) Mutex<AggregateAccumulator>);
impl Finalize for AccumulatorBox {}

/// Runs `f` on the accumulator behind `h`.
fn with_accumulator<'cx, C: Context<'cx>, T>(
    cx: &mut C,
    h: Handle<'cx, JsValue>,
    f: impl FnOnce(&mut AggregateAccumulator) -> T,
) -> NeonResult<T> {
    let Ok(b) = h.downcast::<JsBox<AccumulatorBox>, _>(cx) else {
        return throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "expected an AggregateAccumulatorHandle from scanAccumulatorCreate",
        );
    };
    // Poisoned only if a panic interrupted a merge: its groups may be half merged.
    let Ok(mut acc) = b.0.lock() else {
        return throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "the aggregate accumulator was left inconsistent by an earlier failure",
        );
    };
    Ok(f(&mut acc))
}

/// An empty accumulator of the partials of `aggregate`'s batches.
#[neon::export(name = "scanAccumulatorCreate")]
fn scan_accumulator_create<'cx>(
    cx: &mut FunctionContext<'cx>,
    aggregate: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsBox<AccumulatorBox>> {
    let plan = unbox_plan(cx, aggregate)?;
    Ok(cx.boxed(AccumulatorBox(Mutex::new(AggregateAccumulator::new(plan)))))
}

/// Groups the accumulator holds now.
#[neon::export(name = "scanAccumulatorGroups")]
fn scan_accumulator_groups<'cx>(
    cx: &mut FunctionContext<'cx>,
    acc: Handle<'cx, JsValue>,
) -> NeonResult<f64> {
    with_accumulator(cx, acc, |a| a.groups() as f64)
}

/// Whether nothing has been folded in since creation or the last take.
#[neon::export(name = "scanAccumulatorEmpty")]
fn scan_accumulator_empty<'cx>(
    cx: &mut FunctionContext<'cx>,
    acc: Handle<'cx, JsValue>,
) -> NeonResult<bool> {
    with_accumulator(cx, acc, |a| a.is_empty())
}

/// The merged groups as an aggregate frame's `groups` JSON array; empties the accumulator.
#[neon::export(name = "scanAccumulatorTake")]
fn scan_accumulator_take<'cx>(
    cx: &mut FunctionContext<'cx>,
    acc: Handle<'cx, JsValue>,
) -> NeonResult<String> {
    with_accumulator(cx, acc, |a| a.take_json())
}

/// Merges a finished batch's partial into the accumulator, on this thread; false (accumulator
/// unchanged) when it would then hold more groups than `max_groups`.
#[neon::export(name = "scanFoldInto")]
fn scan_fold_into<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    acc: Handle<'cx, JsValue>,
) -> NeonResult<bool> {
    let b = unbox_scanner(cx, handle)?;
    let Ok(mut guard) = b.scanner.try_lock() else {
        return throw_coded(cx, "ERR_SCAN_BUSY", "a step of the scanner is running");
    };
    let s = match guard.as_mut() {
        Some(s) if !b.closed.load(Ordering::Acquire) => s,
        _ => return throw_coded(cx, "ERR_SCAN_CLOSED", "the segment scanner is closed"),
    };
    match with_accumulator(cx, acc, |a| s.fold_into(a))? {
        Ok(merged) => Ok(merged),
        Err(e) => throw_coded(cx, e.code(), &e.to_string()),
    }
}

/// Moves everything `other` holds into `acc` (both of one plan), on this thread: false, both
/// unchanged, when `acc` would then hold more groups than `max_groups`.
#[neon::export(name = "scanAccumulatorAbsorb")]
fn scan_accumulator_absorb<'cx>(
    cx: &mut FunctionContext<'cx>,
    acc: Handle<'cx, JsValue>,
    other: Handle<'cx, JsValue>,
) -> NeonResult<bool> {
    let Ok(from) = other.downcast::<JsBox<AccumulatorBox>, _>(cx) else {
        return throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "expected an AggregateAccumulatorHandle from scanAccumulatorCreate",
        );
    };
    if acc.strict_equals(cx, other) {
        return throw_coded(cx, "ERR_SCAN_HANDLE", "an accumulator cannot absorb itself");
    }
    let Ok(mut from) = from.0.lock() else {
        return throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "the aggregate accumulator was left inconsistent by an earlier failure",
        );
    };
    match with_accumulator(cx, acc, |a| a.absorb(&mut from))? {
        Ok(merged) => Ok(merged),
        Err(e @ MergeError::PlanMismatch) => throw_coded(cx, "ERR_SCAN_PLAN", &e.to_string()),
        Err(e @ MergeError::Overflowed { .. }) => {
            throw_coded(cx, "ERR_SCAN_TOO_MANY_GROUPS", &e.to_string())
        }
    }
}
