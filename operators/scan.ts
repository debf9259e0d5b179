/**
 * The `scan` operator of a Storage Node's query path (docs/query.md, docs/storage-node.md
 * "Queries"): for every query it reads the query's batches, a block step at a time, each step
 * waiting for a read slot of the weighted fair {@link ReadScheduler}, and emits chunks of the
 * matching records, then one eob (or a bbn with code 12 / 13) per batch.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES as CODES } from '../engine-rs/hdwpFrame';
import { applyFieldMask } from '../engine-rs/policy';
import { bbnReason } from '../query/batchNotice';
import { QueryError } from '../query/queryError';
import { MAX_CHUNK_BYTES, type Chunk } from '../stream/chunk';
import { Flow } from '../stream/flow';
import type { QueryResultElement, QueryResults, QuerySpec, QueryStop, RunningQuery } from '../stream/queryElement';
import type { ReadScheduler } from './readScheduler';
import { MergedPartials, type FoldableBatch, type PartialAccumulator } from './mergedPartials';
import { MergedRows } from './mergedRows';
import { ScanSpan } from './scanSpan';

/** The partial of a batch in which no record matched (docs/query.md, "Aggregates"). */
const EMPTY_PARTIAL = '{"v":1,"groups":[]}';
import { StageCounters } from '../stream/stageCounters';

/** What one read step of a batch produced. */
export interface BatchScanStep {
  /** The matching records, back to back. */
  readonly records: Buffer;
  readonly matched: number;
  /** Records the kernel evaluated. */
  readonly scanned: number;
  /** Blocks the kernel read and evaluated in this step. */
  readonly blocksRead: number;
  /** Blocks the zone maps ruled out in this step. */
  readonly blocksSkipped: number;
  /** No blocks are left. */
  readonly done: boolean;
  /** With verify_hash, on the last step: whether the recomputed chain matched the stored closing hash. */
  readonly hashOk?: boolean;
  /** For an aggregate query, on the last step: the batch's partial (aggregate frame JSON); `records` is then empty. */
  readonly partial?: string;
}

/** One batch being read with a query's filter. */
export interface BatchScan {
  /** Reads the next block step (about `stepBytes` of records, at least one block). */
  next(): Promise<BatchScanStep>;
  /** With merged partials (`CompiledQuery.newAccumulator`), after the last step: folds the batch's partial in. */
  readonly foldInto?: FoldableBatch['foldInto'];
  close(): void;
}

/** A batch that cannot be read here: `code` 13 (missing, not held, damaged). */
export interface BatchUnreadable {
  readonly code: number;
  readonly message: string;
}

/** Rows of a step as one columnar body (engine-rs/columnar.ts), for one columns frame. */
export interface ColumnarPiece {
  readonly rows: number;
  readonly body: Buffer;
}

/** A query's filters compiled for its dataset. */
export interface CompiledQuery {
  /** Record size of the results (the dataset's). */
  readonly recordSize: number;
  /**
   * Present when the query asked for columnar results (`result_format: "columns"`): a step's
   * matching records, already masked, as columnar bodies (in record order), sent instead of records.
   */
  readonly encodeColumns?: (records: Buffer) => Promise<ColumnarPiece[]>;
  /**
   * The query carries an `aggregate`: steps fold their matches natively and the last one carries the
   * batch's partial, sent as one aggregate frame right before the batch's eob (none on a bbn).
   */
  readonly aggregate?: boolean;
  /**
   * The query's aggregate with merged partials (HDQuery `merge_batches`): a fresh accumulator the
   * query's batches fold into (their steps then carry no `partial`; each BatchScan has `foldInto`).
   */
  readonly newAccumulator?: () => PartialAccumulator;
  /**
   * HDQuery `top`: the best records of a set of matching records (ties with the k-th kept, original
   * order). A batch's steps feed it and only its result is sent, at the batch's end.
   */
  readonly selectTop?: (records: Buffer) => Buffer;
  /** Opens one batch for reading, or says why it cannot be read. */
  open(batchId: BatchID, verifyHash: boolean): Promise<BatchScan | BatchUnreadable>;
}

/** Where a scan finds filters and segments: the node's schemas and batch index, and the engine-rs kernel. */
export interface ScanSource {
  /** Compiles a query for its dataset; throws {@link QueryError} naming the key for a filter the schema refuses. */
  compile(spec: QuerySpec, helloRecordSize: number): Promise<CompiledQuery>;
}

/** Counters a scan reports as it reads (the node's /metrics). */
export interface ScanMeter {
  step(s: BatchScanStep): void;
  /** A batch ended: `eob`, or the bbn code. */
  batch(outcome: 'eob' | number): void;
  /** Queries scanning now changed by `delta`. */
  active(delta: number): void;
}

