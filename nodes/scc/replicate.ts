import { Observable } from 'rxjs';
import type { ReplicaSet } from './replicas';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import { awaitEach } from '../../stream/awaitEach';
import { batchKey, type AckResult, type BbnElement, type Chunk, type EobElement } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { StageCounters } from '../../stream/stageCounters';
import { contextWith, withContext } from '../../lib/tracing/spans';
import { batchSpans } from './batchSpans';

/** Options of {@link replicate}. */
export interface ReplicateOptions {
  /** The Storage Node replicas (SN_TARGETS); the caller owns and closes them. */
  readonly replicas: ReplicaSet;
  /** The pipeline's pending-work accounting: records wait here while a replica is past its lag bound. */
  readonly flow?: Flow;
  /**
   * Counts records: received on arrival, sent once their batch is durable on the replicas, dropped
   * when it is discarded or refused (or still open when the input ends).
   */
  readonly counters?: StageCounters;
  /** Closing elements waiting for the replicas at once; more make the stream wait. Default 64. */
  readonly maxPendingCloses?: number;
  /** Told about every batch that failed or was refused. */
  readonly onProblem?: (message: string) => void;
  /** Each dataset's record size (for a batch closed or discarded without records); default the replica set's RECORD_SIZE. */
  readonly recordSizeOf?: (dataset: string) => number;
  /** Told about every batch made durable (records, bytes are not known here: records only). */
  readonly onDurable?: (records: number) => void;
}

/**
 * The SCC's replication sink (docs/scc.md, "Replication"): every records chunk goes to every live
 * replica of the {@link ReplicaSet}; an eob is answered through its `ack` once every healthy replica
 * has the batch durable (or with an error when none has), a bbn once the live replicas discarded
 * it. Closing elements are waited on in the background (up to `maxPendingCloses`), so the next
 * batch's records keep flowing while a segment commits; records themselves wait only while a
 * replica is past its lag bound, which holds the pipeline's flow and so the sender's credit.
 *
 * @example
 * chunks$.pipe(hashChain(...)); replicate({ replicas: new ReplicaSet({ targets, recordSize: 150 }) })(chunks$).subscribe();
 */
export function replicate(opts: ReplicateOptions): (input: Observable<Chunk>) => Observable<never> {
  const maxPending = opts.maxPendingCloses ?? 64;
  return (input) =>
    new Observable<never>((subscriber) => {
      const counters = opts.counters ?? new StageCounters('records');
      const flow = opts.flow ?? new Flow();
      /** Records received per open batch, not yet durable or dropped. */
      const held = new Map<string, number>();
      const pending = new Set<Promise<void>>();
      /** Each open batch's `scc.batch` span (docs/observability.md, "Traces"); none kept when nothing records. */
      const spans = batchSpans();

      const answer = (el: EobElement | BbnElement, work: Promise<AckResult>): Promise<void> => {
        const key = batchKey(el.dataset, el.batchId);
        const records = held.get(key) ?? 0;
        held.delete(key);
        const span = spans.take(el, records, opts.recordSizeOf?.(el.dataset));
        const p = work
          .catch((err: unknown): AckResult => ({ ok: false, code: HDWP_ERROR_FRAME_CODES.internal, message: `replication failed: ${(err as Error).message}` }))
          .then((r) => {
            if (el.kind === 'eob' && r.ok) {
              counters.sent += records;
              opts.onDurable?.(records);
            } else {
              counters.dropped += records;
              if (!r.ok) {
                counters.errors++;
                opts.onProblem?.(`batch ${el.batchId.toString()} of '${el.dataset}' (${el.kind}): ${r.message}`);
              }
            }
            spans.acked(span, el, r);
            el.ack?.(r);
          })
          .finally(() => pending.delete(p));
        pending.add(p);
        return p;
      };

      const step = async (el: Chunk): Promise<readonly never[]> => {
        switch (el.kind) {
          case 'records': {
            if (el.batchId === undefined) throw new TypeError('replicate takes batched records; got records without a batch id');
            counters.received += el.count;
            const key = batchKey(el.dataset, el.batchId);
            if (!held.has(key)) spans.open(key, el.dataset, el.batchId);
            spans.add(key, el.buf.length);
            held.set(key, (held.get(key) ?? 0) + el.count);
            await opts.replicas.records({ ...el, batchId: el.batchId });
            return [];
          }
          case 'eob':
          case 'bbn': {
            counters.controls++;
            const size = opts.recordSizeOf?.(el.dataset);
            // The replicas' per-replica spans hang under the batch's span.
            const span = spans.get(el);
            const close = (): Promise<AckResult> => (el.kind === 'eob' ? opts.replicas.eob(el, size) : opts.replicas.bbn(el, size));
            void answer(el, span ? withContext(contextWith(span), close) : close());
            while (pending.size >= maxPending) await Promise.race(pending);
            return [];
          }
          default:
            throw new TypeError(`replicate takes batched records, got a '${el.kind}' element`);
        }
      };

      const sub = input.pipe(awaitEach(step, flow)).subscribe({
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          void Promise.all([...pending]).then(() => {
            // Batches still open when the input ended were never closed: nothing of them is durable.
            for (const n of held.values()) counters.dropped += n;
            held.clear();
            spans.endAll('the input ended with the batch open');
            subscriber.complete();
          });
        },
      });
      return () => {
        sub.unsubscribe();
        for (const n of held.values()) counters.dropped += n;
        held.clear();
        spans.endAll('the stage stopped with the batch open');
      };
    });
}
