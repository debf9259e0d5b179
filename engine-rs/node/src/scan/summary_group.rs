//! One native call for a group of a query's batches (`scanSummaryGroup`): a Neon task opens each
//! segment through the footer cache and folds into a fresh accumulator every batch its summary
//! answers and, within a byte budget, every small batch it scans, instead of an open, a step and
//! a close per batch, each a hand-off between the event loop and the pool.

use std::path::PathBuf;
use std::sync::Mutex;

use hd_engine_core::scan::aggregate::AggregateAccumulator;
use hd_engine_core::scan::{GroupBudget, GroupFold, SegmentScanner};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use super::aggregate::{unbox_plan, AccumulatorBox};
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
    let budget = GroupBudget {
        batch_bytes: budget_arg(cx, batch_bytes, "batchBytes")?,
        group_bytes: budget_arg(cx, group_bytes, "groupBytes")?,
    };
    let items = paths.to_vec(cx)?;
    let mut list = Vec::with_capacity(items.len());
    for item in items {
        let Ok(s) = item.downcast::<JsString, _>(cx) else {
            return cx.throw_type_error("paths must be an array of segment paths");
        };
        list.push(PathBuf::from(s.value(cx)));
    }
    Ok(cx
        .task(move || {
            let mut acc = AggregateAccumulator::new(plan);
            let folds = SegmentScanner::fold_group(&list, &filter, &mut acc, budget);
            (folds, acc)
        })
        .promise(|mut cx, (folds, acc)| {
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
                let mut arr = JsFloat64Array::new(&mut cx, folds.len())?;
                for (slot, f) in arr.as_mut_slice(&mut cx).iter_mut().zip(&folds) {
                    *slot = value(f);
                }
                o.set(&mut cx, name, arr)?;
            }
            let acc = cx.boxed(AccumulatorBox(Mutex::new(acc)));
            o.set(&mut cx, "acc", acc)?;
            Ok(o)
        }))
}

/// One count of a folded batch; -1 for one not folded.
fn answer_of(f: &GroupFold, count: fn(&hd_engine_core::scan::GroupAnswer) -> u64) -> f64 {
    match f {
        GroupFold::Folded(a) => count(a) as f64,
        _ => -1.0,
    }
}
