/**
 * One query being served by the SCC (docs/query.md, "What the SCC does", steps 4-8): which replica
 * reads each batch, the legs that carry them, re-routing when a node fails, is quarantined or does
 * not hold a batch, and the notices for batches nobody could deliver. Each batch is read once: it
 * is on at most one leg at a time, and goes to another replica only when that leg can no longer
 * deliver it.
 */
import type tls from 'node:tls';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import { isNotHeld } from '../../query/batchNotice';
import type { HdQuery } from '../../query/hdQuery';
import { LegQueryJson } from '../../query/legQueryJson';
import { abandonsQueries, takesQueries } from './queryHealth';
import type { LegConnectionPool } from './legConnections';
import { QueryLeg, type BatchAnswer, type LegListener, type LegOutcome } from './queryLeg';
import type { NodeBadBatch } from './badBatchReporter';
import { sendBatchNotices, type BatchNotice } from './queryNotice';
import type { ReplicaState } from './replicas';
import type { SnTarget } from './settings';
import { contextWith, parentContext, SpanKind, startSpan, traceContextOf, type Span } from '../../lib/tracing/index';
import type { LogFn } from '../../lib/logging';

/** Batches per leg: their ids keep one query frame under the 1 MiB HDWP JSON limit. */
export const MAX_BATCHES_PER_LEG = 7000;
/** Retries of a leg a node refused because it still runs the query's previous leg there. */
const BUSY_RETRIES = 8;

/** Options of {@link QueryRun}. */
export interface QueryRunOptions {
  readonly query: HdQuery;
  readonly targets: readonly SnTarget[];
  readonly recordSize: number;
  /** Replica states by name; undefined: every target counts as healthy (no replica set registered). */
  readonly health: () => Readonly<Record<string, ReplicaState>> | undefined;
  /** Cancel the query after this long (0: never); its unfinished batches fail with code 5. */
  readonly maxQueryMs: number;
  readonly connectTimeoutMs?: number;
  /** The SCC's TLS client options for a client listening with mutual TLS (its notices); undefined without a certificate. */
  readonly resultTls?: () => tls.ConnectionOptions;
  /** Mutual TLS of a leg to a node; undefined, or no function: plain TCP. */
  readonly legTls?: (node: SnTarget) => tls.ConnectionOptions | undefined;
  /** Idle leg connections to reuse (legConnections.ts); without it every leg connects. */
  readonly pool?: LegConnectionPool;
  readonly maxBatchesPerLeg?: number;
  /** Called once when every batch is settled (delivered, failed or cancelled). */
  readonly onFinished: (run: QueryRun) => void;
  /** The query's problems worth a log line, each with its level. */
  readonly onEvent?: LogFn;
  /** Every bbn a node answered a batch with, but for "not held" (reported to the DMS, badBatchReporter.ts). */
  readonly onBadBatch?: (notice: NodeBadBatch) => void;
}

type BatchStatus = 'queued' | 'running' | 'done' | 'failed';

interface BatchState {
  status: BatchStatus;
  /** Replicas asked for it so far (a few names at most: a list, not a Set per batch). */
  readonly tried: string[];
  node?: string;
  /** For a failed batch: whether a node already told the client (its bbn went there too). */
  told: boolean;
  code?: number;
  message?: string;
}

/** What {@link QueryRun.start} placed. */
export interface Placement {
  readonly batches: number;
  readonly nodes: string[];
  readonly missing: string[];
}

/** The SCC's state of one dispatched query. */
export class QueryRun implements LegListener {
  readonly query: HdQuery;
  private readonly batches = new Map<string, BatchState>();
  private readonly legs = new Map<string, QueryLeg>();
  private readonly queues = new Map<string, string[]>();
  private readonly busy = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Queued and running batches per node, kept by {@link set}: placement reads it once per batch (a scan per batch made a 100 000-batch query quadratic). */
  private readonly load = new Map<string, number>();
  private state: 'running' | 'finished' | 'cancelled' = 'running';
  private rotate = 0;
  /** The query's `scc.query` span (docs/observability.md, "Traces"), when this process traces. */
  private readonly span: Span | undefined;
  private readonly legSpans = new Map<QueryLeg, Span>();
  /** The query's JSON, written once, narrowed per leg (made at the first leg). */
  private legJson: LegQueryJson | undefined;

