/**
 * One query's run on the query client, the same in both modes: open the query on the result
 * listener, place it by a {@link QueryRoute} (an SCC directly, or the Proxy), hand each arriving
 * batch to the callback, and wait until every expected batch arrived or failed, the timeout fired
 * or the caller cancelled — then tell the SCCs to stop.
 */
import type * as arrow from 'apache-arrow';
import { ColumnarFrameError, readColumnar } from '../engine-rs/columnar';
import { decodeRecords } from '../engine-rs/decode';
import type { Schema } from '../engine-rs/schema';
import type { AggregatePartial, AggregateSpec, HdQuery, TopSpec } from '../query/hdQuery';
import type { BatchResult, QueryResult, ResultListener } from '../hdwp/resultListener';
import type { QueryAccounting } from './queryAccounting';
import { inSpan, SpanKind, startSpan } from '../lib/tracing/index';

/** How a run ended. */
export type RunOutcome = 'complete' | 'cancelled' | 'timeout';

/** Called with each batch as it arrives, one call at a time (awaited: a slow callback slows every stream, nothing piles up). */
export type BatchCallback = (batch: arrow.RecordBatch, batchId: string) => void | Promise<void>;

/** Options of `PlatformQueryClient.executeStream`. */
export interface ExecuteStreamOptions {
  /**
   * Decode only these fields (schema names; columns in this order). Absent: every field, in schema
   * order. The others are never decoded (engine-rs/decode.ts `DecodeOptions.fields`).
   */
  readonly columns?: readonly string[];
  /**
   * Ours: ask the Storage Nodes for columnar results (HDQuery `result_format: "columns"`, docs/query.md
   * "Columnar results"): they decode `columns` (or every field) after the field mask and send only
   * those, and each batch arrives as ready columns instead of raw records. Default false: records.
   */
  readonly columnar?: boolean;
  /**
   * Ours: push these partial aggregates to the Storage Nodes (HDQuery `aggregate`, docs/query.md
   * "Aggregates"): each batch then answers with one partial, given to `onPartial`, instead of its
   * records (`onBatch` is not called). A node that cannot compute it refuses the query with code 11
   * (every batch ends as a batch error with that code): take the record path then.
   */
  readonly aggregate?: AggregateSpec;
  /** With `aggregate`: receives each complete batch's partial (exact decimal strings), one at a time. */
  readonly onPartial?: (partial: AggregatePartial, batchId: string) => void | Promise<void>;
  /**
   * Ours: each batch sends only its best `k` matching records by `field` (HDQuery `top`, docs/query.md
   * "Top records"; every record tied with the k-th kept), for `ORDER BY field LIMIT k` done by the
   * caller over what arrives. Not with `aggregate`.
   */
  readonly top?: TopSpec;
  /**
   * Ours: the caller takes merged results (HDQuery `merge_batches`, docs/query.md "Merged results"):
   * a node may answer many batches with one aggregate partial (`onPartial` is then called once for
   * them, under the first batch's id) or send the rows of several batches under the first of them.
   */
  readonly mergeBatches?: boolean;
  /**
   * Ours: told of each Storage Node stream that ended with an error frame (e.g. code 11 when a node
   * refuses an `aggregate` with more than `max_groups` groups in a batch); the run goes on (the
   * caller may cancel it). Default: only logged.
   */
  readonly onStreamError?: (code: number, message: string, node: string) => void;
}

/** The client's counters a run adds to. */
export interface QueryCounters {
  queries: number;
  batches: number;
  records: number;
  bytes: number;
  batchErrors: number;
}

