//! The GPU itself: CUDA's driver API and NVRTC through `cudarc`, both loaded at run time.
//!
//! `cudarc` panics when a library or symbol it needs is missing, so every call into it runs
//! inside `guarded`, which turns a panic into [`GpuUnavailable::Driver`]; the libraries' presence
//! is checked first so the usual case (no GPU) is a plain error, not an unwind.

use std::num::NonZeroUsize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PinnedHostSlice,
    PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use rayon::prelude::*;

use super::codegen;
use crate::scan::ScanFilter;

/// Record bytes per chunk moved to the device; two chunks are in flight, one per stream.
const CHUNK_BYTES: usize = 64 << 20;
/// Most records (flags) per chunk: records of 8 bytes or more fill a chunk.
const MAX_CHUNK_RECORDS: usize = CHUNK_BYTES / 8;
/// Compiled programs kept per device; the least recently used is unloaded beyond this (each
/// distinct query's filter is a program of its own).
const MAX_MODULES: usize = 256;
/// Threads per block of the filter kernel.
const BLOCK: u32 = 256;

/// Why the GPU cannot run a scan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuUnavailable {
    #[error("no CUDA driver (libcuda.so) on this host")]
    NoDriver,
    #[error("no NVRTC (libnvrtc.so, CUDA's runtime compiler) on this host; it turns filter programs into kernels")]
    NoNvrtc,
    #[error("the CUDA driver finds no GPU {0}")]
    NoDevice(usize),
    #[error("CUDA: {0}")]
    Driver(String),
    /// Another scan step holds the device's staging buffers.
    #[error("the GPU is busy with another scan step")]
    Busy,
}

fn drv(e: DriverError) -> GpuUnavailable {
    GpuUnavailable::Driver(e.to_string())
}

/// Runs `f`, turning a panic inside cudarc (a library or symbol missing) into an error.
fn guarded<T>(f: impl FnOnce() -> Result<T, GpuUnavailable>) -> Result<T, GpuUnavailable> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the CUDA library panicked".into());
        Err(GpuUnavailable::Driver(msg))
    })
}

/// One GPU, its two copy/compute streams and the kernels compiled for it.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    name: String,
    memory: usize,
    capability: (i32, i32),
    streams: [Arc<CudaStream>; 2],
    /// Kernels by program source (a function keeps its module loaded).
    modules: Mutex<lru::LruCache<String, CudaFunction>>,
    /// Pinned and device staging for the two streams, allocated on the first scan (one scan step
    /// on the device at a time).
    lanes: Mutex<Option<[Lane; 2]>>,
}

impl GpuDevice {
    /// Opens GPU `ordinal`, or says why there is none to use.
    pub fn open(ordinal: usize) -> Result<Arc<GpuDevice>, GpuUnavailable> {
        guarded(|| {
            // SAFETY: each only tries to load the library (dlopen) and reports whether it could.
            if !unsafe { cudarc::driver::sys::is_culib_present() } {
                return Err(GpuUnavailable::NoDriver);
            }
            // SAFETY: as above.
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err(GpuUnavailable::NoNvrtc);
            }
            let count = CudaContext::device_count().map_err(drv)?;
            if count <= ordinal as i32 {
                return Err(GpuUnavailable::NoDevice(ordinal));
            }
            let ctx = CudaContext::new(ordinal).map_err(drv)?;
            let streams = [
                ctx.new_stream().map_err(drv)?,
                ctx.new_stream().map_err(drv)?,
            ];
            Ok(Arc::new(GpuDevice {
                name: ctx.name().map_err(drv)?,
                memory: ctx.total_mem().map_err(drv)?,
                capability: ctx.compute_capability().map_err(drv)?,
                ctx,
                streams,
                modules: Mutex::new(lru::LruCache::new(
                    NonZeroUsize::new(MAX_MODULES).unwrap_or(NonZeroUsize::MIN),
                )),
                lanes: Mutex::new(None),
            }))
        })
    }

    /// The device's name, as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's memory in bytes.
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// The device's compute capability (major, minor).
    pub fn capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The kernel of `filter`, compiled by NVRTC the first time this program is seen.
    pub fn compile(self: &Arc<Self>, filter: &ScanFilter) -> Result<GpuFilter, GpuUnavailable> {
        let source = codegen::program(&[("q", filter)]);
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        let func = match modules.get(&source) {
            Some(f) => f.clone(),
            None => {
                let func = guarded(|| {
                    let opts = CompileOptions {
                        name: Some("hd_filter.cu".into()),
                        ..Default::default()
                    };
                    let ptx = compile_ptx_with_opts(&source, opts)
                        .map_err(|e| GpuUnavailable::Driver(format!("NVRTC: {e}")))?;
                    let module = self.ctx.load_module(ptx).map_err(drv)?;
                    module.load_function("hd_filter_q").map_err(drv)
                })?;
                modules.put(source, func.clone());
                func
            }
        };
        Ok(GpuFilter {
            dev: self.clone(),
            func,
            record_size: filter.record_size(),
        })
    }
}

/// One stream's staging, allocated once per device and reused: pinned host buffers and device
/// buffers for a chunk of records and its flags, and which records the chunk in flight holds.
struct Lane {
    pin_in: PinnedHostSlice<u8>,
    pin_out: PinnedHostSlice<u8>,
    dev_in: CudaSlice<u8>,
    dev_out: CudaSlice<u8>,
    pending: Option<(usize, usize)>,
}

