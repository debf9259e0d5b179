//! Pushdown scan exports: a `ScanFilterHandle` (the boxed, compiled `ScanFilter` of one query),
//! the kernel over in-memory records, and a `SegmentScannerHandle` whose opening and steps run
//! as Neon tasks (file reads and scans stay off the event loop). Aggregates (plans, the scanner's
//! aggregate, accumulators) are in `aggregate`; top-k selection (`TopPlanHandle`) in `top`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hd_engine_core::scan::{read_baseline, QueryError, ScanFilter, ScanStep, SegmentScanner};
use hd_engine_core::segment::zone_fields_from_schema;
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::hash::whole_u32;
use crate::schema::unbox;
use crate::util::throw_coded;

mod aggregate;
mod summary_group;
mod top;

/// The boxed state behind a `ScanFilterHandle`.
pub struct FilterBox(Arc<ScanFilter>);
impl Finalize for FilterBox {}

/// The boxed state behind a `SegmentScannerHandle`: the scanner (held while a step runs) and
/// whether `scanClose` was called (the step in flight, if any, drops the scanner when done).
pub struct ScannerBox {
    scanner: Mutex<Option<SegmentScanner>>,
    closed: AtomicBool,
}
impl Finalize for ScannerBox {}

fn unbox_filter<'cx, C: Context<'cx>>(
    cx: &mut C,
    h: Handle<'cx, JsValue>,
) -> NeonResult<Arc<ScanFilter>> {
    match h.downcast::<JsBox<FilterBox>, _>(cx) {
        Ok(b) => Ok(Arc::clone(&b.0)),
        Err(_) => throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "expected a ScanFilterHandle from scanFilterCompile",
        ),
    }
}

fn unbox_scanner<'cx, C: Context<'cx>>(
    cx: &mut C,
    h: Handle<'cx, JsValue>,
) -> NeonResult<Arc<ScannerBox>> {
    match h.downcast::<JsBox<Arc<ScannerBox>>, _>(cx) {
        Ok(b) => Ok(Arc::clone(&b)),
        Err(_) => throw_coded(
            cx,
            "ERR_SCAN_HANDLE",
            "expected a SegmentScannerHandle from scanOpen",
        ),
    }
}

/// Throws a query compile error: `code: 'ERR_QUERY'` with the failing `path` and the `reason`.
fn throw_query<'cx, T>(cx: &mut FunctionContext<'cx>, e: &QueryError) -> NeonResult<T> {
    let err = cx.error(e.to_string())?;
    let code = cx.string(e.code());
    err.set(cx, "code", code)?;
    let path = cx.string(&e.path);
    err.set(cx, "path", path)?;
    let reason = cx.string(&e.message);
    err.set(cx, "reason", reason)?;
    cx.throw(err)
}

/// Compiles `sub_queries` JSON against a schema. Throws an Error with `code: 'ERR_QUERY'`,
/// `path` and `reason` for a filter the schema cannot take.
#[neon::export(name = "scanFilterCompile")]
fn scan_filter_compile<'cx>(
    cx: &mut FunctionContext<'cx>,
    schema: Handle<'cx, JsValue>,
    json: String,
) -> JsResult<'cx, JsBox<FilterBox>> {
    let schema = unbox(cx, schema)?;
    match ScanFilter::compile(&schema, &json) {
        Ok(f) => Ok(cx.boxed(FilterBox(Arc::new(f)))),
        Err(e) => throw_query(cx, &e),
    }
}

/// `{ recordSize, subQueries, matchesAll, matchesNone }` of a compiled filter.
#[neon::export(name = "scanFilterInfo")]
fn scan_filter_info<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsObject> {
    let f = unbox_filter(cx, handle)?;
    let o = cx.empty_object();
    let v = cx.number(f.record_size() as f64);
    o.set(cx, "recordSize", v)?;
    let v = cx.number(f.sub_queries() as f64);
    o.set(cx, "subQueries", v)?;
    let v = cx.boolean(f.matches_all());
    o.set(cx, "matchesAll", v)?;
    let v = cx.boolean(f.matches_none());
    o.set(cx, "matchesNone", v)?;
    Ok(o)
}

