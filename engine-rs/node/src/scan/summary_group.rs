//! One native call for a group of a query's batches (`scanSummaryGroup`): a Neon task opens each
//! segment through the footer cache and folds into a fresh accumulator every batch its summary
//! answers and, within a byte budget, every small batch it scans, instead of an open, a step and
//! a close per batch, each a hand-off between the event loop and the pool; and its row
//! counterpart (`scanRowsGroup`), which scans small batches whole and returns their matches.

use std::path::PathBuf;
use std::sync::Mutex;

use hd_engine_core::scan::aggregate::AggregateAccumulator;
use hd_engine_core::scan::{GroupBudget, GroupFold, SegmentScanner};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use super::aggregate::{unbox_plan, AccumulatorBox};
use super::top::unbox_top;
use super::unbox_filter;

/// One per-path number of the result, from a batch's fold.
type Column = fn(&GroupFold) -> f64;

/// A byte budget argument: a finite number ≥ 0 (fractions dropped).
fn budget_arg(cx: &mut FunctionContext, v: Handle<JsValue>, name: &str) -> NeonResult<u64> {
    let n = match v.downcast::<JsNumber, _>(cx) {
        Ok(n) => n.value(cx),
        Err(_) => f64::NAN,
    };
    if !n.is_finite() || n < 0.0 {
        return cx.throw_range_error(format!("{name} must be a finite number ≥ 0"));
    }
    // Saturates above u64::MAX; the budget is a bound, never an exact count.
    Ok(n as u64)
}

/// The `batchBytes` and `groupBytes` arguments of a group call.
fn budget_args(
    cx: &mut FunctionContext,
    batch_bytes: Handle<JsValue>,
    group_bytes: Handle<JsValue>,
) -> NeonResult<GroupBudget> {
    Ok(GroupBudget {
        batch_bytes: budget_arg(cx, batch_bytes, "batchBytes")?,
        group_bytes: budget_arg(cx, group_bytes, "groupBytes")?,
    })
}

/// Folds the segments of `paths` that one call answers (filter and aggregate as compiled for the
/// query; batches of at most `batchBytes` record bytes scanned, `groupBytes` in all) off the
/// event loop. Resolves `{ records, blocks, matched, scanned, skipped, acc }`, per path: the
/// batch's records (-1 for one the caller reads as usual, -2 for one not tried within the
/// budget), blocks, matching records, records the kernel evaluated and blocks not read when it
/// was folded; and the boxed accumulator holding the folded batches (for
/// `scanAccumulatorAbsorb`).
#[neon::export(name = "scanSummaryGroup")]
fn scan_summary_group<'cx>(
    cx: &mut FunctionContext<'cx>,
    paths: Handle<'cx, JsArray>,
    filter: Handle<'cx, JsValue>,
    plan: Handle<'cx, JsValue>,
    batch_bytes: Handle<'cx, JsValue>,
    group_bytes: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsPromise> {
    let filter = unbox_filter(cx, filter)?;
    let plan = unbox_plan(cx, plan)?;
    let budget = budget_args(cx, batch_bytes, group_bytes)?;
    let list = path_list(cx, paths)?;
    Ok(cx
        .task(move || {
            let mut acc = AggregateAccumulator::new(plan);
            let folds = SegmentScanner::fold_group(&list, &filter, &mut acc, budget);
            (folds, acc)
        })
        .promise(|mut cx, (folds, acc)| {
            let o = fold_columns(&mut cx, &folds)?;
            let acc = cx.boxed(AccumulatorBox(Mutex::new(acc)));
            o.set(&mut cx, "acc", acc)?;
            Ok(o)
        }))
}