/** Where a query is placed and cancelled: direct SCC mode or Proxy mode. */
export interface QueryRoute {
  /**
   * Places the query. Before it resolves, the route sets what the accounting waits for (expected
   * batches, the verdict, batches known to be failed); results may already be arriving.
   */
  dispatch(query: HdQuery): Promise<void>;
  /** Tells the SCCs holding the query to stop; resolves with where the cancel went (for the log). */
  cancel(query: HdQuery): Promise<string>;
  /** Releases the route's connections. */
  close(): void;
  /**
   * Asked once every expected batch has arrived or failed before the placing answered: true when
   * that answer can add nothing (direct SCC mode, waiting for the query's own batches: the answer
   * only names batches no replica holds, which nothing else settles, and refuses only a query none
   * of whose batches was placed), so the run ends without it. Absent or false: the run waits for
   * it (Proxy mode: it carries the verdict the results are compared with).
   */
  answerAddsNothingOnceComplete?(): boolean;
}

/** What a run works with. */
export interface RunContext {
  readonly listener: ResultListener;
  readonly accounting: QueryAccounting;
  readonly counters: QueryCounters;
  readonly schema: Schema;
  /** Only these fields are decoded (ExecuteStreamOptions.columns); absent: all. */
  readonly columns?: readonly string[];
  /** With an `aggregate` query: each batch's partial. */
  readonly onPartial?: (partial: AggregatePartial, batchId: string) => void | Promise<void>;
  /** Each stream that ended with an error frame (ExecuteStreamOptions.onStreamError). */
  readonly onStreamError?: (code: number, message: string, node: string) => void;
  /** 0: no timeout. */
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
  /** Receives the function that ends the wait (cancelQuery and stop call it). */
  readonly onStart: (release: (reason: 'cancelled' | 'timeout') => void) => void;
}