  /** Nothing is sent until {@link start}. */
  constructor(private readonly opts: QueryRunOptions) {
    this.query = opts.query;
    this.span = queryRunSpan(opts.query);
    for (const hex of opts.query.batchIds) this.batches.set(hex, { status: 'queued', tried: [], told: true });
  }

  /** True until every batch is settled. */
  get running(): boolean {
    return this.state === 'running';
  }

  /** Batch counts by status, for /health and tests. */
  counts(): Record<BatchStatus, number> {
    const c: Record<BatchStatus, number> = { queued: 0, running: 0, done: 0, failed: 0 };
    for (const b of this.batches.values()) c[b.status]++;
    return c;
  }

  /** Places every batch on a healthy replica and opens the legs. Batches no healthy replica can take are `missing`. */
  start(): Placement {
    const placing = this.span && startSpan('scc.placement', { parent: contextWith(this.span) });
    const missing: string[] = [];
    const nodes = new Set<string>();
    // One look at replica health for the whole placement (it is the same for every batch of it).
    const states = this.opts.health();
    for (const hex of this.batches.keys()) {
      const node = this.place(hex, undefined, undefined, undefined, states);
      if (node) nodes.add(node);
      else {
        missing.push(hex);
        this.set(this.batches.get(hex) as BatchState, { status: 'failed', told: true, code: HDWP_ERROR_FRAME_CODES.batchUnreadable, message: 'no healthy replica' });
      }
    }
    if (this.opts.maxQueryMs > 0) this.later(this.opts.maxQueryMs, () => this.timeOut());
    for (const n of nodes) this.flush(n);
    placing?.setAttributes({ 'hd.batches': this.batches.size, 'hd.batches_missing': missing.length, 'hd.nodes': [...nodes] });
    placing?.end();
    this.settleIfDone();
    return { batches: this.batches.size - missing.length, nodes: [...nodes], missing };
  }

  /** Moves legs off replicas that went down or out of sync. */
  checkHealth(): void {
    const states = this.opts.health();
    if (!states) return;
    for (const leg of [...this.legs.values()]) if (abandonsQueries(states[leg.node.name])) leg.abandon(`replica ${leg.node.name} is ${states[leg.node.name]}`);
  }

  /** Cancels the query: a cancel frame on every open leg; resolves the number of nodes told. */
  cancel(): number {
    if (this.state !== 'running') return 0;
    this.state = 'cancelled';
    const told = this.stopLegs();
    for (const b of this.batches.values()) if (b.status === 'queued' || b.status === 'running') this.set(b, { status: 'failed', told: true, code: HDWP_ERROR_FRAME_CODES.cancelled, message: 'cancelled' });
    this.release();
    return told;
  }

  /** A node answered one batch (LegListener). */
  answer(leg: QueryLeg, hex: string, a: BatchAnswer): void {
    const b = this.batches.get(hex);
    if (this.state !== 'running' || !b || b.status !== 'running' || b.node !== leg.node.name) return;
    if (a.kind === 'eob') {
      this.set(b, { status: 'done' });
      return;
    }
    // A batch the node simply does not store (an interval nobody ingested) says nothing of the node.
    if (!isNotHeld(a)) this.opts.onBadBatch?.({ node: leg.node.name, batchId: hex, dataset: this.query.dataset, code: a.code, reason: a.message });
    if (a.code === HDWP_ERROR_FRAME_CODES.batchUnreadable) {
      // This replica does not have it (or its copy is damaged): ask the next one.
      this.opts.onEvent?.(`query ${this.query.queryId}: ${leg.node.name} cannot read batch ${hex.slice(0, 16)}…: ${a.message}`, 'warn');
      // Nodes keep 13 between themselves and the SCC (sinks/resultStream.ts): when no replica is
      // left, the SCC's own notice tells the client.
      const next = this.place(hex, a.code, a.message, false);
      if (next) this.flush(next);
      return;
    }
    this.set(b, { status: 'failed', told: true, code: a.code, message: a.message, node: leg.node.name });
  }

