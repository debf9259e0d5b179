//! Segment store exports. Everything that touches the disk beyond creating a file runs as a Neon
//! task: appends (hash + write), finish (footer, fsync, rename, fsync directory), open, block
//! reads, verification and recovery.
//!
//! A writer handle queues appended chunks like a `ChainHandle` does (see hash.rs): each task
//! drains the queue in arrival order under the handle's lock, so order is kept whatever order the
//! pool runs the tasks in.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hd_engine_core::segment::{
    direct_io_supported, record_cache_stats, recover_dir, set_record_cache_bytes, uring_io_refusal,
    verify_segment, RecoverOptions, SegmentConfig, SegmentError, SegmentIo, SegmentReader,
    SegmentWriter, ZoneField, ZoneKind,
};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::hash::{algorithm, batch_id, whole_u32};
use crate::util::throw_coded;

fn throw_seg<'cx, C: Context<'cx>, T>(cx: &mut C, e: &SegmentError) -> NeonResult<T> {
    throw_coded(cx, e.code(), &e.to_string())
}

/// A writer, the chunks waiting for it, and the first error it hit.
struct WriterSlot {
    writer: Option<SegmentWriter>,
    pending: VecDeque<Vec<u8>>,
    failed: Option<(&'static str, String)>,
}

impl WriterSlot {
    fn drain(&mut self) {
        while let Some(chunk) = self.pending.pop_front() {
            if self.failed.is_some() {
                continue;
            }
            let result = match self.writer.as_mut() {
                Some(w) => w.append(&chunk),
                None => Err(SegmentError::Closed),
            };
            if let Err(e) = result {
                self.failed = Some((e.code(), e.to_string()));
                self.writer = None;
            }
        }
    }
}

/// The boxed state behind a `SegmentWriterHandle`.
pub struct WriterBox(Mutex<WriterSlot>);
impl Finalize for WriterBox {}

/// The boxed state behind a `SegmentReaderHandle`.
pub struct ReaderBox(SegmentReader);
impl Finalize for ReaderBox {}

fn unbox_writer<'cx, C: Context<'cx>>(
    cx: &mut C,
    h: Handle<'cx, JsValue>,
) -> NeonResult<Arc<WriterBox>> {
    match h.downcast::<JsBox<Arc<WriterBox>>, _>(cx) {
        Ok(b) => Ok(Arc::clone(&b)),
        Err(_) => throw_coded(
            cx,
            "ERR_SEGMENT_HANDLE",
            "expected a SegmentWriterHandle from segmentWriterCreate",
        ),
    }
}

fn unbox_reader<'cx, C: Context<'cx>>(
    cx: &mut C,
    h: Handle<'cx, JsValue>,
) -> NeonResult<Arc<ReaderBox>> {
    match h.downcast::<JsBox<Arc<ReaderBox>>, _>(cx) {
        Ok(b) => Ok(Arc::clone(&b)),
        Err(_) => throw_coded(
            cx,
            "ERR_SEGMENT_HANDLE",
            "expected a SegmentReaderHandle from segmentOpen",
        ),
    }
}

/// Zone fields from 4 numbers each: offset, size, kind (1 unsigned, 2 signed, 3 float, 4 bytes),
/// big-endian flag.
fn zone_fields<'cx>(cx: &mut FunctionContext<'cx>, raw: &[u32]) -> NeonResult<Vec<ZoneField>> {
    if !raw.len().is_multiple_of(4) {
        return throw_coded(cx, "ERR_SEGMENT_CONFIG", "zone fields are 4 numbers each");
    }
    let mut out = Vec::with_capacity(raw.len() / 4);
    for f in raw.chunks_exact(4) {
        let (Some(kind), Ok(size)) = (
            u8::try_from(f[2]).ok().and_then(ZoneKind::from_code),
            u16::try_from(f[1]),
        ) else {
            return throw_coded(cx, "ERR_SEGMENT_CONFIG", &format!("bad zone field {f:?}"));
        };
        out.push(ZoneField {
            offset: f[0],
            size,
            kind,
            big_endian: f[3] != 0,
        });
    }
    Ok(out)
}

