import { asyncScheduler, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { BatchID } from '../engine-rs/batchId';
import { isBatched, type AckResult, type BatchedRecordChunk, type Chunk, type ControlElement, type EobElement } from '../stream/chunk';
import { operate } from '../stream/operate';
import { StageCounters } from '../stream/stageCounters';
import { BatchStateTable, type BatchEntry, type BatchState } from './batchStateTable';

export type { BatchState } from './batchStateTable';

/** Options of {@link batchTimeout}. */
export interface BatchTimeoutOptions {
  /** Inactivity after which an open batch gets `action` (BATCH_TIMEOUT_MS); 0 never times out. */
  readonly timeoutMs: number;
  /** What a timeout applies (TIMEOUT_ACTION): an eob closes the batch, a bbn discards it. */
  readonly action: 'eob' | 'bbn';
  /** Most batches open at once; records opening one more are refused (the batch is discarded). Default 10 000. */
  readonly maxOpenBatches?: number;
  /** Closed / discarded batches remembered, so late records and repeated closes are recognised. Default 65 536. */
  readonly rememberClosed?: number;
  /** Counts records: received, sent, dropped (records refused for a closed or discarded batch). */
  readonly counters?: StageCounters;
  /** Told about every refused element. */
  readonly onProblem?: (message: string) => void;
  /** Told about every state change (for logs and metrics). */
  readonly onTransition?: (batchId: BatchID, dataset: string, to: BatchState, why: string) => void;
  /** Timers run on it (tests pass a virtual-time scheduler). */
  readonly scheduler?: SchedulerLike;
}

/**
 * The reference's ingest batch state table for batches arriving from the network: a batch is
 * `open` from its first records (or its closing element), becomes `closed` on an eob and
 * `discarded` on a bbn, and after `timeoutMs` without any element `action` is applied to it — the
 * operator emits that eob (with the records seen) or bbn itself. Elements are forwarded at once;
 * only bookkeeping lives here.
 *
 * Refused, never forwarded: records for a closed or discarded batch (counted dropped, reported);
 * an eob for a batch no longer open and a bbn for a closed one (their `ack` answers with an error
 * naming the state; a closed batch's answer says how many records it holds). A bbn repeated for a
 * discarded batch is acknowledged again (idempotent); a bbn for a batch never seen is acknowledged
 * here and not forwarded (no replica holds anything of it).
 *
 * Batch replace (docs/scc.md): a sender's bbn marks the discarded batch replaceable, and the next
 * records or eob of that batch id open it afresh — so an ingester restarted after a crash discards
 * the half-sent copy and sends the batch again. A closed batch is never replaced. An eob whose
 * answer is a refusal (hash or count mismatch, no replica made it durable) turns the batch from
 * closed to discarded, so it too can be replaced after a bbn.
 * When the input completes, open batches stay open (a stopping SCC commits nothing half-sent);
 * their timers are cancelled.
 *
 * @example
 * frames$.pipe(batchTimeout({ timeoutMs: 60_000, action: 'eob' }))
 */
export function batchTimeout(opts: BatchTimeoutOptions): OperatorFunction<Chunk, BatchedRecordChunk | ControlElement> {
  const { timeoutMs, action } = opts;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new RangeError(`timeoutMs must be an integer ≥ 0, got ${timeoutMs}`);
  const scheduler = opts.scheduler ?? asyncScheduler;

  return operate<Chunk, BatchedRecordChunk | ControlElement>(({ destination, isActive }) => {
    const counters = opts.counters ?? new StageCounters('records');
    const table = new BatchStateTable({ maxOpenBatches: opts.maxOpenBatches, rememberClosed: opts.rememberClosed, onTransition: opts.onTransition });
    /** The timeout armed for each open batch. */
    const timers = new Map<BatchEntry, Subscription>();

    const problem = (message: string): void => {
      counters.errors++;
      opts.onProblem?.(message);
    };
    const disarm = (e: BatchEntry): void => {
      timers.get(e)?.unsubscribe();
      timers.delete(e);
    };
    const emitControl = (el: ControlElement): void => {
      counters.controls++;
      destination.next(el);
    };
    const arm = (e: BatchEntry): void => {
      if (timeoutMs === 0) return;
      disarm(e);
      timers.set(
        e,
        scheduler.schedule(() => {
          timers.delete(e);
          const why = `no activity for ${timeoutMs} ms (BATCH_TIMEOUT_MS, TIMEOUT_ACTION=${action.toUpperCase()})`;
          if (!isActive() || !table.expire(e, action, why)) return;
          if (action === 'eob') emitControl({ kind: 'eob', dataset: e.dataset, batchId: e.batchId, recordCount: e.count });
          else emitControl({ kind: 'bbn', dataset: e.dataset, batchId: e.batchId, reason: why, cause: 'timeout' });
        }, timeoutMs),
      );
    };
    /** The eob with its answer watched, so a refused eob turns the batch from closed to discarded. */
    const watched = (e: BatchEntry, el: EobElement): EobElement => {
      const senderAck = el.ack;
      return {
        ...el,
        ack: (r: AckResult) => {
          table.eobAnswered(e, r);
          senderAck?.(r);
        },
      };
    };

    return {
      next: (el) => {
        switch (el.kind) {
          case 'records': {
            if (!isBatched(el)) throw new TypeError('batchTimeout takes batched records; got records without a batch id');
            counters.received += el.count;
            const v = table.records(el.dataset, el.batchId, el.count);
            if (!v.accepted) {
              counters.dropped += el.count;
              problem(v.message);
              return;
            }
            counters.sent += el.count;
            destination.next(el);
            arm(v.entry);
            return;
          }
          case 'eob':
          case 'bbn': {
            const v = el.kind === 'eob' ? table.eob(el.dataset, el.batchId) : table.bbn(el.dataset, el.batchId, el.reason);
            if (v.action === 'refuse') {
              problem(v.message);
              el.ack?.({ ok: false, code: v.code, message: v.message });
            } else if (v.action === 'ack') {
              el.ack?.({ ok: true });
            } else {
              disarm(v.entry);
              emitControl(el.kind === 'eob' ? watched(v.entry, el) : el);
            }
            return;
          }
          default:
            throw new TypeError(`batchTimeout takes batched records, got a '${el.kind}' element`);
        }
      },
      complete: () => {
        // Open batches stay open (a stopping SCC commits nothing half-sent); their timers are cancelled.
        for (const t of timers.values()) t.unsubscribe();
        timers.clear();
        destination.complete();
      },
      finalize: () => {
        for (const t of timers.values()) t.unsubscribe();
        timers.clear();
        table.clear();
      },
    };
  });
}
