/**
 * The trace and span ids of the OpenTelemetry span active now, for log lines. Read through
 * `@opentelemetry/api` when that package is installed (the tracing setup lives in lib/tracing/);
 * without it, or without an active sampled-or-not valid span, there are none.
 */

/** Ids of the active span, hex as in W3C `traceparent`. */
export interface TraceIds {
  readonly traceId: string;
  readonly spanId: string;
}

interface SpanContextLike {
  readonly traceId: string;
  readonly spanId: string;
}
interface TraceApiLike {
  getActiveSpan(): { spanContext(): SpanContextLike } | undefined;
}

let api: TraceApiLike | null | undefined;

function traceApi(): TraceApiLike | null {
  if (api !== undefined) return api;
  try {
    // Optional: loaded only when present, so the logger works without the tracing packages.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    api = (require('@opentelemetry/api') as { trace: TraceApiLike }).trace;
  } catch {
    api = null;
  }
  return api;
}

const INVALID_TRACE = '00000000000000000000000000000000';

/** The active span's ids, or undefined when no valid span is active. */
export function activeTraceIds(): TraceIds | undefined {
  const span = traceApi()?.getActiveSpan();
  if (!span) return undefined;
  const c = span.spanContext();
  if (!c.traceId || c.traceId === INVALID_TRACE) return undefined;
  return { traceId: c.traceId, spanId: c.spanId };
}