/// Scans the small segments of `paths` with `filter` in one call off the event loop (batches of
/// at most `batchBytes` record bytes, `groupBytes` in all), no hash verified. Resolves
/// `{ records, blocks, matched, scanned, skipped, kept, rows }`: per path as `scanSummaryGroup` (-1 for
/// one the caller reads as usual, -2 for one not tried), `kept` (the records each scanned batch
/// put in `rows`: with `top`, a TopPlanHandle or null, only its best, else every match) and `rows`,
/// those records back to back in path order.
#[neon::export(name = "scanRowsGroup")]
fn scan_rows_group<'cx>(
    cx: &mut FunctionContext<'cx>,
    paths: Handle<'cx, JsArray>,
    filter: Handle<'cx, JsValue>,
    top: Handle<'cx, JsValue>,
    batch_bytes: Handle<'cx, JsValue>,
    group_bytes: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsPromise> {
    let filter = unbox_filter(cx, filter)?;
    let top = if top.is_a::<JsNull, _>(cx) || top.is_a::<JsUndefined, _>(cx) {
        None
    } else {
        Some(unbox_top(cx, top)?)
    };
    let budget = budget_args(cx, batch_bytes, group_bytes)?;
    let list = path_list(cx, paths)?;
    Ok(cx
        .task(move || {
            let mut rows = Vec::new();
            let folds =
                SegmentScanner::rows_group(&list, &filter, top.as_deref(), budget, &mut rows);
            (folds, rows)
        })
        .promise(|mut cx, (folds, rows)| {
            let o = fold_columns(&mut cx, &folds.iter().map(|f| f.0).collect::<Vec<_>>())?;
            let mut kept = JsFloat64Array::new(&mut cx, folds.len())?;
            for (slot, f) in kept.as_mut_slice(&mut cx).iter_mut().zip(&folds) {
                *slot = match f.0 {
                    GroupFold::Folded(_) => f.1 as f64,
                    _ => -1.0,
                };
            }
            o.set(&mut cx, "kept", kept)?;
            let b = JsBuffer::from_slice(&mut cx, &rows)?;
            o.set(&mut cx, "rows", b)?;
            Ok(o)
        }))
}

/// The segment paths argument.
fn path_list(cx: &mut FunctionContext, paths: Handle<JsArray>) -> NeonResult<Vec<PathBuf>> {
    let items = paths.to_vec(cx)?;
    let mut list = Vec::with_capacity(items.len());
    for item in items {
        let Ok(s) = item.downcast::<JsString, _>(cx) else {
            return cx.throw_type_error("paths must be an array of segment paths");
        };
        list.push(PathBuf::from(s.value(cx)));
    }
    Ok(list)
}

/// The per-path columns of a group's answer: records (-1 read as usual, -2 not tried), blocks,
/// matched, scanned, skipped.
fn fold_columns<'cx>(cx: &mut TaskContext<'cx>, folds: &[GroupFold]) -> JsResult<'cx, JsObject> {
    let o = cx.empty_object();
    let columns: [(&str, Column); 5] = [
        ("records", |f| match f {
            GroupFold::Folded(a) => a.records as f64,
            GroupFold::Read => -1.0,
            GroupFold::Untried => -2.0,
        }),
        ("blocks", |f| answer_of(f, |a| a.blocks)),
        ("matched", |f| answer_of(f, |a| a.matched)),
        ("scanned", |f| answer_of(f, |a| a.scanned)),
        ("skipped", |f| answer_of(f, |a| a.blocks_skipped)),
    ];
    for (name, value) in columns {
        let mut arr = JsFloat64Array::new(cx, folds.len())?;
        for (slot, f) in arr.as_mut_slice(cx).iter_mut().zip(folds) {
            *slot = value(f);
        }
        o.set(cx, name, arr)?;
    }
    Ok(o)
}

/// One count of a folded batch; -1 for one not folded.
fn answer_of(f: &GroupFold, count: fn(&hd_engine_core::scan::GroupAnswer) -> u64) -> f64 {
    match f {
        GroupFold::Folded(a) => count(a) as f64,
        _ => -1.0,
    }
}
