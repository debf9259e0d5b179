//! Thread CPU affinity (core `affinity`): read and set a thread's CPUs, list the process's
//! threads, the engine's worker CPUs, and the pool-thread pinning round (a Neon task per pool thread).

use std::time::Duration;

use hd_engine_core::affinity as core_affinity;
use neon::prelude::*;
use neon::types::extract::Error as TaskError;

use crate::util::throw_coded;

/// CPU numbers from JS numbers (whole, 0..1023).
fn cpus_of<'cx, C: Context<'cx>>(cx: &mut C, cpus: &[f64]) -> NeonResult<Vec<usize>> {
    let mut out = Vec::with_capacity(cpus.len());
    for &c in cpus {
        if c.fract() != 0.0 || c < 0.0 || c >= core_affinity::MAX_CPUS as f64 {
            return throw_coded(
                cx,
                "ERR_RANGE",
                &format!(
                    "a CPU number must be a whole number 0..{}, got {c}",
                    core_affinity::MAX_CPUS - 1
                ),
            );
        }
        out.push(c as usize);
    }
    Ok(out)
}

fn tid_of<'cx, C: Context<'cx>>(cx: &mut C, tid: f64) -> NeonResult<i32> {
    if tid.fract() != 0.0 || tid < 0.0 || tid > i32::MAX as f64 {
        return throw_coded(
            cx,
            "ERR_RANGE",
            &format!("a thread id must be a whole number ≥ 0, got {tid}"),
        );
    }
    Ok(tid as i32)
}

fn io_code(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(22) => "EINVAL",
        Some(3) => "ESRCH",
        Some(1) => "EPERM",
        _ if e.kind() == std::io::ErrorKind::InvalidInput => "ERR_RANGE",
        _ => "ERR_AFFINITY",
    }
}

/// The CPUs thread `tid` may run on (0: the calling thread), ascending.
#[neon::export(name = "affinityThreadCpus")]
fn thread_cpus<'cx>(cx: &mut FunctionContext<'cx>, tid: f64) -> JsResult<'cx, JsArray> {
    let tid = tid_of(cx, tid)?;
    match core_affinity::thread_cpus(tid) {
        Ok(cpus) => {
            let arr = cx.empty_array();
            for (i, c) in cpus.iter().enumerate() {
                let n = cx.number(*c as f64);
                arr.set(cx, i as u32, n)?;
            }
            Ok(arr)
        }
        Err(e) => throw_coded(
            cx,
            io_code(&e),
            &format!("cannot read the CPUs of thread {tid}: {e}"),
        ),
    }
}

/// Restricts thread `tid` (0: the calling thread) to `cpus`.
#[neon::export(name = "affinitySetThreadCpus")]
fn set_thread_cpus<'cx>(
    cx: &mut FunctionContext<'cx>,
    tid: f64,
    cpus: Vec<f64>,
) -> JsResult<'cx, JsUndefined> {
    let tid = tid_of(cx, tid)?;
    let cpus = cpus_of(cx, &cpus)?;
    match core_affinity::set_thread_cpus(tid, &cpus) {
        Ok(()) => Ok(cx.undefined()),
        Err(e) => throw_coded(
            cx,
            io_code(&e),
            &format!("cannot pin thread {tid} to CPUs {cpus:?}: {e}"),
        ),
    }
}

/// The calling thread's kernel thread id.
#[neon::export(name = "affinityCurrentTid")]
fn current_tid() -> f64 {
    core_affinity::current_tid() as f64
}

/// The process's threads as `[tid, name]` pairs, by tid.
#[neon::export(name = "affinityProcessThreads")]
fn process_threads<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsArray> {
    let threads = match core_affinity::process_threads() {
        Ok(t) => t,
        Err(e) => {
            return throw_coded(
                cx,
                "ERR_AFFINITY",
                &format!("cannot list /proc/self/task: {e}"),
            )
        }
    };
    let arr = cx.empty_array();
    for (i, (tid, name)) in threads.iter().enumerate() {
        let pair = cx.empty_array();
        let t = cx.number(*tid as f64);
        let n = cx.string(name);
        pair.set(cx, 0, t)?;
        pair.set(cx, 1, n)?;
        arr.set(cx, i as u32, pair)?;
    }
    Ok(arr)
}

/// Sets the CPUs of worker threads the engine starts from now on (the hashing pool); empty: not pinned.
#[neon::export(name = "affinitySetWorkerCpus")]
fn set_worker_cpus<'cx>(
    cx: &mut FunctionContext<'cx>,
    cpus: Vec<f64>,
) -> JsResult<'cx, JsUndefined> {
    let cpus = cpus_of(cx, &cpus)?;
    match core_affinity::set_worker_cpus(&cpus) {
        Ok(()) => Ok(cx.undefined()),
        Err(e) => throw_coded(
            cx,
            io_code(&e),
            &format!("cannot use CPUs {cpus:?} for the engine's workers: {e}"),
        ),
    }
}

/// On a libuv pool thread: pins it to `cpus` and waits (at most `waitMs`) for the round's other
/// `expected` calls; resolves with the pool thread's tid.
#[neon::export(task, name = "affinityPinPoolWorkerAsync")]
fn pin_pool_worker(
    round: f64,
    expected: f64,
    cpus: Vec<f64>,
    wait_ms: f64,
) -> Result<f64, TaskError> {
    let cpus: Vec<usize> = cpus.iter().map(|&c| c as usize).collect();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= core_affinity::MAX_CPUS) {
        return Err(TaskError::from(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("bad CPU set {cpus:?}"),
        )));
    }
    let wait = Duration::from_millis(wait_ms.clamp(0.0, 60_000.0) as u64);
    core_affinity::pin_pool_worker(round as u64, expected as usize, &cpus, wait)
        .map(|tid| tid as f64)
        .map_err(TaskError::from)
}
