//! When a scan goes to the GPU, the backend it goes to, and what the process counts about it.
//!
//! A [`SegmentScanner`](crate::scan::SegmentScanner) with an [`Offload`] reads steps of up to
//! [`GPU_STEP_FACTOR`] times the usual size (unless it audits the hash chain), and hands each
//! step's wanted records to the offload's backend in one call when they are at least
//! `min_bytes`: the backend evaluates the filter, and an aggregate folds the records it selects on
//! the CPU, with the same code in the same order, so partials are identical. Smaller steps and
//! audits stay on the CPU kernel. A backend error is counted and the step is redone on the CPU
//! kernel, so a query never fails because of the GPU.
//!
//! The Storage Node sets the process's offload once at start (`enable_gpu`); scanners opened after
//! that take it. Tests give scanners their own offload over the host-compiled backend instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::{GpuDevice, GpuFilter, GpuUnavailable};
use crate::scan::{ScanFilter, CHUNK};

/// Steps whose wanted records are fewer bytes than this stay on the CPU kernel.
///
/// - A GPU step pays a fixed cost before its flags return: a kernel launch and a stream round
///   trip (10-20 µs), plus copying the records into pinned memory and over PCIe (25 GB/s Gen4,
///   50 GB/s Gen5).
/// - The CPU kernel filters 150-byte records at 2-8 GB/s per core (docs/BENCHMARKS.md, "Pushdown
///   scan kernel"), so the GPU can only win once a step is large enough to hide the fixed cost.
///
/// 16 MiB (one default step of whole records) is a first estimate: the copy takes about 0.7 ms at
/// 25 GB/s, against 2-8 ms on one core. `gpu_filter` measures it on a GPU machine (docs/gpu.md).
pub const GPU_MIN_BYTES: usize = 16 << 20;

/// How many times the usual step a scanner with an offload reads for a plain filter, so the
/// GPU gets large transfers (the usual step is at most 16 MiB).
pub const GPU_STEP_FACTOR: u64 = 8;

/// A filter compiled for a backend: one flag per record.
pub trait FlagKernel: Send + Sync {
    /// One flag per whole record of `data`: 1 when it matches, else 0.
    fn flags(&self, data: &[u8]) -> Result<Vec<u8>, GpuUnavailable>;
}

/// Where offloaded filters run: a GPU, or (in tests) the generated source compiled on the host.
pub trait FlagBackend: Send + Sync {
    /// The device, for logs and /health.
    fn device(&self) -> String;
    /// `filter` compiled for this backend (the backend caches by program).
    fn compile(&self, filter: &ScanFilter) -> Result<Arc<dyn FlagKernel>, GpuUnavailable>;
}

impl FlagKernel for GpuFilter {
    fn flags(&self, data: &[u8]) -> Result<Vec<u8>, GpuUnavailable> {
        GpuFilter::flags(self, data)
    }
}

impl FlagBackend for Arc<GpuDevice> {
    fn device(&self) -> String {
        let (major, minor) = self.capability();
        format!(
            "{} ({} GiB, compute {major}.{minor})",
            self.name(),
            self.memory() >> 30
        )
    }
    fn compile(&self, filter: &ScanFilter) -> Result<Arc<dyn FlagKernel>, GpuUnavailable> {
        Ok(Arc::new(GpuDevice::compile(self, filter)?))
    }
}

/// What this process's GPU offload has done, for /health and /metrics.
#[derive(Debug, Default)]
pub struct GpuCounters {
    /// Record bytes filtered on the GPU.
    pub bytes_filtered: AtomicU64,
    /// Steps the GPU ran.
    pub steps: AtomicU64,
    /// Steps that stayed on the CPU kernel: under `min_bytes`, or the GPU was busy with another
    /// scan's step.
    pub cpu_fallbacks: AtomicU64,
    /// Steps the GPU failed (a driver or compile error); they were redone on the CPU kernel.
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
            ("steps", self.steps.load(Ordering::Relaxed)),
            ("cpu_fallbacks", self.cpu_fallbacks.load(Ordering::Relaxed)),
            ("errors", self.errors.load(Ordering::Relaxed)),
        ]
    }
}

/// A backend, the smallest step it takes, and its counters.
pub struct Offload {
    backend: Box<dyn FlagBackend>,
    min_bytes: usize,
    counters: GpuCounters,
    last_error: RwLock<Option<String>>,
}

