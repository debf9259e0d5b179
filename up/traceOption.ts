/**
 * `hd up --trace <OTEL_GRPC_URL>` (docs/observability.md, "Traces"): every node started with
 * OTEL_GRPC_URL set, so each exports its spans and metrics to that OpenTelemetry collector, and the
 * line of the ready message that says where they go.
 */
import { otlpEndpoint } from '../lib/tracing/tracingSetup';
import type { NodeSpec } from './supervisor';

/** The checked `--trace` value, or the reason it is refused. */
export type TraceOption = { readonly url: string } | { readonly error: string };

/** Checks a `--trace` value the way the nodes will read it (grpc(s):// or http(s)://host:port). */
export function parseTraceOption(raw: string): TraceOption {
  const url = raw.trim();
  if (url === '') return { error: '--trace takes the collector\'s OTLP/gRPC URL, e.g. grpc://127.0.0.1:4317' };
  try {
    otlpEndpoint(url);
  } catch (err) {
    return { error: `--trace ${(err as Error).message.replace(/^OTEL_GRPC_URL: /, '')}` };
  }
  return { url };
}

/** `nodes` with OTEL_GRPC_URL set to `url` in each one's environment. */
export function tracedNodes(nodes: readonly NodeSpec[], url: string): NodeSpec[] {
  return nodes.map((n) => ({ ...n, env: { ...n.env, OTEL_GRPC_URL: url } }));
}

/** The ready message's lines saying where the traces go. */
export function traceReadyLines(url: string): string {
  return [
    `Traces: every node exports its spans (and metrics) over OTLP/gRPC to ${url} (OTEL_GRPC_URL).`,
    '  See them in that collector\'s backend, e.g. Jaeger: docker run -p 16686:16686 -p 4317:4317 jaegertracing/all-in-one,',
    '  then http://localhost:16686 (service hd-sql, hd-proxy, hd-scc, hd-storage-node, …); docs/observability.md, "Traces".',
    '',
  ].join('\n');
}
