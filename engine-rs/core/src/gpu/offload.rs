//! When a scan goes to the GPU, and what the process counts about it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Scans of fewer bytes stay on the CPU kernel.
///
/// - A GPU scan pays a fixed cost before its first match flag returns: a kernel launch and the
///   stream round trip, about 10-20 µs, plus the first chunk's copy.
/// - It then moves every byte over PCIe: 25 GB/s (Gen4 x16) to 50 GB/s (Gen5).
/// - The CPU kernel filters 150-byte records at 2-8 GB/s per core (docs/BENCHMARKS.md, "Pushdown
///   scan kernel"), so the GPU can only win once the copy is at least as fast as the cores.
///
/// 64 MiB is the threshold: at 25 GB/s that is ~2.7 ms of copy, against ~8 ms on one CPU core at
/// 8 GB/s. Below it the fixed costs weigh more. To be confirmed by `gpu_filter` on a GPU
/// machine (docs/gpu.md).
pub const GPU_MIN_BYTES: usize = 64 << 20;

/// Whether a scan of `bytes` should run on the GPU rather than the CPU kernel.
pub fn offload_worth_it(bytes: usize) -> bool {
    bytes >= GPU_MIN_BYTES
}

/// What this process's GPU offload has done, for /health and /metrics.
#[derive(Debug, Default)]
pub struct GpuCounters {
    /// Record bytes filtered on the GPU.
    pub bytes_filtered: AtomicU64,
    /// Scans the GPU ran.
    pub scans: AtomicU64,
    /// Scans that went to the CPU kernel while `gpu` was selected: too small, or no device.
    pub cpu_fallbacks: AtomicU64,
    /// Scans the GPU failed (a driver or compile error); they were redone on the CPU kernel.
    pub errors: AtomicU64,
}

impl GpuCounters {
    /// The counters as (name, value) pairs, in a fixed order.
    pub fn snapshot(&self) -> [(&'static str, u64); 4] {
        [
            (
                "bytes_filtered",
                self.bytes_filtered.load(Ordering::Relaxed),
            ),
            ("scans", self.scans.load(Ordering::Relaxed)),
            ("cpu_fallbacks", self.cpu_fallbacks.load(Ordering::Relaxed)),
            ("errors", self.errors.load(Ordering::Relaxed)),
        ]
    }
}