/// Creates `<dir>/<name>.partial` and writes the header (sync: one small write). `io` is
/// `buffered`, `direct` (O_DIRECT; buffered where the file system refuses it) or `uring` (O_DIRECT
/// through io_uring; direct where the kernel refuses io_uring).
#[neon::export(name = "segmentWriterCreate")]
#[allow(clippy::too_many_arguments)]
fn segment_writer_create<'cx>(
    cx: &mut FunctionContext<'cx>,
    dir: String,
    name: String,
    dataset_id: String,
    id: Handle<'cx, JsTypedArray<u8>>,
    record_size: f64,
    block_size: f64,
    algorithm_name: String,
    fields: Handle<'cx, JsTypedArray<u32>>,
    io_name: String,
) -> JsResult<'cx, JsBox<Arc<WriterBox>>> {
    let Some(io_mode) = SegmentIo::from_name(&io_name) else {
        return throw_coded(
            cx,
            "ERR_SEGMENT_CONFIG",
            &format!("segment io must be 'buffered', 'direct' or 'uring', got {io_name:?}"),
        );
    };
    let alg = algorithm(cx, &algorithm_name)?;
    let record_size = whole_u32(cx, record_size, "record size")?;
    let block_size = whole_u32(cx, block_size, "block size")?;
    let id = id.as_slice(cx).to_vec();
    let batch_id = batch_id(cx, &id)?;
    let raw = fields.as_slice(cx).to_vec();
    let fields = zone_fields(cx, &raw)?;
    let cfg = SegmentConfig {
        dir: PathBuf::from(dir),
        name,
        dataset_id,
        batch_id,
        record_size,
        block_size,
        algorithm: alg,
        fields,
    };
    match SegmentWriter::create_with_io(cfg, io_mode) {
        Ok(w) => Ok(cx.boxed(Arc::new(WriterBox(Mutex::new(WriterSlot {
            writer: Some(w),
            pending: VecDeque::new(),
            failed: None,
        }))))),
        Err(e) => throw_seg(cx, &e),
    }
}

/// How a writer writes: `uring`, `direct` or `buffered` (the mode it fell back to after a refusal;
/// `buffered` once closed).
/// Sync: call it before queuing appends, while the handle's lock is free.
#[neon::export(name = "segmentWriterIo")]
fn segment_writer_io<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsString> {
    let slot = unbox_writer(cx, handle)?;
    let io_mode = match slot.0.lock() {
        Ok(s) => s
            .writer
            .as_ref()
            .map_or(SegmentIo::Buffered, SegmentWriter::io),
        Err(_) => SegmentIo::Buffered,
    };
    Ok(cx.string(io_mode.name()))
}

/// Whether files in `dir` take O_DIRECT (sync: creates, switches and removes one probe file).
#[neon::export(name = "segmentDirectIoSupported")]
fn segment_direct_io_supported<'cx>(
    cx: &mut FunctionContext<'cx>,
    dir: String,
) -> JsResult<'cx, JsBoolean> {
    match direct_io_supported(Path::new(&dir)) {
        Ok(ok) => Ok(cx.boolean(ok)),
        Err(e) => throw_coded(
            cx,
            "ERR_SEGMENT_IO",
            &format!("cannot probe direct I/O in {dir}: {e}"),
        ),
    }
}

/// Why segments in `dir` cannot be written through io_uring, or null when they can (sync: sets up a
/// ring and writes one block of a probe file through it).
#[neon::export(name = "segmentUringIoRefusal")]
fn segment_uring_io_refusal<'cx>(
    cx: &mut FunctionContext<'cx>,
    dir: String,
) -> JsResult<'cx, JsValue> {
    match uring_io_refusal(Path::new(&dir)) {
        Ok(None) => Ok(cx.null().upcast()),
        Ok(Some(why)) => Ok(cx.string(why).upcast()),
        Err(e) => throw_coded(
            cx,
            "ERR_SEGMENT_IO",
            &format!("cannot probe io_uring in {dir}: {e}"),
        ),
    }
}

