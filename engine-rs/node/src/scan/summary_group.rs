//! One native call for a group of a query's batches that their summaries answer
//! (`scanSummaryGroup`): a Neon task opens each segment through the footer cache and folds every
//! summary-answered batch into a fresh accumulator, instead of an open, a step and a close per
//! batch, each a hand-off between the event loop and the pool.

use std::path::PathBuf;
use std::sync::Mutex;

use hd_engine_core::scan::aggregate::AggregateAccumulator;
use hd_engine_core::scan::SegmentScanner;
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use super::aggregate::{unbox_plan, AccumulatorBox};
use super::unbox_filter;

/// Folds the segments of `paths` that their summaries answer (filter and aggregate as compiled
/// for the query) off the event loop; resolves `{ records, blocks, acc }`: per path the batch's
/// records and blocks when it was folded, -1 for one the caller reads as usual, and the boxed
/// accumulator holding the folded batches (for `scanAccumulatorAbsorb`).
#[neon::export(name = "scanSummaryGroup")]
fn scan_summary_group<'cx>(
    cx: &mut FunctionContext<'cx>,
    paths: Handle<'cx, JsArray>,
    filter: Handle<'cx, JsValue>,
    plan: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsPromise> {
    let filter = unbox_filter(cx, filter)?;
    let plan = unbox_plan(cx, plan)?;
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
            let answers = SegmentScanner::fold_summaries(&list, &filter, &mut acc);
            (answers, acc)
        })
        .promise(|mut cx, (answers, acc)| {
            let n = answers.len();
            let mut records = JsFloat64Array::new(&mut cx, n)?;
            let mut blocks = JsFloat64Array::new(&mut cx, n)?;
            {
                let r = records.as_mut_slice(&mut cx);
                for (slot, a) in r.iter_mut().zip(&answers) {
                    *slot = a.map_or(-1.0, |a| a.records as f64);
                }
            }
            {
                let b = blocks.as_mut_slice(&mut cx);
                for (slot, a) in b.iter_mut().zip(&answers) {
                    *slot = a.map_or(-1.0, |a| a.blocks as f64);
                }
            }
            let o = cx.empty_object();
            o.set(&mut cx, "records", records)?;
            o.set(&mut cx, "blocks", blocks)?;
            let acc = cx.boxed(AccumulatorBox(Mutex::new(acc)));
            o.set(&mut cx, "acc", acc)?;
            Ok(o)
        }))
}