/** Options of {@link scan}. */
export interface ScanOptions {
  readonly source: ScanSource;
  readonly scheduler: ReadScheduler;
  /**
   * Batches of one query read at once (default 1): each batch's read steps are native tasks on
   * libuv's pool, so several batches scan on several cores. The Storage Node's `query_threads`.
   */
  readonly queryThreads?: number;
  /** Result chunks of one query waiting at the sink before that query's scan pauses (default 4). */
  readonly maxPendingChunks?: number;
  /** `received`: records scanned; `sent`: records matched and emitted; `dropped`: records the filters left out; `controls`: eob + bbn; `errors`: bbn. */
  readonly counters?: StageCounters;
  readonly meter?: ScanMeter;
  /** Batches that failed and queries refused (the pipeline prints a bounded number). */
  readonly report?: (message: string) => void;
}

function isUnreadable(x: BatchScan | BatchUnreadable): x is BatchUnreadable {
  return 'code' in x;
}

/**
 * Runs every query that arrives, concurrently, each reading its batches in order. Between steps a
 * query checks its signal, so a cancel stops its reads within one block step; it also waits while
 * more than `maxPendingChunks` of its results are still on their way to the client. Completes once
 * the input completed and every query ended.
 *
 * @example
 * queries$.pipe(scan({ source, scheduler: new ReadScheduler(2) }))
 */