/// Queues a copy of `buf`; resolves once it is hashed and written (rejects with the writer's
/// first error).
#[neon::export(name = "segmentWriterAppend")]
fn segment_writer_append<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    buf: Handle<'cx, JsTypedArray<u8>>,
) -> JsResult<'cx, JsPromise> {
    let slot = unbox_writer(cx, handle)?;
    let chunk = buf.as_slice(cx).to_vec();
    match slot.0.lock() {
        Ok(mut s) => s.pending.push_back(chunk),
        Err(_) => return throw_coded(cx, "ERR_SEGMENT_CLOSED", "segment writer failed earlier"),
    }
    Ok(cx
        .task(move || match slot.0.lock() {
            Ok(mut s) => {
                s.drain();
                s.failed.clone()
            }
            Err(_) => Some((
                "ERR_SEGMENT_CLOSED",
                "segment writer failed earlier".to_string(),
            )),
        })
        .promise(|mut cx, failed| match failed {
            None => Ok(cx.undefined()),
            Some((code, msg)) => throw_coded(&mut cx, code, &msg),
        }))
}

/// Finishes the segment off the event loop: resolves `{ path, records, blocks, closingHash,
/// bytes }` once it is durable under its final name. `expected` (may be null) is the SCC's
/// closing hash; a mismatch rejects and removes the partial file.
#[neon::export(name = "segmentWriterFinish")]
fn segment_writer_finish<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    expected: Option<Handle<'cx, JsTypedArray<u8>>>,
) -> JsResult<'cx, JsPromise> {
    let slot = unbox_writer(cx, handle)?;
    let expected = expected.map(|e| e.as_slice(cx).to_vec());
    Ok(cx
        .task(move || {
            let mut s = slot.0.lock().map_err(|_| {
                (
                    "ERR_SEGMENT_CLOSED",
                    "segment writer failed earlier".to_string(),
                )
            })?;
            s.drain();
            if let Some(f) = s.failed.clone() {
                return Err(f);
            }
            let w = s
                .writer
                .take()
                .ok_or(("ERR_SEGMENT_CLOSED", "segment writer is closed".to_string()))?;
            w.finish(expected.as_deref())
                .map_err(|e| (e.code(), e.to_string()))
        })
        .promise(|mut cx, result| match result {
            Ok(sum) => {
                let o = cx.empty_object();
                let p = cx.string(sum.path.to_string_lossy());
                o.set(&mut cx, "path", p)?;
                let n = cx.number(sum.records as f64);
                o.set(&mut cx, "records", n)?;
                let b = cx.number(sum.blocks as f64);
                o.set(&mut cx, "blocks", b)?;
                let h = JsBuffer::from_slice(&mut cx, sum.closing_hash.as_bytes())?;
                o.set(&mut cx, "closingHash", h)?;
                let by = cx.number(sum.bytes as f64);
                o.set(&mut cx, "bytes", by)?;
                Ok(o)
            }
            Err((code, msg)) => throw_coded(&mut cx, code, &msg),
        }))
}

/// Abandons the writer off the event loop: queued chunks are dropped and the partial file removed.
#[neon::export(name = "segmentWriterAbort")]
fn segment_writer_abort<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsPromise> {
    let slot = unbox_writer(cx, handle)?;
    Ok(cx
        .task(move || {
            if let Ok(mut s) = slot.0.lock() {
                s.pending.clear();
                s.writer = None;
            }
        })
        .promise(|mut cx, ()| Ok(cx.undefined())))
}

/// Opens and validates a segment off the event loop; resolves a `SegmentReaderHandle`. Through the
/// footer cache: a file opened before and unchanged since (a batch's filter asked for again, the
/// index built after recovery) is not read and validated again.
#[neon::export(name = "segmentOpen")]
fn segment_open<'cx>(cx: &mut FunctionContext<'cx>, path: String) -> JsResult<'cx, JsPromise> {
    Ok(cx
        .task(move || SegmentReader::open_cached(Path::new(&path)))
        .promise(|mut cx, result| match result {
            Ok(r) => Ok(cx.boxed(Arc::new(ReaderBox(r)))),
            Err(e) => throw_seg(&mut cx, &e),
        }))
}

