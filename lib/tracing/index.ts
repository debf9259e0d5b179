/**
 * HD's traces (docs/observability.md, "Traces"): the per-process tracer provider, spans, and the
 * W3C trace context that travels with a query over HTTP, gRPC and HDQuery.
 */
export { startTracing, otlpEndpoint, type Tracing, type TracingOptions } from './tracingSetup';
export { inSpan, startSpan, failSpan, tracer, contextWith, withContext, SpanKind, type Span, type Attributes, type Context, type InSpanOptions } from './spans';
export { traceContextOf, contextFromTraceContext, parentContext, contextFromHeaders, traceHeaders, TRACEPARENT, MAX_TRACESTATE_LEN, type TraceContext } from './traceContext';
export { withTraceMetadata, contextFromMetadata } from './grpcTrace';