  /** A leg ended (LegListener). */
  end(leg: QueryLeg, outcome: LegOutcome): void {
    const name = leg.node.name;
    this.endLegSpan(leg, outcome.kind === 'failed' ? outcome.message : undefined);
    if (this.legs.get(name) === leg) this.legs.delete(name);
    if (this.state !== 'running') return;
    const unanswered = [...leg.pending].filter((hex) => this.batches.get(hex)?.status === 'running');
    if (outcome.kind === 'failed') {
      const tries = this.busy.get(name) ?? 0;
      if (outcome.busy && tries < BUSY_RETRIES) {
        // The node has not yet let go of this query's previous leg: same batches, same node, a bit later.
        this.busy.set(name, tries + 1);
        for (const hex of unanswered) this.set(this.batches.get(hex) as BatchState, { status: 'queued' });
        this.queues.set(name, [...unanswered, ...(this.queues.get(name) ?? [])]);
        this.later(25 * 2 ** tries, () => this.flush(name));
        return;
      }
      this.opts.onEvent?.(`query ${this.query.queryId}: leg on ${name} ended: ${outcome.message}${unanswered.length > 0 ? `; ${unanswered.length} batch(es) ${outcome.retry ? 'go to another replica' : 'failed'}` : ''}`, 'warn');
      // The node failed: batches still waiting for it go elsewhere too.
      const waiting = outcome.retry ? this.takeQueue(name) : [];
      const moved = new Set<string>();
      for (const hex of [...unanswered, ...waiting]) {
        const b = this.batches.get(hex) as BatchState;
        if (!outcome.retry) this.set(b, { status: 'failed', told: false, code: outcome.code, message: outcome.message });
        else {
          const next = this.place(hex, outcome.code, outcome.message, false);
          if (next) moved.add(next);
        }
      }
      for (const n of moved) this.flush(n);
    } else {
      this.busy.delete(name);
    }
    this.flush(name);
    this.settleIfDone();
  }

  /**
   * Puts a batch on the least loaded healthy replica not yet tried for it; when none is left it
   * fails with `code`/`message` (`told`: whether the last replica already told the client).
   */
  private place(hex: string, code = HDWP_ERROR_FRAME_CODES.internal as number, message = 'no healthy replica', told = false, states = this.opts.health()): string | undefined {
    const b = this.batches.get(hex) as BatchState;
    const n = this.opts.targets.length;
    let best: SnTarget | undefined;
    for (let i = 0; i < n; i++) {
      const t = this.opts.targets[(this.rotate + i) % n];
      if (b.tried.includes(t.name) || (states && !takesQueries(states[t.name]))) continue;
      if (!best || (this.load.get(t.name) ?? 0) < (this.load.get(best.name) ?? 0)) best = t;
    }
    this.rotate = (this.rotate + 1) % Math.max(1, n);
    if (!best) {
      const tried = b.tried.join(', ');
      this.set(b, { status: 'failed', told, code, message: tried ? `no healthy replica left to try (tried ${tried}): ${message}` : message });
      return undefined;
    }
    b.tried.push(best.name);
    this.set(b, { node: best.name, status: 'queued' });
    const q = this.queues.get(best.name) ?? [];
    q.push(hex);
    this.queues.set(best.name, q);
    return best.name;
  }

  /** Changes a batch's state, keeping {@link load} in step. */
  private set(b: BatchState, change: Partial<Omit<BatchState, 'tried'>>): void {
    const before = b.node !== undefined && (b.status === 'queued' || b.status === 'running') ? b.node : undefined;
    Object.assign(b, change);
    const after = b.node !== undefined && (b.status === 'queued' || b.status === 'running') ? b.node : undefined;
    if (before === after) return;
    if (before !== undefined) this.load.set(before, (this.load.get(before) ?? 1) - 1);
    if (after !== undefined) this.load.set(after, (this.load.get(after) ?? 0) + 1);
  }

  /** Empties a node's queue, returning the batches that were waiting for it. */
  private takeQueue(name: string): string[] {
    const q = (this.queues.get(name) ?? []).filter((hex) => {
      const b = this.batches.get(hex);
      return b?.status === 'queued' && b.node === name;
    });
    this.queues.delete(name);
    return q;
  }