/** Runs `query` by `route`, feeding batches to `onBatch`; see the module doc. Rejects when the route refuses the query. */
export async function runQuery(ctx: RunContext, query: HdQuery, route: QueryRoute, onBatch: BatchCallback): Promise<RunOutcome> {
  const { accounting, counters, schema } = ctx;
  const decodeOpts = ctx.columns ? { fields: ctx.columns } : undefined;
  let release!: (r: RunOutcome) => void;
  const finished = new Promise<RunOutcome>((resolve) => (release = resolve));
  ctx.onStart(release);
  accounting.watch(() => accounting.complete && release('complete'));
  /** Counts a batch that completed here. */
  const arrived = (r: BatchResult, hex: string): void => {
    counters.batches++;
    counters.records += r.count;
    counters.bytes += r.count * r.recordSize;
    accounting.batchArrived(hex, r.count);
  };
  /** A batch with rows: decoded (records) or checked (columns), then handed to `onBatch`. */
  const rows = async (r: BatchResult, hex: string): Promise<void> => {
    if (r.records.length > 0) {
      const rb = await decodeRecords(schema, r.records.length === 1 ? (r.records[0] as Buffer) : Buffer.concat(r.records), decodeOpts);
      await onBatch(rb, hex);
    }
    if (r.aggregate) await ctx.onPartial?.(r.aggregate, hex);
    if (r.columns) {
      // Columnar results: checked against the columns asked for, then handed on as they are (no decode here).
      const fields = ctx.columns ?? schema.fields.map((f) => f.name);
      const batches: arrow.RecordBatch[] = [];
      try {
        for (const part of r.columns) batches.push(await readColumnar(schema, part.body, { fields, rows: part.rows }));
      } catch (err) {
        if (!(err instanceof ColumnarFrameError)) throw err;
        counters.batchErrors++;
        accounting.batchFailed({ batchId: hex, code: 1, message: `columns from ${r.node} refused: ${err.code}: ${err.message}`, node: r.node });
        return;
      }
      for (const rb of batches) await onBatch(rb, hex);
    }
    arrived(r, hex);
  };
  /** One result; a promise only when something in it is waited for (rows, or an `onPartial` that returned one). */
  const handleOne = (r: QueryResult): void | Promise<void> => {
    if (r.kind === 'batch') {
      const hex = r.batchId.toHex();
      if (r.records.length > 0 || r.columns) return rows(r, hex);
      // A partial (or a batch with nothing in it): no decode, so nothing to wait for unless onPartial says so.
      const partial = r.aggregate && ctx.onPartial?.(r.aggregate, hex);
      if (partial) return partial.then(() => arrived(r, hex));
      arrived(r, hex);
    } else if (r.kind === 'batchError') {
      counters.batchErrors++;
      accounting.batchFailed(r.error);
    } else {
      ctx.log(`query ${r.queryId}: stream from ${r.node} ended with error ${r.code}: ${r.message}`);
      ctx.onStreamError?.(r.code, r.message, r.node);
    }
  };
  // Each Storage Node streams on its own connection; results are handed on one at a time so
  // `onBatch` never runs twice at once (callers append to one table). Each stream still waits for
  // its own batch, so a slow callback slows every stream instead of piling batches up. A result
  // that arrives while none is being handled is handled at once, and is waited for only if it
  // returned a promise (a partial, an error: no promise chain per batch).
  let inOrder: Promise<void> = Promise.resolve();
  let handling = 0;
  const chain = (p: Promise<void>): Promise<void> => {
    handling++;
    const done = p.finally(() => handling--);
    inOrder = done.catch(() => undefined);
    return done;
  };
  const handle = (r: QueryResult): void | Promise<void> => {
    if (handling > 0) return chain(inOrder.then(() => handleOne(r)));
    let p: void | Promise<void>;
    try {
      p = handleOne(r);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return p ? chain(p) : undefined;
  };
  const open = ctx.listener.open({ queryId: query.queryId, token: query.token }, handle);
  // Result transfer (docs/observability.md, "Traces"): from the listener's opening to the last batch.
  const transfer = startSpan('hd.results');
  const before = { batches: counters.batches, records: counters.records, bytes: counters.bytes, batchErrors: counters.batchErrors };
  const timer = ctx.timeoutMs > 0 ? setTimeout(() => release('timeout'), ctx.timeoutMs) : undefined;
  let placed = false;
  let closeLater = false;
  try {
    counters.queries++;
    const dispatched = inSpan('hd.dispatch', () => route.dispatch(query), { kind: SpanKind.CLIENT }).then(() => {
      placed = true;
    });
    // A cancel or timeout while the query is being placed (a Proxy may take its dispatch deadline)
    // releases the caller at once; a refusal rejects the call.
    const first = await Promise.race([dispatched.then(() => 'placed' as const), finished]);
    // Complete before placed: the placing's answer still counts for a query of no batches (a
    // refusal), and for a route whose answer does; otherwise every batch is settled and it adds nothing.
    if (first === 'complete') {
      if (query.batchIds.length > 0 && route.answerAddsNothingOnceComplete?.() === true) dispatched.catch(() => undefined);
      else await dispatched;
    }
    else if (first === 'placed' && accounting.complete) release('complete');
    const outcome = await finished;
    if (outcome !== 'complete') {
      const why = outcome === 'timeout' ? `timed out after ${ctx.timeoutMs} ms` : 'cancelled';
      const cancel = (): Promise<void> =>
        route.cancel(query).then(
          (where) => ctx.log(`query ${query.queryId} ${why}; cancelled at ${where}`),
          (err: Error) => ctx.log(`query ${query.queryId} ${why}; the cancel failed: ${err.message}`),
        );
      if (placed) await cancel();
      else {
        // Still being placed: cancel once it is (an SCC cannot stop a query it has not got yet),
        // without holding the caller.
        closeLater = true;
        void dispatched.then(cancel, () => undefined).finally(() => route.close());
      }
    }
    for (const m of accounting.verdictMismatches()) ctx.log(`query ${query.queryId}: batch ${m.batchId} was excluded by the Proxy's verdict but delivered ${m.records} records`);
    return outcome;
  } finally {
    if (transfer.isRecording()) {
      transfer.setAttributes({ 'hd.batches': counters.batches - before.batches, 'hd.records': counters.records - before.records, 'hd.bytes': counters.bytes - before.bytes, 'hd.batches_failed': counters.batchErrors - before.batchErrors });
    }
    transfer.end();
    if (timer) clearTimeout(timer);
    open.close();
    accounting.watch(undefined);
    if (!closeLater) route.close();
  }
}