impl Offload {
    /// Offload to `backend` for steps of at least `min_bytes` of wanted records.
    pub fn new(backend: Box<dyn FlagBackend>, min_bytes: usize) -> Arc<Offload> {
        Arc::new(Offload {
            backend,
            min_bytes,
            counters: GpuCounters::default(),
            last_error: RwLock::new(None),
        })
    }

    /// The backend's device.
    pub fn device(&self) -> String {
        self.backend.device()
    }

    /// The counters.
    pub fn counters(&self) -> &GpuCounters {
        &self.counters
    }

    /// The last backend error, if any.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn failed(&self, e: GpuUnavailable) {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.write().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
    }

    /// Whether a step with `bytes` of wanted records goes to the backend; when not, it is counted
    /// as a step left on the CPU kernel.
    pub fn takes(&self, bytes: usize) -> bool {
        if bytes >= self.min_bytes {
            return true;
        }
        self.counters.cpu_fallbacks.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// The backend's flags for `data`, counted; `None` (counted as a fallback or an error) when the
    /// caller must use the CPU kernel instead.
    fn flags(&self, filter: &ScanFilter, data: &[u8]) -> Option<Vec<u8>> {
        match self.backend.compile(filter).and_then(|k| k.flags(data)) {
            Ok(flags) => {
                self.counters.steps.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .bytes_filtered
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                Some(flags)
            }
            Err(GpuUnavailable::Busy) => {
                self.counters.cpu_fallbacks.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(e) => {
                self.failed(e);
                None
            }
        }
    }

    /// `ScanFilter::filter_into` on the backend: appends the matching records of `data` (whole
    /// records) to `out` in order and returns how many; the CPU kernel when the backend cannot.
    pub fn filter_into(&self, filter: &ScanFilter, data: &[u8], out: &mut Vec<u8>) -> u64 {
        match self.flags(filter, data) {
            Some(flags) => append_flagged(&flags, data, filter.record_size(), out),
            None => filter.filter_into(data, out),
        }
    }

    /// `ScanFilter::select_chunks` with the filter on the backend: `visit` gets each run of up to
    /// `CHUNK` records that holds a match, with the matches' indices in it, exactly as the CPU
    /// kernel calls it (so an aggregate folds the same records in the same order). Returns how many
    /// matched.
    pub fn select_chunks<F: FnMut(&[u8], &[u32])>(
        &self,
        filter: &ScanFilter,
        data: &[u8],
        mut visit: F,
    ) -> u64 {
        let Some(flags) = self.flags(filter, data) else {
            return filter.select_chunks(data, visit);
        };
        let rs = filter.record_size();
        let mut sel = Vec::with_capacity(CHUNK);
        let mut n = 0u64;
        for (k, chunk) in flags.chunks(CHUNK).enumerate() {
            sel.clear();
            sel.extend(
                chunk
                    .iter()
                    .enumerate()
                    .filter(|(_, &f)| f != 0)
                    .map(|(i, _)| i as u32),
            );
            if !sel.is_empty() {
                let at = k * CHUNK * rs;
                visit(&data[at..at + chunk.len() * rs], &sel);
                n += sel.len() as u64;
            }
        }
        n
    }
}

/// Appends the records of `data` (whole, `rs` bytes each) whose flag is set to `out`, in order;
/// returns how many.
pub fn append_flagged(flags: &[u8], data: &[u8], rs: usize, out: &mut Vec<u8>) -> u64 {
    let mut n = 0u64;
    for (rec, _) in data.chunks_exact(rs).zip(flags).filter(|(_, &f)| f != 0) {
        out.extend_from_slice(rec);
        n += 1;
    }
    n
}

static PROCESS: RwLock<Option<Arc<Offload>>> = RwLock::new(None);

/// The process's offload, if the Storage Node turned one on.
pub fn process_offload() -> Option<Arc<Offload>> {
    PROCESS.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Opens GPU `ordinal` and makes it the process's offload for steps of at least
/// [`GPU_MIN_BYTES`] (`filter_device_selector: gpu`); returns the device's description, or why
/// there is none (then filters stay on the CPU kernel).
pub fn enable_gpu(ordinal: usize) -> Result<String, GpuUnavailable> {
    let dev = GpuDevice::open(ordinal)?;
    let offload = Offload::new(Box::new(dev), GPU_MIN_BYTES);
    let device = offload.device();
    *PROCESS.write().unwrap_or_else(|p| p.into_inner()) = Some(offload);
    Ok(device)
}
