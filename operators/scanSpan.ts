/**
 * The span of one query's scan on a Storage Node (docs/observability.md, "Traces"):
 * `storageNode.scan`, a child of the SCC's leg span named by the query's `trace_context`, with
 * what the scan did as attributes once it ends: batches read and failed, records scanned and
 * matched, bytes read, blocks skipped by zone maps, batches answered from their summaries.
 * A query without a trace context gets no span and costs nothing.
 */
import { contextFromTraceContext, contextWith, failSpan, SpanKind, startSpan, traceContextOf, type Span, type TraceContext } from '../lib/tracing/index';
import type { QuerySpec } from '../stream/queryElement';

/** What {@link ScanSpan.step} reads of a read step (scan.ts's BatchScanStep). */
export interface ScanStepCounts {
  readonly scanned: number;
  readonly matched: number;
  readonly blocksRead: number;
  readonly blocksSkipped: number;
  readonly partial?: string;
}

/** Tallies of one query's scan, set on its span when it ends. */
export class ScanSpan {
  private readonly span: Span | undefined;
  private scanned = 0;
  private matched = 0;
  private bytesRead = 0;
  private blocksRead = 0;
  private blocksSkipped = 0;
  private fromSummary = 0;
  private eobs = 0;
  private bbns = 0;

  /** Starts the span when the query carries a trace context (and this process traces). */
  constructor(spec: QuerySpec, node?: string) {
    if (!spec.traceContext) return;
    const span = startSpan('storageNode.scan', {
      parent: contextFromTraceContext(spec.traceContext),
      kind: SpanKind.SERVER,
      attributes: { 'hd.query_id': spec.queryId, 'hd.dataset': spec.dataset, 'hd.batches': spec.batchIds.length, 'hd.qos': spec.qos, ...(node !== undefined && { 'hd.node': node }) },
    });
    this.span = span.isRecording() ? span : undefined;
  }

  /** The scan span's W3C context (sent on the result stream so the client's transfer span is its child); undefined without a span. */
  traceContext(): TraceContext | undefined {
    return this.span ? traceContextOf(contextWith(this.span)) : undefined;
  }

  /** One read step of `recordSize`-byte records. */
  step(s: ScanStepCounts, recordSize: number): void {
    if (!this.span) return;
    this.scanned += s.scanned;
    this.matched += s.matched;
    this.bytesRead += s.scanned * recordSize;
    this.blocksRead += s.blocksRead;
    this.blocksSkipped += s.blocksSkipped;
    // A batch its summary answered: records matched, none read (its partial sent, or folded).
    if (s.scanned === 0 && s.blocksRead === 0 && s.matched > 0) this.fromSummary++;
  }

  /** A batch ended: `eob`, or a bbn. */
  batch(outcome: 'eob' | 'bbn'): void {
    if (!this.span) return;
    if (outcome === 'eob') this.eobs++;
    else this.bbns++;
  }

  /** Ends the span (failed with `err` when given). */
  end(err?: unknown): void {
    const span = this.span;
    if (!span) return;
    span.setAttributes({
      'hd.records_scanned': this.scanned,
      'hd.records_matched': this.matched,
      'hd.bytes_read': this.bytesRead,
      'hd.blocks_read': this.blocksRead,
      'hd.blocks_skipped': this.blocksSkipped,
      'hd.batches_from_summary': this.fromSummary,
      'hd.batches_delivered': this.eobs,
      'hd.batches_failed': this.bbns,
    });
    if (err !== undefined) failSpan(span, err);
    span.end();
  }
}
