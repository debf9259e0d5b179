/**
 * W3C trace context (https://www.w3.org/TR/trace-context/) as it travels with a query between HD
 * processes (docs/observability.md, "Traces"): the `traceparent` / `tracestate` pair carried in
 * HTTP headers, gRPC metadata and HDQuery's `trace_context` field. Injection and extraction use the
 * OpenTelemetry W3C propagator directly (not the global one), so they behave the same whether or
 * not this process exports spans; without a sampled or recording active span nothing is injected.
 */
import { context, ROOT_CONTEXT, trace, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/** A query's trace context: the W3C `traceparent` header value and an optional `tracestate`. */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
  readonly traceparent: string;
  /** Vendor state, at most {@link MAX_TRACESTATE_LEN} characters. */
  readonly tracestate?: string;
}

/** Longest `tracestate` accepted (the W3C limit is 32 members; 512 characters is what propagators send). */
export const MAX_TRACESTATE_LEN = 512;

/** A `traceparent` of version 00 (or a later version, read as 00 by its first four fields). */
export const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$/;

const w3c = new W3CTraceContextPropagator();

const recordSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

const recordGetter: TextMapGetter<Readonly<Record<string, string | string[] | undefined>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** The trace context of `ctx` (default: the active context); undefined when it holds no valid span. */
export function traceContextOf(ctx: Context = context.active()): TraceContext | undefined {
  if (!trace.getSpanContext(ctx)) return undefined;
  const carrier: Record<string, string> = {};
  w3c.inject(ctx, carrier, recordSetter);
  if (carrier.traceparent === undefined) return undefined;
  return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

/** A context whose remote parent is `tc` (based on `base`, default the root context); `base` itself when `tc` is absent or invalid. */
export function contextFromTraceContext(tc: TraceContext | undefined, base: Context = ROOT_CONTEXT): Context {
  if (!tc) return base;
  return w3c.extract(base, tc.tracestate ? { traceparent: tc.traceparent, tracestate: tc.tracestate } : { traceparent: tc.traceparent }, recordGetter);
}

/** A context with the remote parent named by HTTP request headers (`traceparent`, `tracestate`), if any. */
export function contextFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>, base: Context = ROOT_CONTEXT): Context {
  return w3c.extract(base, headers, recordGetter);
}

/** HTTP headers carrying the active span's context: empty when there is none. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (trace.getSpanContext(ctx)) w3c.inject(ctx, carrier, recordSetter);
  return carrier;
}


/** The parent for a server's span: the active context when it holds a span (a call's own), else the context `tc` names. */
export function parentContext(tc: TraceContext | undefined): Context {
  const active = context.active();
  return trace.getSpanContext(active) ? active : contextFromTraceContext(tc);
}