/// The matching records of `records` (whole records only), on the calling thread.
#[neon::export(name = "scanEvaluate")]
fn scan_evaluate<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    records: Handle<'cx, JsTypedArray<u8>>,
) -> JsResult<'cx, JsBuffer> {
    let f = unbox_filter(cx, handle)?;
    let len = records.as_slice(cx).len();
    if !len.is_multiple_of(f.record_size()) {
        return throw_coded(
            cx,
            "ERR_SCAN_LENGTH",
            &format!(
                "{len} bytes is not a whole number of {}-byte records ({} left over)",
                f.record_size(),
                len % f.record_size()
            ),
        );
    }
    let out = f.filter(records.as_slice(cx));
    JsBuffer::from_slice(cx, &out)
}

/// Opens a segment for a scan off the event loop; resolves `{ handle, records, blocks,
/// batchId, datasetId, closingHash }`.
#[neon::export(name = "scanOpen")]
fn scan_open<'cx>(
    cx: &mut FunctionContext<'cx>,
    path: String,
    filter: Handle<'cx, JsValue>,
    verify_hash: bool,
) -> JsResult<'cx, JsPromise> {
    let f = unbox_filter(cx, filter)?;
    Ok(cx
        .task(move || SegmentScanner::open(Path::new(&path), f, verify_hash))
        .promise(|mut cx, result| match result {
            Ok(s) => scanner_object(&mut cx, s),
            Err(e) => throw_coded(&mut cx, e.code(), &e.to_string()),
        }))
}

/// Opens a segment whose footer the footer cache holds, on this thread (an open, a stat and a
/// lookup): the object `scanOpen` resolves, or `undefined` when the footer is not cached.
#[neon::export(name = "scanOpenCachedSync")]
fn scan_open_cached_sync<'cx>(
    cx: &mut FunctionContext<'cx>,
    path: String,
    filter: Handle<'cx, JsValue>,
    verify_hash: bool,
) -> JsResult<'cx, JsValue> {
    let f = unbox_filter(cx, filter)?;
    match SegmentScanner::open_if_cached(Path::new(&path), f, verify_hash) {
        Ok(Some(s)) => Ok(scanner_object(cx, s)?.upcast()),
        Ok(None) => Ok(cx.undefined().upcast()),
        Err(e) => throw_coded(cx, e.code(), &e.to_string()),
    }
}

/// `{ handle, records, blocks, batchId, datasetId, closingHash }` of an open scanner.
fn scanner_object<'cx, C: Context<'cx>>(cx: &mut C, s: SegmentScanner) -> JsResult<'cx, JsObject> {
    let o = cx.empty_object();
    let r = s.reader();
    let v = cx.number(r.records() as f64);
    o.set(cx, "records", v)?;
    let v = cx.number(r.blocks() as f64);
    o.set(cx, "blocks", v)?;
    let v = JsBuffer::from_slice(cx, &r.header().batch_id)?;
    o.set(cx, "batchId", v)?;
    let v = cx.string(&r.header().dataset_id);
    o.set(cx, "datasetId", v)?;
    let v = JsBuffer::from_slice(cx, r.closing_hash().as_bytes())?;
    o.set(cx, "closingHash", v)?;
    let handle = cx.boxed(Arc::new(ScannerBox {
        scanner: Mutex::new(Some(s)),
        closed: AtomicBool::new(false),
    }));
    o.set(cx, "handle", handle)?;
    Ok(o)
}

