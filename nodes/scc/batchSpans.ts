/**
 * The SCC's ingest spans (docs/observability.md, "Traces"): one `scc.batch` span a batch, from its
 * first records chunk reaching the replication stage to its durable ack, with the dataset, batch
 * id, records and bytes; a `hash` event when the closing element arrives with the batch's closing
 * hash; and a `durable_ack` event (or `discarded`) when the sender is answered. The per-replica
 * `scc.replicate` spans (replicas.ts) are its children. Spans are kept only while one records:
 * with OTEL_GRPC_URL unset each batch costs one no-op span call and nothing is held.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { BatchID } from '../../engine-rs/batchId';
import { startSpan, SpanKind, type Span } from '../../lib/tracing/spans';
import { batchKey, type AckResult, type BbnElement, type EobElement } from '../../stream/chunk';

/** The open batches' spans of one replication stage. */
export interface BatchSpans {
  /** Starts the span of a batch seen for the first time (kept only when it records). */
  open(key: string, dataset: string, batchId: BatchID): void;
  /** Counts `bytes` of records toward the batch's span, if it has one. */
  add(key: string, bytes: number): void;
  /**
   * The span of the batch `el` closes (started now for a batch without records), with the `hash`
   * event added for an eob carrying its closing hash; undefined when nothing records.
   */
  get(el: EobElement | BbnElement): Span | undefined;
  /** Takes the batch's span out of the open ones, with its final `hd.records` and `hd.bytes`. */
  take(el: EobElement | BbnElement, records: number, recordSize: number | undefined): Span | undefined;
  /** Adds the `durable_ack` (or `discarded`) event and ends `span`. */
  acked(span: Span | undefined, el: EobElement | BbnElement, result: AckResult): void;
  /** Ends every span still open (the input ended or the stage was torn down with batches open). */
  endAll(reason: string): void;
}

interface Open {
  readonly span: Span;
  bytes: number;
}

/** A fresh {@link BatchSpans}. */
export function batchSpans(): BatchSpans {
  const open = new Map<string, Open>();
  const start = (key: string, dataset: string, batchId: BatchID): Open | undefined => {
    const span = startSpan('scc.batch', { kind: SpanKind.CONSUMER, attributes: { 'hd.dataset': dataset, 'hd.batch_id': batchId.toHex() } });
    if (!span.isRecording()) return undefined;
    const o: Open = { span, bytes: 0 };
    open.set(key, o);
    return o;
  };
  return {
    open(key, dataset, batchId) {
      start(key, dataset, batchId);
    },
    add(key, bytes) {
      const o = open.get(key);
      if (o) o.bytes += bytes;
    },
    get(el) {
      const key = batchKey(el.dataset, el.batchId);
      const o = open.get(key) ?? start(key, el.dataset, el.batchId);
      if (!o) return undefined;
      if (el.kind === 'eob' && el.closingHash && el.closingHash.length > 0) o.span.addEvent('hash', { 'hd.closing_hash': Buffer.from(el.closingHash).toString('hex') });
      return o.span;
    },
    take(el, records, recordSize) {
      const key = batchKey(el.dataset, el.batchId);
      const o = open.get(key);
      if (!o) return undefined;
      open.delete(key);
      const declared = el.kind === 'eob' ? el.recordCount : records;
      o.span.setAttributes({ 'hd.records': declared, 'hd.bytes': o.bytes > 0 || recordSize === undefined ? o.bytes : declared * recordSize, 'hd.outcome': el.kind });
      return o.span;
    },
    acked(span, el, result) {
      if (!span) return;
      if (result.ok) span.addEvent(el.kind === 'eob' ? 'durable_ack' : 'discarded', { 'hd.ok': true });
      else {
        span.addEvent(el.kind === 'eob' ? 'durable_ack' : 'discarded', { 'hd.ok': false, 'hd.code': result.code, 'hd.message': result.message });
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.message });
      }
      span.end();
    },
    endAll(reason) {
      for (const o of open.values()) {
        o.span.addEvent('abandoned', { 'hd.reason': reason });
        o.span.end();
      }
      open.clear();
    },
  };
}