/// Opens a segment whose footer the footer cache holds (the file unchanged since), on this thread:
/// an open, a stat and a lookup. Returns a `SegmentReaderHandle`, or `undefined` when it is not
/// cached (`segmentOpen` then reads and validates it off the event loop).
#[neon::export(name = "segmentOpenCachedSync")]
fn segment_open_cached_sync<'cx>(
    cx: &mut FunctionContext<'cx>,
    path: String,
) -> JsResult<'cx, JsValue> {
    match SegmentReader::open_if_cached(Path::new(&path)) {
        Ok(Some(r)) => Ok(cx.boxed(Arc::new(ReaderBox(r))).upcast()),
        Ok(None) => Ok(cx.undefined().upcast()),
        Err(e) => throw_seg(cx, &e),
    }
}

/// What an open segment holds: header values, counts, closing hash, `fields` (4 numbers each, as
/// `segmentWriterCreate` takes them), `zones` (min key, max key per block per field, block-major)
/// and `filter` (min key, max key per field over the batch).
#[neon::export(name = "segmentInfo")]
fn segment_info<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsObject> {
    let rb = unbox_reader(cx, handle)?;
    let r = &rb.0;
    let h = r.header();
    let o = cx.empty_object();
    let v = cx.string(&h.dataset_id);
    o.set(cx, "datasetId", v)?;
    let v = JsBuffer::from_slice(cx, &h.batch_id)?;
    o.set(cx, "batchId", v)?;
    let v = cx.number(h.record_size);
    o.set(cx, "recordSize", v)?;
    let v = cx.number(h.block_size);
    o.set(cx, "blockSize", v)?;
    let v = cx.string(h.algorithm.name());
    o.set(cx, "algorithm", v)?;
    let v = cx.number(r.records() as f64);
    o.set(cx, "records", v)?;
    let v = cx.number(r.blocks() as f64);
    o.set(cx, "blocks", v)?;
    let v = JsBuffer::from_slice(cx, r.closing_hash().as_bytes())?;
    o.set(cx, "closingHash", v)?;
    let raw: Vec<u32> = h
        .fields
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
    let v = JsTypedArray::<u32>::from_slice(cx, &raw)?;
    o.set(cx, "fields", v)?;
    let keys: Vec<u64> = r.zones().iter().flat_map(|z| [z.min, z.max]).collect();
    let v = JsTypedArray::<u64>::from_slice(cx, &keys)?;
    o.set(cx, "zones", v)?;
    let keys: Vec<u64> = r
        .batch_filter()
        .iter()
        .flat_map(|z| [z.min, z.max])
        .collect();
    let v = JsTypedArray::<u64>::from_slice(cx, &keys)?;
    o.set(cx, "filter", v)?;
    Ok(o)
}

/// Reads the records of blocks `first .. first + count` off the event loop (CRCs checked).
#[neon::export(name = "segmentReadBlocks")]
fn segment_read_blocks<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    first: f64,
    count: f64,
) -> JsResult<'cx, JsPromise> {
    let rb = unbox_reader(cx, handle)?;
    let first = whole_u32(cx, first, "first block")?;
    let count = whole_u32(cx, count, "block count")?;
    Ok(cx
        .task(move || rb.0.read_blocks(first.into(), count.into()))
        .promise(|mut cx, result| match result {
            Ok(bytes) => JsBuffer::from_slice(&mut cx, &bytes),
            Err(e) => throw_seg(&mut cx, &e),
        }))
}

