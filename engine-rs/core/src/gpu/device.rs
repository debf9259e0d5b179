//! The GPU itself: CUDA's driver API and NVRTC through `cudarc`, both loaded at run time.
//!
//! `cudarc` panics when a library or symbol it needs is missing, so every call into it runs
//! inside `guarded`, which turns a panic into [`GpuUnavailable::Driver`]; the libraries' presence
//! is checked first so the usual case (no GPU) is a plain error, not an unwind.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};

use super::codegen;
use crate::scan::ScanFilter;

/// Record bytes per chunk moved to the device; two chunks are in flight, one per stream.
const CHUNK_BYTES: usize = 64 << 20;
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
    modules: Mutex<HashMap<String, (Arc<CudaModule>, CudaFunction)>>,
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
                modules: Mutex::new(HashMap::new()),
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
            Some((_, f)) => f.clone(),
            None => {
                let (module, func) = guarded(|| {
                    let opts = CompileOptions {
                        name: Some("hd_filter.cu".into()),
                        ..Default::default()
                    };
                    let ptx = compile_ptx_with_opts(&source, opts)
                        .map_err(|e| GpuUnavailable::Driver(format!("NVRTC: {e}")))?;
                    let module = self.ctx.load_module(ptx).map_err(drv)?;
                    let func = module.load_function("hd_filter_q").map_err(drv)?;
                    Ok((module, func))
                })?;
                modules.insert(source, (module, func.clone()));
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

/// One stream's staging: pinned host buffers and device buffers for a chunk, and which records
/// its chunk in flight holds.
struct Lane {
    pin_in: PinnedHostSlice<u8>,
    pin_out: PinnedHostSlice<u8>,
    dev_in: CudaSlice<u8>,
    dev_out: CudaSlice<u8>,
    pending: Option<(usize, usize)>,
}

/// A filter program compiled for one GPU.
pub struct GpuFilter {
    dev: Arc<GpuDevice>,
    func: CudaFunction,
    record_size: usize,
}

impl GpuFilter {
    /// One flag per whole record of `data`: 1 when it matches, else 0.
    pub fn flags(&self, data: &[u8]) -> Result<Vec<u8>, GpuUnavailable> {
        guarded(|| self.flags_on_device(data).map_err(drv))
    }

    /// `ScanFilter::filter_into` on the GPU: appends the matching records of `data` to `out` in
    /// their order and returns how many matched.
    pub fn filter_into(&self, data: &[u8], out: &mut Vec<u8>) -> Result<u64, GpuUnavailable> {
        let flags = self.flags(data)?;
        let rs = self.record_size;
        let mut n = 0u64;
        for (i, _) in flags.iter().enumerate().filter(|(_, &f)| f != 0) {
            out.extend_from_slice(&data[i * rs..(i + 1) * rs]);
            n += 1;
        }
        Ok(n)
    }

    fn lane(&self, records: usize) -> Result<Lane, DriverError> {
        let ctx = &self.dev.ctx;
        let stream = &self.dev.streams[0];
        // SAFETY: pinned buffers are fully written (by us or by a copy) before they are read.
        let (pin_in, pin_out) = unsafe {
            (
                ctx.alloc_pinned::<u8>(records * self.record_size)?,
                ctx.alloc_pinned::<u8>(records)?,
            )
        };
        Ok(Lane {
            pin_in,
            pin_out,
            dev_in: stream.alloc_zeros::<u8>(records * self.record_size)?,
            dev_out: stream.alloc_zeros::<u8>(records)?,
            pending: None,
        })
    }

    fn flags_on_device(&self, data: &[u8]) -> Result<Vec<u8>, DriverError> {
        let rs = self.record_size;
        let n = data.len() / rs;
        let mut flags = vec![0u8; n];
        if n == 0 {
            return Ok(flags);
        }
        let per = (CHUNK_BYTES / rs).clamp(1, n);
        let mut lanes = [self.lane(per)?, self.lane(per)?];
        let collect =
            |lane: &mut Lane, stream: &CudaStream, flags: &mut [u8]| -> Result<(), DriverError> {
                if let Some((first, count)) = lane.pending.take() {
                    stream.synchronize()?;
                    flags[first..first + count].copy_from_slice(&lane.pin_out.as_slice()?[..count]);
                }
                Ok(())
            };
        for (c, first) in (0..n).step_by(per).enumerate() {
            let (lane, stream) = (&mut lanes[c % 2], &self.dev.streams[c % 2]);
            // The lane's previous chunk must be finished before its buffers are reused.
            collect(lane, stream, &mut flags)?;
            let count = per.min(n - first);
            lane.pin_in.as_mut_slice()?[..count * rs]
                .copy_from_slice(&data[first * rs..(first + count) * rs]);
            stream.memcpy_htod(&lane.pin_in, &mut lane.dev_in)?;
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
            // (which holds per * record_size bytes) and writes `records` flags to dev_out.
            unsafe { launch.launch(cfg) }?;
            stream.memcpy_dtoh(&lane.dev_out, &mut lane.pin_out)?;
            lane.pending = Some((first, count));
        }
        for (c, lane) in lanes.iter_mut().enumerate() {
            collect(lane, &self.dev.streams[c], &mut flags)?;
        }
        Ok(flags)
    }
}
