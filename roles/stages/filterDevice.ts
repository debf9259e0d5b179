/**
 * `filter_device_selector` of a Storage Node (config.json): where query filters run.
 * - `cpu` and `host`: the engine-rs kernel on the host's cores.
 * - `gpu`: the host's GPU evaluates the filter of scan steps of at least 16 MiB (an aggregate
 *   folds what it selects on the CPU); audits and smaller steps stay on the CPU kernel (engine-rs
 *   `gpu`, docs/gpu.md).
 *
 * Without a usable GPU (no driver, no NVRTC, no device) the node says so in one line at start and
 * filters on the CPU kernel. /health's `filterDevice` part and /metrics' `hd_sn_gpu_*` show the
 * device, the bytes filtered on it, the steps left on the CPU kernel and the errors.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { enableGpuFilter, gpuStats, type GpuStats } from '../../engine-rs/index';
import type { StorageNodeConfig } from '../../nodes/storageNode/config';
import type { Observability } from '../../lib/observability';

/** What the selector came to: the device in use, or why the CPU kernel filters. */
export interface FilterDevice {
  readonly selector: StorageNodeConfig['filterDeviceSelector'];
  /** `gpu` with a device turned on, else `cpu`. */
  readonly runsOn: 'gpu' | 'cpu';
  /** The GPU's description, or why none is used (`gpu` selected). */
  readonly detail?: string;
}

/** Turns the GPU on when the selector asks for it; resolves what filters run on (never rejects). */
export async function chooseFilterDevice(c: StorageNodeConfig, enable: () => Promise<string> = enableGpuFilter): Promise<FilterDevice> {
  if (c.filterDeviceSelector !== 'gpu') return { selector: c.filterDeviceSelector, runsOn: 'cpu' };
  try {
    return { selector: 'gpu', runsOn: 'gpu', detail: await enable() };
  } catch (e) {
    return { selector: 'gpu', runsOn: 'cpu', detail: e instanceof Error ? e.message : String(e) };
  }
}

/** The start-up line for `d` on node `name`; undefined when there is nothing to say (`cpu`, `host`). */
export function filterDeviceLine(name: string, d: FilterDevice): string | undefined {
  if (d.selector !== 'gpu') return undefined;
  return d.runsOn === 'gpu'
    ? `storage node '${name}': filter_device_selector 'gpu': scan steps of 16 MiB or more filter on ${d.detail}; audits and smaller steps on the cpu kernel`
    : `storage node '${name}': filter_device_selector 'gpu': ${d.detail}; query filters run on the cpu kernel`;
}

const METRICS: [keyof GpuStats, string, string][] = [
  ['bytesFiltered', 'hd_sn_gpu_bytes_filtered_total', 'Record bytes query filters evaluated on the GPU'],
  ['steps', 'hd_sn_gpu_steps_total', 'Scan steps the GPU filtered'],
  ['cpuFallbacks', 'hd_sn_gpu_cpu_fallbacks_total', 'Scan steps left on the CPU kernel: under 16 MiB, or the GPU busy'],
  ['errors', 'hd_sn_gpu_errors_total', 'Scan steps the GPU failed (redone on the CPU kernel)'],
];

/** Shows `device` in /health (`filterDevice`) and the offload's counters in /metrics. */
export function showFilterDevice(observability: Observability, device: () => FilterDevice | undefined, stats: () => GpuStats = gpuStats): void {
  observability.addHealthPart('filterDevice', () => {
    const d = device();
    const s = stats();
    return { status: 'ok', selector: d?.selector ?? 'pending', runsOn: d?.runsOn ?? 'cpu', ...(d?.detail !== undefined ? { detail: d.detail } : {}), ...s };
  });
  registerGpuMetrics(observability.registry, stats);
}

function registerGpuMetrics(registry: Registry, stats: () => GpuStats): void {
  if (registry.getSingleMetric('hd_sn_gpu_enabled')) return;
  new Gauge({
    name: 'hd_sn_gpu_enabled',
    help: 'Whether query filters may run on a GPU (filter_device_selector gpu and a device found)',
    registers: [registry],
    collect() {
      this.set(stats().enabled ? 1 : 0);
    },
  });
  for (const [field, name, help] of METRICS) {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(stats()[field] as number);
      },
    });
  }
}