/// Recomputes a segment's chain off the event loop: `{ ok: true, records, blocks, closingHash }`
/// or `{ ok: false, code, message }` (never rejects for damage; rejects only for bad arguments).
#[neon::export(name = "segmentVerify")]
fn segment_verify<'cx>(cx: &mut FunctionContext<'cx>, path: String) -> JsResult<'cx, JsPromise> {
    Ok(cx
        .task(move || verify_segment(Path::new(&path)))
        .promise(|mut cx, result| {
            let o = cx.empty_object();
            match result {
                Ok(v) => {
                    let t = cx.boolean(true);
                    o.set(&mut cx, "ok", t)?;
                    let n = cx.number(v.records as f64);
                    o.set(&mut cx, "records", n)?;
                    let b = cx.number(v.blocks as f64);
                    o.set(&mut cx, "blocks", b)?;
                    let h = JsBuffer::from_slice(&mut cx, v.closing_hash.as_bytes())?;
                    o.set(&mut cx, "closingHash", h)?;
                }
                Err(e) => {
                    let f = cx.boolean(false);
                    o.set(&mut cx, "ok", f)?;
                    let c = cx.string(e.code());
                    o.set(&mut cx, "code", c)?;
                    let m = cx.string(e.to_string());
                    o.set(&mut cx, "message", m)?;
                }
            }
            Ok(o)
        }))
}

fn strings<'cx>(cx: &mut TaskContext<'cx>, paths: &[PathBuf]) -> JsResult<'cx, JsArray> {
    let a = cx.empty_array();
    for (i, p) in paths.iter().enumerate() {
        let s = cx.string(p.to_string_lossy());
        a.set(cx, i as u32, s)?;
    }
    Ok(a)
}

/// Crash recovery of a segment directory off the event loop: `{ complete, discarded,
/// quarantined: [{ path, code, reason }] }`.
#[neon::export(name = "segmentRecover")]
fn segment_recover<'cx>(
    cx: &mut FunctionContext<'cx>,
    dir: String,
    verify_chains: bool,
) -> JsResult<'cx, JsPromise> {
    Ok(cx
        .task(move || recover_dir(Path::new(&dir), RecoverOptions { verify_chains }))
        .promise(|mut cx, result| match result {
            Ok(r) => {
                let o = cx.empty_object();
                let c = strings(&mut cx, &r.complete)?;
                o.set(&mut cx, "complete", c)?;
                let d = strings(&mut cx, &r.discarded)?;
                o.set(&mut cx, "discarded", d)?;
                let q = cx.empty_array();
                for (i, item) in r.quarantined.iter().enumerate() {
                    let e = cx.empty_object();
                    let p = cx.string(item.path.to_string_lossy());
                    e.set(&mut cx, "path", p)?;
                    let c = cx.string(item.code);
                    e.set(&mut cx, "code", c)?;
                    let m = cx.string(&item.reason);
                    e.set(&mut cx, "reason", m)?;
                    q.set(&mut cx, i as u32, e)?;
                }
                o.set(&mut cx, "quarantined", q)?;
                Ok(o)
            }
            Err(e) => throw_seg(&mut cx, &e),
        }))
}

/// Sets how many record bytes this process keeps CRC-checked in memory for scans (the record
/// cache; 0: none). Returns the limit in force.
#[neon::export(name = "setRecordCacheBytes")]
fn set_record_cache<'cx>(cx: &mut FunctionContext<'cx>, bytes: f64) -> JsResult<'cx, JsNumber> {
    if !(bytes.is_finite() && bytes >= 0.0 && bytes.fract() == 0.0 && bytes <= 2f64.powi(53)) {
        return throw_coded(
            cx,
            "ERR_INVALID_ARG",
            &format!("record cache bytes must be a whole number of bytes, 0 or more, got {bytes}"),
        );
    }
    Ok(cx.number(set_record_cache_bytes(bytes as usize) as f64))
}

/// The record cache: its limit, what it holds (pieces and narrow copies), and the pieces found
/// and read since start.
#[neon::export(name = "recordCacheStats")]
fn record_cache<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsObject> {
    let s = record_cache_stats();
    let o = cx.empty_object();
    for (name, v) in [
        ("limit", s.limit as f64),
        ("bytes", s.bytes as f64),
        ("pieces", s.pieces as f64),
        ("hits", s.hits as f64),
        ("misses", s.misses as f64),
        ("narrowBytes", s.narrow_bytes as f64),
        ("narrowPieces", s.narrow_pieces as f64),
    ] {
        let n = cx.number(v);
        o.set(cx, name, n)?;
    }
    Ok(o)
}
