/**
 * The Proxy's part of a query's trace (docs/observability.md, "Traces"): where its `proxy.query`
 * span hangs (the request's W3C `traceparent` / `tracestate` headers, else the HDQuery's own
 * `trace_context`), and the HDQuery JSON handed to the SCC carrying the Proxy's dispatch span as
 * its `trace_context`. Without a recording span nothing is changed.
 */
import { contextFromHeaders, contextFromTraceContext, traceContextOf, TRACEPARENT, type Context } from '../../lib/tracing/index';
import { trace, ROOT_CONTEXT } from '@opentelemetry/api';

/** Request headers as Node / fastify give them. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The parent of the Proxy's `proxy.query` span: the context the `traceparent` header names, else
 * the body's `trace_context` when it holds a well-formed `traceparent`, else the root context.
 */
export function proxyQueryParent(headers: RequestHeaders, body: unknown): Context {
  const fromHeaders = contextFromHeaders(headers);
  if (trace.getSpanContext(fromHeaders)) return fromHeaders;
  if (typeof body !== 'object' || body === null) return ROOT_CONTEXT;
  const tc = (body as { trace_context?: unknown }).trace_context;
  if (typeof tc !== 'object' || tc === null) return ROOT_CONTEXT;
  const { traceparent, tracestate } = tc as { traceparent?: unknown; tracestate?: unknown };
  if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent)) return ROOT_CONTEXT;
  return contextFromTraceContext(typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent });
}

/**
 * `queryJson` with `trace_context` set to the active span's context (the Proxy's dispatch span), so
 * a reader of the HDQuery without the call's metadata still finds its parent; `queryJson` itself
 * when no span is active.
 */
export function withActiveTraceContext(queryJson: string): string {
  const tc = traceContextOf();
  if (!tc) return queryJson;
  return JSON.stringify({ ...(JSON.parse(queryJson) as Record<string, unknown>), trace_context: tc });
}
