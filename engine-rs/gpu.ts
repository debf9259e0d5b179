/**
 * GPU filter offload (engine-rs `gpu`): a Storage Node with `filter_device_selector: gpu` turns
 * the host's GPU on at start; scan steps of at least 16 MiB (engine-rs `GPU_MIN_BYTES`) then have their filter
 * evaluated on it (kernels generated from the filter program and compiled by NVRTC; an aggregate
 * folds the selected records on the CPU), and audits and smaller steps stay on the CPU kernel.
 * docs/gpu.md has the design and the figures.
 */
import { native, type GpuStats } from './native';

export type { GpuStats } from './native';

/**
 * Opens GPU 0 as this process's filter offload; resolves its description (name, memory, compute
 * capability). Rejects (code `ERR_GPU_UNAVAILABLE`) with the reason when there is none to use: no
 * driver, no NVRTC, no device.
 */
export function enableGpuFilter(): Promise<string> {
  return native.gpuEnable();
}

/** What the process's GPU offload has done. */
export function gpuStats(): GpuStats {
  return native.gpuStats();
}
