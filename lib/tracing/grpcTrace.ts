/**
 * W3C trace context in gRPC metadata (the `traceparent` / `tracestate` keys, as OpenTelemetry's
 * gRPC instrumentation sends them): the client side adds the active span's context to a call's
 * metadata, the server side starts its span under the context the metadata names.
 */
import type { Metadata } from '@grpc/grpc-js';
import { ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { contextFromHeaders, traceHeaders } from './traceContext';

/** Adds the active span's `traceparent` (and `tracestate`) to `md`; returns `md`. */
export function withTraceMetadata(md: Metadata): Metadata {
  for (const [k, v] of Object.entries(traceHeaders())) md.set(k, v);
  return md;
}

/** The context a call's metadata names as the remote parent (the root context when none). */
export function contextFromMetadata(md: Metadata, base: Context = ROOT_CONTEXT): Context {
  const headers: Record<string, string> = {};
  for (const k of ['traceparent', 'tracestate']) {
    const v = md.get(k)[0];
    if (typeof v === 'string') headers[k] = v;
  }
  return contextFromHeaders(headers, base);
}
