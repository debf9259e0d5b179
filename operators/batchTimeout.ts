import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';
import type { BbnElement, Chunk, ControlElement, EobElement } from './chunk';
import { StageCounters } from './stageCounters';

/** A batch's state in the reference's ingest state table. */
export type BatchState = 'open' | 'closed' | 'discarded';

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

interface Entry {
  readonly dataset: string;
  readonly batchId: BatchID;
  state: BatchState;
  /** Records forwarded while open. */
  count: number;
  /** Why the batch left `open`, for messages about late elements. */
  why: string;
  timer?: Subscription;
}

/** Key of a batch: batch ids are unique per dataset only. */
const keyOf = (dataset: string, batchId: BatchID): string => `${dataset}\n${batchId.toHex()}`;

/**
 * The reference's ingest batch state table for batches arriving from the network: a batch is
 * `open` from its first records (or its closing element), becomes `closed` on an eob and
 * `discarded` on a bbn, and after `timeoutMs` without any element `action` is applied to it — the
 * operator emits that eob (with the records seen) or bbn itself. Elements are forwarded at once;
 * only bookkeeping lives here.
 *
 * Refused, never forwarded: records for a closed or discarded batch (counted dropped, reported);
 * an eob for a batch no longer open and a bbn for a closed one (their `ack` answers with an error
 * naming the state). A bbn repeated for a discarded batch is acknowledged again (idempotent).
 * When the input completes, open batches stay open (a stopping SCC commits nothing half-sent);
 * their timers are cancelled.
 *
 * @example
 * frames$.pipe(batchTimeout({ timeoutMs: 60_000, action: 'eob' }))
 */
export function batchTimeout(opts: BatchTimeoutOptions): OperatorFunction<Chunk, Chunk> {
  const { timeoutMs, action } = opts;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new RangeError(`timeoutMs must be an integer ≥ 0, got ${timeoutMs}`);
  const maxOpen = opts.maxOpenBatches ?? 10_000;
  const remember = opts.rememberClosed ?? 65_536;
  const scheduler = opts.scheduler ?? asyncScheduler;

  return (source) =>
    new Observable<Chunk>((subscriber) => {
      const counters = opts.counters ?? new StageCounters('records');
      const open = new Map<string, Entry>();
      // Insertion-ordered, so the oldest is forgotten first once more than `remember` are kept.
      const ended = new Map<string, Entry>();
      let active = true;

      const problem = (message: string): void => {
        counters.errors++;
        opts.onProblem?.(message);
      };
      const leave = (key: string, e: Entry, to: 'closed' | 'discarded', why: string): void => {
        e.timer?.unsubscribe();
        e.timer = undefined;
        e.state = to;
        e.why = why;
        open.delete(key);
        ended.set(key, e);
        if (ended.size > remember) ended.delete(ended.keys().next().value as string);
        opts.onTransition?.(e.batchId, e.dataset, to, why);
      };
      const emitControl = (el: ControlElement): void => {
        counters.controls++;
        subscriber.next(el);
      };
      const arm = (key: string, e: Entry): void => {
        if (timeoutMs === 0) return;
        e.timer?.unsubscribe();
        e.timer = scheduler.schedule(() => {
          if (!active || open.get(key) !== e) return;
          const why = `no activity for ${timeoutMs} ms (BATCH_TIMEOUT_MS, TIMEOUT_ACTION=${action.toUpperCase()})`;
          if (action === 'eob') {
            leave(key, e, 'closed', `closed by the batch timeout: ${why}`);
            emitControl({ kind: 'eob', dataset: e.dataset, batchId: e.batchId, recordCount: e.count });
          } else {
            leave(key, e, 'discarded', `discarded by the batch timeout: ${why}`);
            emitControl({ kind: 'bbn', dataset: e.dataset, batchId: e.batchId, reason: why });
          }
        }, timeoutMs);
      };
      const opened = (key: string, dataset: string, batchId: BatchID): Entry | undefined => {
        const known = open.get(key) ?? ended.get(key);
        if (known) return known;
        const e: Entry = { dataset, batchId, state: 'open', count: 0, why: '' };
        if (open.size >= maxOpen) {
          // Refusing the batch as a whole keeps its fate clear: its eob will be answered with this reason.
          e.state = 'discarded';
          e.why = `refused: ${maxOpen} batches are open already`;
          ended.set(key, e);
          if (ended.size > remember) ended.delete(ended.keys().next().value as string);
          opts.onTransition?.(batchId, dataset, 'discarded', e.why);
          return e;
        }
        open.set(key, e);
        opts.onTransition?.(batchId, dataset, 'open', 'first element');
        return e;
      };
      const refuse = (el: EobElement | BbnElement, e: Entry): void => {
        const message = `batch ${el.batchId.toString()} of '${el.dataset}' is ${e.state} (${e.why}); its ${el.kind} is refused`;
        problem(message);
        el.ack?.({ ok: false, code: e.why.includes('timeout') ? HDWP_ERROR_FRAME_CODES.timeout : HDWP_ERROR_FRAME_CODES.protocol, message });
      };

      const upstream = source.subscribe({
        next: (el) => {
          if (!active) return;
          switch (el.kind) {
            case 'records': {
              if (el.batchId === undefined) {
                subscriber.error(new TypeError('batchTimeout takes batched records; got records without a batch id'));
                return;
              }
              counters.received += el.count;
              const key = keyOf(el.dataset, el.batchId);
              const e = opened(key, el.dataset, el.batchId) as Entry;
              if (e.state !== 'open') {
                counters.dropped += el.count;
                problem(`${el.count} records for batch ${el.batchId.toString()} of '${el.dataset}' refused: the batch is ${e.state} (${e.why})`);
                return;
              }
              e.count += el.count;
              counters.sent += el.count;
              subscriber.next(el);
              arm(key, e);
              return;
            }
            case 'eob':
            case 'bbn': {
              const key = keyOf(el.dataset, el.batchId);
              const e = opened(key, el.dataset, el.batchId) as Entry;
              if (e.state === 'open') {
                leave(key, e, el.kind === 'eob' ? 'closed' : 'discarded', el.kind === 'eob' ? 'closed by its eob' : `discarded by its bbn: ${el.reason}`);
                emitControl(el);
              } else if (el.kind === 'bbn' && e.state === 'discarded') {
                el.ack?.({ ok: true });
              } else {
                refuse(el, e);
              }
              return;
            }
            default:
              subscriber.error(new TypeError(`batchTimeout takes batched records, got a '${el.kind}' element`));
          }
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          for (const e of open.values()) e.timer?.unsubscribe();
          subscriber.complete();
        },
      });

      return () => {
        active = false;
        upstream.unsubscribe();
        for (const e of open.values()) e.timer?.unsubscribe();
        open.clear();
        ended.clear();
      };
    });
}
