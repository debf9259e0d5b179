//! GPU filter offload for the Storage Node's scan (`filter_device_selector: gpu`).
//!
//! - `codegen`: a compiled filter program (`ScanFilter`) as kernel source, one function per
//!   predicate, in C that CUDA also accepts.
//! - `device`: CUDA through `cudarc`, which loads the driver (`libcuda`) and NVRTC at run time. No
//!   CUDA toolkit is needed to build, and the addon runs the same on machines without a GPU.
//!   Kernels are compiled by NVRTC from the generated source and kept per program. Records move in
//!   large pinned chunks on two streams, so copies overlap the kernels.
//! - `offload`: when the GPU is worth it (a cost estimate, so small scans stay on the CPU) and the
//!   process-wide counters that `/health` and `/metrics` show.
//!
//! The generated source is checked on every machine: `host_check` (tests) compiles the same text
//! as C with the host's compiler and runs it against the CPU kernel over every filter the scan
//! tests build. On a GPU machine the same cases also run on the device.

pub mod codegen;
mod device;
pub mod offload;

#[cfg(test)]
pub(crate) mod host_check;
#[cfg(test)]
mod tests;

pub use device::{GpuDevice, GpuFilter, GpuUnavailable};
pub use offload::{
    append_flagged, enable_gpu, process_offload, FlagBackend, FlagKernel, GpuCounters, Offload,
    GPU_MIN_BYTES, GPU_STEP_FACTOR,
};
