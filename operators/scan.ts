/**
 * The `scan` operator of a Storage Node's query path (docs/query.md, docs/storage-node.md
 * "Queries"): for every query it compiles the query for its dataset and reads the query's batches
 * (operators/queryReads.ts), a block step at a time, each step waiting for a read slot of the
 * weighted fair {@link ReadScheduler}, and emits chunks of the matching records, then one eob (or a
 * bbn with code 12 / 13) per batch. The contracts it reads through are in operators/scanTypes.ts.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import { HDWP_ERROR_FRAME_CODES as CODES } from '../engine-rs/hdwpFrame';
import { QueryError } from '../query/queryError';
import type { Chunk } from '../stream/chunk';
import type { QueryResultElement, QueryStop, RunningQuery } from '../stream/queryElement';
import { StageCounters } from '../stream/stageCounters';
import { QueryReads } from './queryReads';
import type { QueryReadContext } from './queryReadState';
import type { ReadScheduler } from './readScheduler';
import { ScanSpan } from './scanSpan';
import type { CompiledQuery, ScanOptions } from './scanTypes';

export type { BatchScan, BatchScanStep, BatchUnreadable, ColumnarPiece, CompiledQuery, ScanMeter, ScanOptions, RowsAnswers, ScanSource, SummaryAnswers } from './scanTypes';

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
  const report = opts.report ?? (() => undefined);
  const ctx: QueryReadContext = {
    counters,
    ...(opts.meter && { meter: opts.meter }),
    report,
    maxPending: opts.maxPendingChunks ?? 4,
    queryThreads: opts.queryThreads ?? 1,
    scheduler: opts.scheduler,
  };
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
        await new QueryReads(q, compiled, ctx, traced, emit).run();
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