export function scan(opts: ScanOptions): OperatorFunction<Chunk, QueryResultElement> {
  const counters = opts.counters ?? new StageCounters('records');
  const maxPending = opts.maxPendingChunks ?? 4;
  const queryThreads = opts.queryThreads ?? 1;
  const report = opts.report ?? (() => undefined);
  return (input) =>
    new Observable<QueryResultElement>((subscriber) => {
      let running = 0;
      let inputDone = false;
      let active = true;
      const live = new Set<RunningQuery>();
      const emit = (el: QueryResultElement): void => {
        if (active) subscriber.next(el);
      };
      const settle = (): void => {
        if (inputDone && running === 0 && active) subscriber.complete();
      };

      const runQuery = async (q: RunningQuery, traced: ScanSpan): Promise<void> => {
        const spec = q.spec;
        let compiled: CompiledQuery;
        try {
          compiled = await opts.source.compile(spec, q.helloRecordSize);
        } catch (err) {
          const message = err instanceof QueryError ? err.message : `cannot prepare the query: ${(err as Error).message}`;
          counters.errors++;
          report(`query ${spec.queryId}: ${message}`);
          q.reply({ kind: 'error', code: err instanceof QueryError ? CODES.badQuery : CODES.internal, message });
          q.end();
          return;
        }
        if (spec.fieldMask !== undefined && spec.fieldMask.length !== compiled.recordSize) {
          const message = `field_mask: ${spec.fieldMask.length} bytes, the records of '${spec.dataset}' are ${compiled.recordSize} bytes (the mask is one record long)`;
          counters.errors++;
          report(`query ${spec.queryId}: ${message}`);
          q.reply({ kind: 'error', code: CODES.badQuery, message });
          q.end();
          return;
        }
        // Sent on the result stream only to a client that reads this build's result-stream extensions (merge_batches).
        const tc = spec.mergeBatches === true ? traced.traceContext() : undefined;
        const results: QueryResults = { query: q, recordSize: compiled.recordSize, batches: spec.batchIds.length, flow: new Flow(), ...(tc && { traceContext: tc }) };
        const merged = compiled.newAccumulator
          ? new MergedPartials(compiled.newAccumulator(), (json, completes) => {
              counters.controls += completes.length;
              for (let i = 0; i < completes.length; i++) {
                opts.meter?.batch('eob');
                traced.batch('eob');
              }
              emitted++;
              emit({ kind: 'aggregate', dataset: spec.dataset, batchId: (completes[0] as { batchId: BatchID }).batchId, json, completes, results });
            })
          : undefined;
        const queue = opts.scheduler.join(spec.qos);
        let emitted = 0;
        let matchedTotal = 0;
        const limitReached = (): boolean => spec.limit !== undefined && matchedTotal >= spec.limit;
        const end = (batchId: BatchID, recordCount: number): void => {
          counters.controls++;
          opts.meter?.batch('eob');
          traced.batch('eob');
          emitted++;
          emit({ kind: 'eob', dataset: spec.dataset, batchId, recordCount, results });
        };
        const fail = (batchId: BatchID, code: number, message: string): void => {
          counters.controls++;
          counters.errors++;
          opts.meter?.batch(code);
          traced.batch('bbn');
          report(`query ${spec.queryId}: ${message}`);
          emitted++;
          emit({ kind: 'bbn', dataset: spec.dataset, batchId, reason: bbnReason(code, message), code, results });
        };
        // The query's batches are read by up to `queryThreads` workers at once, each taking the next
        // batch not yet started: their steps (Neon tasks) run on several pool threads, frames of
        // different batches interleave on the result stream, and each worker still waits on the
        // query's flow before every step, so the client's pace bounds what is in flight.
        // Merged rows (HDQuery merge_batches): small batches' matches are held and sent together, completed by one eobs.
        const rows =
          spec.mergeBatches === true && !compiled.aggregate
            ? new MergedRows({ recordSize: compiled.recordSize, ...(compiled.selectTop && { selectTop: compiled.selectTop }) }, async (carrier, records, completes) => {
                if (carrier !== undefined && records !== undefined) await send(carrier, records);
                counters.controls += completes.length;
                for (let i = 0; i < completes.length; i++) {
                  opts.meter?.batch('eob');
                  traced.batch('eob');
                }
                emitted++;
                emit({ kind: 'eobs', dataset: spec.dataset, completes, results });
              })
            : undefined;
        /** Sends a batch's matching records (the buffer is ours): masked, then as columns or records frames. */
        const send = async (batchId: BatchID, records: Buffer): Promise<void> => {
          // Hidden fields are zeroed after filtering (filters see the stored values), one native call per step.
          if (spec.fieldMask !== undefined) applyFieldMask(records, spec.fieldMask);
          if (compiled.encodeColumns) {
            // Columnar results: decoded after the mask, so a hidden field's column holds zeros' presentation.
            for (const p of await compiled.encodeColumns(records)) {
              counters.sent += p.rows;
              emitted++;
              emit({ kind: 'columns', dataset: spec.dataset, batchId, rows: p.rows, body: p.body, results });
            }
            return;
          }
          for (const c of chunksOf(records, compiled.recordSize)) {
            const count = c.length / compiled.recordSize;
            counters.sent += count;
            emitted++;
            emit({ kind: 'records', dataset: spec.dataset, batchId, count, recordSize: compiled.recordSize, buf: c, results });
          }
        };
        let nextBatch = 0;
        const worker = async (): Promise<void> => {
          while (nextBatch < spec.batchIds.length) {
            const batchId = spec.batchIds[nextBatch++] as BatchID;
            if (q.signal.aborted) break;
            if (limitReached()) {
              // The query has what it asked for: the batches left are closed unread.
              end(batchId, 0);
              continue;
            }
            const opened = await compiled.open(batchId, spec.verifyHash);
            if (isUnreadable(opened)) {
              fail(batchId, opened.code, opened.message);
              continue;
            }
            let sent = 0;
            let partial: string | undefined;
            let last: BatchScanStep | undefined;
            let folded = false;
            let best: Buffer | undefined;
            let topMatched = 0;
            // Merged rows: this batch's matches, held while they stay small.
            let held: Buffer[] | undefined = rows ? [] : undefined;
            let heldBytes = 0;
            try {
              while (!last?.done) {
                await results.flow.whenAtMost(maxPending);
                if (q.signal.aborted || limitReached()) break;
                const slot = await queue.acquire(q.signal);
                try {
                  last = await opened.next();
                } finally {
                  slot.release();
                }
                opts.meter?.step(last);
                traced.step(last, compiled.recordSize);
                // A batch answered from its summary matched records the kernel never read: they count as received.
                const seen = Math.max(last.scanned, last.matched);
                counters.received += seen;
                counters.dropped += seen - last.matched;
                if (compiled.aggregate) {
                  // The step's matches were folded into the batch's partial natively; it comes with the last step.
                  counters.sent += last.matched;
                  sent += last.matched;
                  matchedTotal += last.matched;
                  if (last.partial !== undefined) partial = last.partial;
                  continue;
                }
                if (last.matched === 0) continue;
                if (q.signal.aborted) {
                  counters.dropped += last.matched;
                  break;
                }
                if (compiled.selectTop) {
                  // Top records: the step's matches join the batch's best so far; the best go out at the batch's end.
                  topMatched += last.matched;
                  best = compiled.selectTop(best === undefined ? last.records : Buffer.concat([best, last.records]));
                  continue;
                }
                if (held !== undefined) {
                  heldBytes += last.records.length;
                  matchedTotal += last.matched;
                  if (heldBytes <= MergedRows.MAX_BATCH_BYTES) {
                    held.push(last.records);
                    continue;
                  }
                  // Too large to hold: what was held goes out, and the batch streams as before.
                  for (const r of held) await send(batchId, r);
                  sent += (heldBytes - last.records.length) / compiled.recordSize;
                  matchedTotal -= last.matched;
                  held = undefined;
                }
                await send(batchId, last.records);
                sent += last.matched;
                matchedTotal += last.matched;
              }
              if (best !== undefined && last?.done && !q.signal.aborted && !rows) {
                const n = best.length / compiled.recordSize;
                counters.dropped += topMatched - n;
                await send(batchId, best);
                sent += n;
                matchedTotal += n;
              }
              // Merged partials: folded and listed at once, so a frame covers exactly the batches it completes.
              if (merged && opened.foldInto && last?.done && !(spec.verifyHash && last.hashOk === false) && !q.signal.aborted) {
                merged.add(opened as FoldableBatch, { batchId, recordCount: sent });
                folded = true;
              }
            } catch (err) {
              if (q.signal.aborted) break;
              if ((err as { code?: unknown }).code === 'ERR_SCAN_TOO_MANY_GROUPS') {
                // The query cannot be aggregated here: refused as a bad query (the client falls back to records).
                const message = `${(err as Error).message} (batch ${batchId.toHex()} of '${spec.dataset}')`;
                counters.errors++;
                report(`query ${spec.queryId}: ${message}`);
                q.reply({ kind: 'error', code: CODES.badQuery, message });
                q.stop({ code: CODES.badQuery, message });
                break;
              }
              fail(batchId, CODES.batchUnreadable, `batch ${batchId.toHex()} of '${spec.dataset}' could not be read: ${(err as Error).message}`);
              continue;
            } finally {
              opened.close();
            }
            if (q.signal.aborted) break;
            if (spec.verifyHash && last?.done && last.hashOk === false) {
              fail(batchId, CODES.hashMismatch, `batch ${batchId.toHex()} of '${spec.dataset}': the recomputed hash chain does not match the closing hash stored at ingest`);
            } else if (rows && last?.done && (compiled.selectTop || held !== undefined)) {
              // Held: sent with other batches', completed by their eobs.
              const records = compiled.selectTop ? (best ?? Buffer.alloc(0)) : held && held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held ?? []);
              if (compiled.selectTop) counters.dropped += topMatched - records.length / compiled.recordSize;
              rows.add(batchId, records);
            } else if (!folded) {
              if (compiled.aggregate) {
                emitted++;
                emit({ kind: 'aggregate', dataset: spec.dataset, batchId, json: partial ?? EMPTY_PARTIAL, results });
              }
              end(batchId, sent);
            }
          }
        };
        try {
          const workers = Math.max(1, Math.min(queryThreads, spec.batchIds.length));
          await Promise.all(Array.from({ length: workers }, worker));
          if (q.signal.aborted) {
            merged?.discard();
            rows?.discard();
          } else {
            merged?.flush();
            await rows?.flush();
          }
        } finally {
          merged?.discard();
          rows?.discard();
          queue.leave();
          // Nothing went to the sink: no stream was opened, so the query ends here.
          if (emitted === 0) q.end();
        }
      };

      const sub = input.subscribe({
        next: (el) => {
          if (el.kind !== 'query') {
            subscriber.error(new TypeError(`scan takes queries, got a '${el.kind}' element`));
            return;
          }
          const q = el.query;
          running++;
          live.add(q);
          opts.meter?.active(1);
          const traced = new ScanSpan(q.spec);
          let failed: unknown;
          runQuery(q, traced)
            .catch((err: unknown) => {
              failed = err;
              // A fault of our own: the query fails, the node goes on.
              const message = `query ${q.spec.queryId} failed on this node: ${err instanceof Error ? err.message : String(err)}`;
              counters.errors++;
              report(message);
              q.reply({ kind: 'error', code: CODES.internal, message });
              q.stop({ code: CODES.internal, message });
              q.end();
            })
            .finally(() => {
              traced.end(failed);
              running--;
              live.delete(q);
              opts.meter?.active(-1);
              settle();
            });
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          inputDone = true;
          settle();
        },
      });

      return () => {
        active = false;
        sub.unsubscribe();
        const stop: QueryStop = { code: CODES.shuttingDown, message: 'the storage node is shutting down' };
        for (const q of live) q.stop(stop);
      };
    });
}

/** `buf` cut at whole records into pieces of at most {@link MAX_CHUNK_BYTES} (views, no copies). */
function chunksOf(buf: Buffer, recordSize: number): Buffer[] {
  if (buf.length <= MAX_CHUNK_BYTES) return [buf];
  const step = Math.max(recordSize, Math.floor(MAX_CHUNK_BYTES / recordSize) * recordSize);
  const out: Buffer[] = [];
  for (let at = 0; at < buf.length; at += step) out.push(buf.subarray(at, at + step));
  return out;
}
