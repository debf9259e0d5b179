//! GPU filter offload (core `gpu`): turning the process's GPU on for scans, and its counters.

use hd_engine_core::gpu::{enable_gpu, process_offload};
use neon::prelude::*;

use crate::util::throw_coded;

/// Opens GPU 0 off the event loop (creating a CUDA context takes a while) and makes it this
/// process's offload for scan steps of at least 16 MiB (core `GPU_MIN_BYTES`); resolves the
/// device's description, or rejects with code `ERR_GPU_UNAVAILABLE` and the reason.
#[neon::export(name = "gpuEnable")]
fn gpu_enable<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsPromise> {
    Ok(cx
        .task(|| enable_gpu(0))
        .promise(|mut cx, result| match result {
            Ok(device) => Ok(cx.string(device)),
            Err(e) => throw_coded(&mut cx, "ERR_GPU_UNAVAILABLE", &e.to_string()),
        }))
}

/// The process's offload: `{ enabled, device, bytesFiltered, steps, cpuFallbacks, errors,
/// lastError }` (`enabled` false and zeros when no GPU was turned on).
#[neon::export(name = "gpuStats")]
fn gpu_stats<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsObject> {
    let o = cx.empty_object();
    let offload = process_offload();
    let enabled = cx.boolean(offload.is_some());
    o.set(cx, "enabled", enabled)?;
    let device = cx.string(offload.as_ref().map(|x| x.device()).unwrap_or_default());
    o.set(cx, "device", device)?;
    let counts = offload
        .as_ref()
        .map(|x| x.counters().snapshot().map(|(_, v)| v))
        .unwrap_or([0; 4]);
    for (name, v) in ["bytesFiltered", "steps", "cpuFallbacks", "errors"]
        .iter()
        .zip(counts)
    {
        let n = cx.number(v as f64);
        o.set(cx, *name, n)?;
    }
    let last: Handle<JsValue> = match offload.and_then(|x| x.last_error()) {
        Some(e) => cx.string(e).upcast(),
        None => cx.null().upcast(),
    };
    o.set(cx, "lastError", last)?;
    Ok(o)
}