fn step_object<'cx>(cx: &mut TaskContext<'cx>, s: ScanStep) -> JsResult<'cx, JsObject> {
    let o = cx.empty_object();
    let v = JsBuffer::from_slice(cx, &s.records)?;
    o.set(cx, "records", v)?;
    let v = cx.number(s.matched as f64);
    o.set(cx, "matched", v)?;
    let v = cx.number(s.scanned as f64);
    o.set(cx, "scanned", v)?;
    let v = cx.number(s.blocks_skipped as f64);
    o.set(cx, "blocksSkipped", v)?;
    let v = cx.boolean(s.done);
    o.set(cx, "done", v)?;
    if let Some(ok) = s.hash_ok {
        let v = cx.boolean(ok);
        o.set(cx, "hashOk", v)?;
    }
    if let Some(p) = &s.partial {
        let v = cx.string(p);
        o.set(cx, "partial", v)?;
    }
    Ok(o)
}

/// Scans up to `maxBlocks` more blocks off the event loop; resolves `{ records, matched,
/// scanned, blocksSkipped, done, hashOk? }`.
#[neon::export(name = "scanNext")]
fn scan_next<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    max_blocks: f64,
) -> JsResult<'cx, JsPromise> {
    let b = unbox_scanner(cx, handle)?;
    let max_blocks = whole_u32(cx, max_blocks, "maxBlocks")?;
    if b.closed.load(Ordering::Acquire) {
        return throw_coded(cx, "ERR_SCAN_CLOSED", "the segment scanner is closed");
    }
    Ok(cx
        .task(move || {
            let closed = || {
                (
                    "ERR_SCAN_CLOSED",
                    "the segment scanner is closed".to_string(),
                )
            };
            let mut guard = b.scanner.lock().map_err(|_| closed())?;
            let result = match guard.as_mut() {
                Some(s) if !b.closed.load(Ordering::Acquire) => s
                    .next(u64::from(max_blocks))
                    .map_err(|e| (e.code(), e.to_string())),
                _ => Err(closed()),
            };
            if result.is_err() || b.closed.load(Ordering::Acquire) {
                *guard = None;
            }
            result
        })
        .promise(|mut cx, result| match result {
            Ok(step) => step_object(&mut cx, step),
            Err((code, msg)) => throw_coded(&mut cx, code, &msg),
        }))
}

/// Closes a scanner: later steps are refused; a step in flight finishes and then drops it.
#[neon::export(name = "scanClose")]
fn scan_close<'cx>(cx: &mut FunctionContext<'cx>, handle: Handle<'cx, JsValue>) -> NeonResult<()> {
    let b = unbox_scanner(cx, handle)?;
    b.closed.store(true, Ordering::Release);
    if let Ok(mut guard) = b.scanner.try_lock() {
        *guard = None;
    }
    Ok(())
}

/// The zone fields a segment of this schema should keep (`zone_fields_from_schema`), 4 numbers
/// each as `segmentWriterCreate` takes them: offset, size, kind, big-endian.
#[neon::export(name = "scanZoneFields")]
fn scan_zone_fields<'cx>(
    cx: &mut FunctionContext<'cx>,
    schema: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsTypedArray<u32>> {
    let schema = unbox(cx, schema)?;
    let raw: Vec<u32> = zone_fields_from_schema(&schema)
        .iter()
        .flat_map(|f| {
            [
                f.offset,
                u32::from(f.size),
                f.kind as u32,
                u32::from(f.big_endian),
            ]
        })
        .collect();
    JsTypedArray::<u32>::from_slice(cx, &raw)
}

/// Reads every byte of `buf` once (a benchmark's baseline: the plain memory read of the bytes a
/// scan covers); returns a fold of them so the reads happen.
#[neon::export(name = "scanReadBaseline")]
fn scan_read_baseline<'cx>(
    cx: &mut FunctionContext<'cx>,
    buf: Handle<'cx, JsTypedArray<u8>>,
) -> NeonResult<f64> {
    Ok((read_baseline(buf.as_slice(cx)) & 0xffff_ffff) as f64)
}
