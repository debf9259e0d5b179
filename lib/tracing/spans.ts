/**
 * Spans of HD's own work (docs/observability.md, "Traces"): one tracer, named `hd`, and a helper
 * that runs a function inside an active span and ends it. Without a registered tracer provider
 * (OTEL_GRPC_URL unset) the OpenTelemetry API hands out non-recording spans: no ids are drawn,
 * nothing is kept or sent.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';

export { SpanKind, type Span, type Attributes, type Context };

/** The tracer every HD span comes from. */
export function tracer(): Tracer {
  return trace.getTracer('hd');
}

/** Options of {@link inSpan}. */
export interface InSpanOptions {
  readonly attributes?: Attributes;
  readonly kind?: SpanKind;
  /** The parent's context (default: the active context). */
  readonly parent?: Context;
}

/**
 * Runs `fn` inside a new active span named `name`, ends the span when `fn` settles, and records a
 * thrown error on it (status ERROR) before rethrowing.
 *
 * @example
 * const plan = await inSpan('sql.plan', () => planStatement(sql));
 */
export function inSpan<T>(name: string, fn: (span: Span) => Promise<T>, opts: InSpanOptions = {}): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { ...(opts.attributes && { attributes: opts.attributes }), ...(opts.kind !== undefined && { kind: opts.kind }) }, parent);
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` failed with `err` (an exception event and status ERROR). */
export function failSpan(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** Starts a span that is not made active (its end is up to the caller), under `parent` (default: the active context). */
export function startSpan(name: string, opts: InSpanOptions = {}): Span {
  return tracer().startSpan(name, { ...(opts.attributes && { attributes: opts.attributes }), ...(opts.kind !== undefined && { kind: opts.kind }) }, opts.parent ?? context.active());
}

/** `ctx` (default: the active context) with `span` as its active span. */
export function contextWith(span: Span, ctx: Context = context.active()): Context {
  return trace.setSpan(ctx, span);
}

/** Runs `fn` with `ctx` as the active context. */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}
