/**
 * What a node process sets up around its pipeline run (`hd run`, and so every child of `hd up`):
 * the process logger (LOG_LEVEL, LOG_FORMAT), error tracking (PLATFORM_OPT_IN, TRACKER_DSN) and
 * the OTLP export of its metrics (OTEL_GRPC_URL). See docs/observability.md.
 */
import { flushErrorTracking, reportError, startErrorTracking, type ErrorTrackingState } from '../lib/errorTracking';
import { configureProcessLogger, type Logger, type LogSink } from '../lib/logging';
import type { OtlpMetricsExport } from '../lib/otlpMetrics';
import type { Pipeline } from './load';

/** The observability of a running node process. */
export interface NodeRuntime {
  /** The process logger, configured from the environment. */
  readonly logger: Logger;
  /** The node name in logs, error events and the metrics' resource. */
  readonly node: string;
  /** Whether crashes are reported, and why not. */
  readonly errorTracking: ErrorTrackingState;
  /** Whether human-oriented output (progress, the counter table) may be written as plain text. */
  readonly plainOutput: boolean;
  /** Reports the failure that ends the run (sent to the tracker when on) and logs it. */
  fail(err: unknown): void;
  /** Stops the metrics export (after a last export) and sends pending error events; at most a few seconds. */
  stop(): Promise<void>;
}

/** The environment a node reads (see {@link startNodeRuntime}). */
export type RuntimeEnv = Readonly<Record<string, string | undefined>>;

/** The node's name: the first `node_name` a service or stage of the pipeline sets, else NODE_NAME, else the pipeline's name. */
export function nodeNameOf(pipeline: Pipeline, env: RuntimeEnv): string {
  for (const part of [...pipeline.services.values(), ...pipeline.stages.values()]) {
    const n = part.config.node_name;
    if (typeof n === 'string' && n !== '') return n;
  }
  return env.NODE_NAME || pipeline.name;
}

/**
 * Sets up logging, error tracking and the OTLP metrics export for `pipeline`'s process from `env`.
 * Lines go to `sink` (the command's stderr). Without OTEL_GRPC_URL the OpenTelemetry packages are
 * not loaded; without the opt-in the Sentry SDK is not.
 */
export function startNodeRuntime(pipeline: Pipeline, env: RuntimeEnv, sink?: LogSink): NodeRuntime {
  const node = nodeNameOf(pipeline, env);
  const { logger, problems } = configureProcessLogger(env, node, sink);
  for (const p of problems) logger.warn(p);
  const errorTracking = startErrorTracking(env, { node, role: pipeline.name });
  if (errorTracking.enabled) logger.info(`error tracking on: crashes are sent to ${new URL(errorTracking.dsn).host}`);
  let metrics: OtlpMetricsExport | undefined;
  if ((env.OTEL_GRPC_URL ?? '').trim() !== '') {
    // Loaded only when asked for: no OpenTelemetry code runs otherwise.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { startOtlpMetricsFromEnv } = require('../lib/otlpMetrics') as typeof import('../lib/otlpMetrics');
    metrics = startOtlpMetricsFromEnv(env, pipeline.name, node);
    logger.info(`metrics exported over OTLP/gRPC to ${env.OTEL_GRPC_URL ?? ''}`);
  }
  return {
    logger,
    node,
    errorTracking,
    plainOutput: logger.format === 'text' && logger.enabled('info'),
    fail: (err) => reportError(err),
    stop: async () => {
      await Promise.race([metrics?.stop().catch(() => undefined), new Promise((r) => setTimeout(r, 3000).unref())]);
      await flushErrorTracking(2000);
    },
  };
}