  /** Starts the node's next leg from its queue, unless one is open there (a node runs one leg of a query at a time). */
  private flush(name: string): void {
    if (this.state !== 'running' || this.legs.has(name)) return;
    const queue = this.takeQueue(name);
    if (queue.length === 0) return;
    const max = this.opts.maxBatchesPerLeg ?? MAX_BATCHES_PER_LEG;
    const take = queue.slice(0, max);
    this.queues.set(name, queue.slice(max));
    for (const hex of take) this.set(this.batches.get(hex) as BatchState, { status: 'running' });
    const node = this.opts.targets.find((t) => t.name === name) as SnTarget;
    const legTls = this.opts.legTls?.(node);
    // The leg's span: the node's scan span is its child, through the query's trace_context.
    const legSpan = this.span && startSpan('scc.leg', { parent: contextWith(this.span), kind: SpanKind.CLIENT, attributes: { 'hd.node': name, 'hd.batches': take.length } });
    const legContext = legSpan && traceContextOf(contextWith(legSpan));
    const query = legContext ? { ...this.query, traceContext: legContext } : this.query;
    const legJson = (this.legJson ??= new LegQueryJson(this.query));
    const queryJson = (batchIds: readonly string[]): string => legJson.json(batchIds, legContext);
    const leg = new QueryLeg({ node, query, batchIds: take, queryJson, recordSize: this.opts.recordSize, listener: this, connectTimeoutMs: this.opts.connectTimeoutMs, ...(legTls && { tls: legTls }), ...(this.opts.pool && { pool: this.opts.pool }) });
    this.legs.set(name, leg);
    if (legSpan) this.legSpans.set(leg, legSpan);
    leg.start();
  }

  private timeOut(): void {
    if (this.state !== 'running') return;
    this.opts.onEvent?.(`query ${this.query.queryId}: cancelled after ${this.opts.maxQueryMs} ms (max_query_ms)`, 'warn');
    this.stopLegs();
    for (const b of this.batches.values()) {
      if (b.status === 'queued' || b.status === 'running') this.set(b, { status: 'failed', told: false, code: HDWP_ERROR_FRAME_CODES.timeout, message: `the query ran longer than ${this.opts.maxQueryMs} ms (max_query_ms) and was cancelled` });
    }
    this.settleIfDone();
  }

  /** Cancels every open leg; returns how many nodes were told. */
  private stopLegs(): number {
    const legs = [...this.legs.values()];
    this.legs.clear();
    this.queues.clear();
    for (const leg of legs) {
      leg.cancel();
      this.endLegSpan(leg, 'cancelled');
    }
    return legs.length;
  }

  private settleIfDone(): void {
    if (this.state !== 'running' || this.legs.size > 0) return;
    for (const b of this.batches.values()) if (b.status === 'queued' || b.status === 'running') return;
    this.state = 'finished';
    const notices: BatchNotice[] = [];
    for (const [hex, b] of this.batches) if (b.status === 'failed' && !b.told) notices.push({ batchId: hex, code: b.code ?? HDWP_ERROR_FRAME_CODES.internal, detail: b.message ?? 'failed' });
    if (notices.length > 0) {
      const { query } = this;
      const tlsOpts = query.returnAddress.tls ? this.opts.resultTls?.() : undefined;
      void sendBatchNotices({ returnAddress: query.returnAddress, auth: { queryId: query.queryId, token: query.token }, dataset: query.dataset, recordSize: this.opts.recordSize, ...(tlsOpts && { tls: tlsOpts }) }, notices).then((why) => {
        if (why) this.opts.onEvent?.(`query ${query.queryId}: could not tell the client about ${notices.length} failed batch(es): ${why}`, 'warn');
      });
    }
    this.release();
  }

  private release(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.span) {
      const c = this.counts();
      this.span.setAttributes({ 'hd.state': this.state, 'hd.batches_done': c.done, 'hd.batches_failed': c.failed });
      this.span.end();
    }
    this.opts.onFinished(this);
  }

  /** Ends a leg's span (once), with why it failed when it did. */
  private endLegSpan(leg: QueryLeg, failure?: string): void {
    const span = this.legSpans.get(leg);
    if (!span) return;
    this.legSpans.delete(leg);
    if (failure !== undefined) span.setAttribute('hd.leg_failure', failure);
    span.end();
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }
}

/**
 * The `scc.query` span of a dispatched query: a child of the active span (the Dispatch call's), or
 * of the query's `trace_context` when the call carried none; undefined when nothing records.
 */
function queryRunSpan(query: HdQuery): Span | undefined {
  const span = startSpan('scc.query', { parent: parentContext(query.traceContext), attributes: { 'hd.query_id': query.queryId, 'hd.dataset': query.dataset, 'hd.batches': query.batchIds.length, 'hd.qos': query.queryQos } });
  return span.isRecording() ? span : undefined;
}
