/**
 * Exports the node's Prometheus metrics over OTLP/gRPC when OTEL_GRPC_URL is set: every
 * `OTEL_METRIC_EXPORT_INTERVAL` ms (default 15000) the registries of this process's open
 * {@link Observability} servers are read and sent, same names, labels as attributes, with the
 * official OpenTelemetry exporter (`@opentelemetry/exporter-metrics-otlp-grpc`). Counters become
 * cumulative monotonic sums, gauges gauges, histograms explicit-bucket histograms; summaries (none
 * in HD today) are left out. Unset, nothing is loaded and nothing runs.
 */
import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import type { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { AggregationTemporality, DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { Registry } from 'prom-client';
import { processLogger } from './logging/processLogger';
import { liveRegistries } from './observability';

/** The environment settings the export reads. */
export interface OtlpMetricsEnv {
  readonly OTEL_GRPC_URL?: string;
  readonly OTEL_METRIC_EXPORT_INTERVAL?: string;
}

/** Options of {@link startOtlpMetrics}. */
export interface OtlpMetricsOptions {
  /** Collector URL: `grpc://` or `http://` (plain), `grpcs://` or `https://` (TLS). */
  readonly url: string;
  /** `service.name` of the resource (the role or pipeline name). */
  readonly service: string;
  /** `service.instance.id` of the resource (the node name). */
  readonly node: string;
  /** Milliseconds between exports (default 15000). */
  readonly intervalMs?: number;
  /** The registries read at each export (default: those of this process's open Observability servers). */
  readonly registries?: () => readonly Registry[];
}

/** A running export; `stop` sends once more and closes the exporter. */
export interface OtlpMetricsExport {
  /** Exports now; resolves true when the collector accepted it. */
  exportNow(): Promise<boolean>;
  /** Exports a last time and shuts the exporter down. */
  stop(): Promise<void>;
}

/** The exporter's URL for an OTEL_GRPC_URL value (`grpc(s)://` written as `http(s)://`). */
export function exporterUrl(url: string): string {
  return url.replace(/^grpc:\/\//i, 'http://').replace(/^grpcs:\/\//i, 'https://');
}

const hr = (ms: number): HrTime => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];
const START = hr(Date.now() - process.uptime() * 1000);

type PromValue = { value: number; labels: Record<string, string | number>; metricName?: string };
type PromMetric = { name: string; help: string; type: unknown; values: PromValue[] };

const attrs = (labels: Record<string, string | number>, drop?: string): Attributes => {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(labels)) if (k !== drop) out[k] = v;
  return out;
};
const key = (a: Attributes): string => JSON.stringify(Object.entries(a).sort(([x], [y]) => (x < y ? -1 : 1)));

/** One prom-client metric as OTLP metric data; undefined for kinds not exported (summaries). */
export function toMetricData(m: PromMetric, now: HrTime): MetricData | undefined {
  const descriptor = { name: m.name, description: m.help, unit: '', valueType: ValueType.DOUBLE };
  const type = String(m.type);
  if (type === 'counter' || type === 'gauge') {
    const dataPoints = m.values.map((v) => ({ startTime: START, endTime: now, attributes: attrs(v.labels), value: v.value }));
    return type === 'counter'
      ? { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.SUM, isMonotonic: true, dataPoints }
      : { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.GAUGE, dataPoints };
  }
  if (type !== 'histogram') return undefined;
  // prom-client gives cumulative `_bucket{le}` values plus `_sum` and `_count`, per label set.
  const series = new Map<string, { attributes: Attributes; buckets: [number, number][]; sum: number; count: number }>();
  for (const v of m.values) {
    const attributes = attrs(v.labels, 'le');
    const k = key(attributes);
    let s = series.get(k);
    if (!s) series.set(k, (s = { attributes, buckets: [], sum: 0, count: 0 }));
    if (v.metricName === `${m.name}_bucket`) s.buckets.push([v.labels.le === '+Inf' ? Infinity : Number(v.labels.le), v.value]);
    else if (v.metricName === `${m.name}_sum`) s.sum = v.value;
    else if (v.metricName === `${m.name}_count`) s.count = v.value;
  }
  const dataPoints = [...series.values()].map((s) => {
    const sorted = s.buckets.sort(([a], [b]) => a - b);
    const boundaries = sorted.filter(([le]) => le !== Infinity).map(([le]) => le);
    let prev = 0;
    const counts = sorted.map(([, c]) => {
      const n = c - prev;
      prev = c;
      return n;
    });
    // Without a +Inf bucket the overflow bucket holds what the count has beyond the last bound.
    if (counts.length === boundaries.length) counts.push(s.count - prev);
    return { startTime: START, endTime: now, attributes: s.attributes, value: { buckets: { boundaries, counts }, sum: s.sum, count: s.count } };
  });
  return { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.HISTOGRAM, dataPoints };
}

/** Reads the registries into one OTLP ResourceMetrics (a name seen twice is sent once: the first registry's). */
export async function collectResourceMetrics(registries: readonly Registry[], service: string, node: string): Promise<ResourceMetrics> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const now = hr(Date.now());
  const metrics: MetricData[] = [];
  const seen = new Set<string>();
  for (const r of registries) {
    for (const m of (await r.getMetricsAsJSON()) as unknown as PromMetric[]) {
      if (seen.has(m.name)) continue;
      seen.add(m.name);
      const d = toMetricData(m, now);
      if (d) metrics.push(d);
    }
  }
  return {
    resource: resourceFromAttributes({ 'service.name': service, 'service.instance.id': node }),
    scopeMetrics: [{ scope: { name: 'hdstore' }, metrics }],
  };
}

/** Starts the periodic export to `opts.url`. */
export function startOtlpMetrics(opts: OtlpMetricsOptions): OtlpMetricsExport {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { OTLPMetricExporter: Exporter } = require('@opentelemetry/exporter-metrics-otlp-grpc') as { OTLPMetricExporter: new (c: { url: string }) => OTLPMetricExporter };
  const exporter = new Exporter({ url: exporterUrl(opts.url) });
  const registries = opts.registries ?? liveRegistries;
  let failing = false;
  const exportNow = async (): Promise<boolean> => {
    const rm = await collectResourceMetrics(registries(), opts.service, opts.node);
    const ok = await new Promise<boolean>((resolve) =>
      exporter.export(rm, (r) => {
        if (r.code !== 0) {
          // Said once per outage, not at every interval.
          if (!failing) processLogger().warn(`metrics export to ${opts.url} failed: ${r.error?.message ?? 'unknown error'}`);
        } else if (failing) processLogger().info(`metrics export to ${opts.url} works again`);
        resolve(r.code === 0);
      }),
    );
    failing = !ok;
    return ok;
  };
  const timer = setInterval(() => void exportNow(), opts.intervalMs ?? 15_000);
  timer.unref();
  return {
    exportNow,
    stop: async () => {
      clearInterval(timer);
      await exportNow();
      await exporter.shutdown();
    },
  };
}

/** Starts the export when OTEL_GRPC_URL is set; undefined (nothing loaded) when it is not. */
export function startOtlpMetricsFromEnv(env: OtlpMetricsEnv, service: string, node: string): OtlpMetricsExport | undefined {
  const url = (env.OTEL_GRPC_URL ?? '').trim();
  if (!url) return undefined;
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return startOtlpMetrics({ url, service, node, intervalMs: Number.isFinite(interval) && interval > 0 ? interval : undefined });
}