impl Lane {
    fn new(dev: &GpuDevice, stream: &Arc<CudaStream>) -> Result<Lane, DriverError> {
        // SAFETY: pinned buffers are written (by us or by a copy) before they are read.
        let (pin_in, pin_out) = unsafe {
            (
                dev.ctx.alloc_pinned::<u8>(CHUNK_BYTES)?,
                dev.ctx.alloc_pinned::<u8>(MAX_CHUNK_RECORDS)?,
            )
        };
        Ok(Lane {
            pin_in,
            pin_out,
            dev_in: stream.alloc_zeros::<u8>(CHUNK_BYTES)?,
            dev_out: stream.alloc_zeros::<u8>(MAX_CHUNK_RECORDS)?,
            pending: None,
        })
    }

    /// Waits for the lane's chunk in flight and copies its flags out.
    fn collect(&mut self, stream: &CudaStream, flags: &mut [u8]) -> Result<(), DriverError> {
        if let Some((first, count)) = self.pending.take() {
            stream.synchronize()?;
            flags[first..first + count].copy_from_slice(&self.pin_out.as_slice()?[..count]);
        }
        Ok(())
    }
}

/// A filter program compiled for one GPU.
pub struct GpuFilter {
    dev: Arc<GpuDevice>,
    func: CudaFunction,
    record_size: usize,
}

impl GpuFilter {
    /// One flag per whole record of `data`: 1 when it matches, else 0. [`GpuUnavailable::Busy`]
    /// when another scan holds the device's staging buffers (the caller filters on the CPU).
    pub fn flags(&self, data: &[u8]) -> Result<Vec<u8>, GpuUnavailable> {
        let mut lanes = match self.dev.lanes.try_lock() {
            Ok(l) => l,
            Err(std::sync::TryLockError::WouldBlock) => return Err(GpuUnavailable::Busy),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        };
        guarded(|| {
            if lanes.is_none() {
                let s = &self.dev.streams;
                *lanes = Some([
                    Lane::new(&self.dev, &s[0]).map_err(drv)?,
                    Lane::new(&self.dev, &s[1]).map_err(drv)?,
                ]);
            }
            let lanes = lanes
                .as_mut()
                .ok_or_else(|| GpuUnavailable::Driver("no staging buffers".into()))?;
            let result = self.flags_on_device(lanes, data).map_err(drv);
            // A failed step leaves nothing in flight for the next one.
            for l in lanes.iter_mut() {
                l.pending = None;
            }
            result
        })
    }

    /// `ScanFilter::filter_into` on the GPU: appends the matching records of `data` to `out` in
    /// their order and returns how many matched.
    pub fn filter_into(&self, data: &[u8], out: &mut Vec<u8>) -> Result<u64, GpuUnavailable> {
        let flags = self.flags(data)?;
        Ok(super::append_flagged(&flags, data, self.record_size, out))
    }

    fn flags_on_device(&self, lanes: &mut [Lane; 2], data: &[u8]) -> Result<Vec<u8>, DriverError> {
        let rs = self.record_size;
        let n = data.len() / rs;
        let mut flags = vec![0u8; n];
        let per = (CHUNK_BYTES / rs).clamp(1, MAX_CHUNK_RECORDS);
        for (c, first) in (0..n).step_by(per).enumerate() {
            let (lane, stream) = (&mut lanes[c % 2], &self.dev.streams[c % 2]);
            // The lane's previous chunk must be finished before its buffers are reused.
            lane.collect(stream, &mut flags)?;
            let count = per.min(n - first);
            let bytes = count * rs;
            // Staged into pinned memory on every core: one thread copies at ~10 GB/s, below PCIe.
            let src = &data[first * rs..first * rs + bytes];
            let pinned = &mut lane.pin_in.as_mut_slice()?[..bytes];
            pinned
                .par_chunks_mut(1 << 20)
                .zip(src.par_chunks(1 << 20))
                .for_each(|(d, s)| d.copy_from_slice(s));
            // Plain slices of pinned memory: the copies are asynchronous and nothing waits for
            // them but `collect`, which synchronizes the stream before the buffers are touched.
            stream.memcpy_htod(
                &lane.pin_in.as_slice()?[..bytes],
                &mut lane.dev_in.slice_mut(..bytes),
            )?;
            let records = count as u64;
            let blocks = (count as u32).div_ceil(BLOCK).min(1 << 16);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut launch = stream.launch_builder(&self.func);
            launch
                .arg(&lane.dev_in)
                .arg(&records)
                .arg(&mut lane.dev_out);
            // SAFETY: the kernel reads `records` whole records of `record_size` bytes from dev_in
            // (CHUNK_BYTES long) and writes `records` (≤ MAX_CHUNK_RECORDS) flags to dev_out.
            unsafe { launch.launch(cfg) }?;
            stream.memcpy_dtoh(
                &lane.dev_out.slice(..count),
                &mut lane.pin_out.as_mut_slice()?[..count],
            )?;
            lane.pending = Some((first, count));
        }
        for (c, lane) in lanes.iter_mut().enumerate() {
            lane.collect(&self.dev.streams[c], &mut flags)?;
        }
        Ok(flags)
    }
}
