/**
 * The process's OpenTelemetry tracer provider (docs/observability.md, "Traces"), set up once when
 * a role process starts: with OTEL_GRPC_URL set, spans are batched and exported over OTLP/gRPC to
 * that endpoint, sampled as OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG say (OpenTelemetry's own
 * settings; default parentbased_always_on). With OTEL_GRPC_URL unset or empty no provider is
 * registered at all: spans are the API's no-op ones and no connection is ever attempted.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import os from 'node:os';

/** A started (or not started) tracer provider; disposing flushes the spans still batched and stops it. */
export interface Tracing extends AsyncDisposable {
  /** Whether spans are exported (OTEL_GRPC_URL was set). */
  readonly enabled: boolean;
  /** Where spans go (`http(s)://host:port`), when enabled. */
  readonly endpoint?: string;
  /** Sends the spans still batched and stops exporting. */
  shutdown(): Promise<void>;
}

/** Options of {@link startTracing}. */
export interface TracingOptions {
  /** The service name spans carry (`service.name`), e.g. `hd-scc`. */
  readonly service: string;
  /** Settings to read OTEL_GRPC_URL from (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** More resource attributes (e.g. the node's name). */
  readonly attributes?: Readonly<Record<string, string>>;
}

const OFF: Tracing = { enabled: false, shutdown: () => Promise.resolve(), [Symbol.asyncDispose]: () => Promise.resolve() };

/**
 * OTEL_GRPC_URL as the OTLP/gRPC exporter takes it: `grpc://` is plain (`http://`), `grpcs://` TLS
 * (`https://`), `http(s)://` as given. Throws naming the setting for anything else.
 */
export function otlpEndpoint(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`OTEL_GRPC_URL: '${raw}' is not a URL (expected http(s):// or grpc(s)://host:port)`);
  }
  const scheme = { 'http:': 'http:', 'grpc:': 'http:', 'https:': 'https:', 'grpcs:': 'https:' }[u.protocol];
  if (!scheme) throw new Error(`OTEL_GRPC_URL: '${raw}': expected an http, https, grpc or grpcs URL`);
  return `${scheme}//${u.host}`;
}

/**
 * Registers the process's tracer provider when OTEL_GRPC_URL is set; otherwise does nothing.
 * Call once per process, before any span is started.
 *
 * @example
 * await using tracing = startTracing({ service: 'hd-scc' });
 */
export function startTracing(opts: TracingOptions): Tracing {
  const raw = (opts.env ?? process.env).OTEL_GRPC_URL ?? '';
  if (raw.trim() === '') return OFF;
  const endpoint = otlpEndpoint(raw.trim());
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.service, 'service.instance.id': `${os.hostname()}:${process.pid}`, ...opts.attributes }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }))],
  });
  provider.register();
  let stopped: Promise<void> | undefined;
  const shutdown = (): Promise<void> => (stopped ??= provider.shutdown().catch(() => undefined));
  return { enabled: true, endpoint, shutdown, [Symbol.asyncDispose]: shutdown };
}

