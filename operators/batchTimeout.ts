import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';
import type { AckResult, BbnElement, Chunk, ControlElement, EobElement } from '../stream/chunk';
import { StageCounters } from '../stream/stageCounters';

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
  /**
   * Set on a discarded batch once its sender sent a bbn for it (the bbn that discarded it, or one
   * repeated after a timeout or refusal discarded it): the sender replaces the batch, so its next
   * records or eob open the batch afresh under the same id.
   */
  replaceable?: boolean;
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
      const remembered = (key: string, e: Entry): void => {
        ended.set(key, e);
        if (ended.size > remember) ended.delete(ended.keys().next().value as string);
      };
      const leave = (key: string, e: Entry, to: 'closed' | 'discarded', why: string): void => {
        e.timer?.unsubscribe();
        e.timer = undefined;
        e.state = to;
        e.why = why;
        open.delete(key);
        remembered(key, e);
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
      /**
       * The batch's entry, opened on its first element. A discarded batch its sender replaces (a
       * bbn came for it) opens afresh: what arrives now is the batch sent again from its start.
       */
      const opened = (key: string, dataset: string, batchId: BatchID): Entry => {
        const known = open.get(key) ?? ended.get(key);
        if (known && !(known.state === 'discarded' && known.replaceable)) return known;
        if (known) ended.delete(key);
        const e: Entry = { dataset, batchId, state: 'open', count: 0, why: '' };
        if (open.size >= maxOpen) {
          // Refusing the batch as a whole keeps its fate clear: its eob will be answered with this reason.
          e.state = 'discarded';
          e.why = `refused: ${maxOpen} batches are open already`;
          remembered(key, e);
          opts.onTransition?.(batchId, dataset, 'discarded', e.why);
          return e;
        }
        open.set(key, e);
        opts.onTransition?.(batchId, dataset, 'open', known ? 'sent again after its bbn (batch replaced)' : 'first element');
        return e;
      };
      const refuse = (el: EobElement | BbnElement, e: Entry): void => {
        const holds = e.state === 'closed' ? `; the batch holds ${e.count} records` : '';
        const message = `batch ${el.batchId.toString()} of '${el.dataset}' is ${e.state} (${e.why}); its ${el.kind} is refused${holds}`;
        problem(message);
        el.ack?.({ ok: false, code: e.why.includes('timeout') ? HDWP_ERROR_FRAME_CODES.timeout : HDWP_ERROR_FRAME_CODES.protocol, message });
      };
      /**
       * The eob with its answer watched: a refused eob (hash or count mismatch downstream, no
       * replica made it durable) leaves nothing durable, so the batch counts as discarded, not
       * closed — a later resend of it is not mistaken for a duplicate of a stored batch.
       */
      const watched = (key: string, e: Entry, el: EobElement): EobElement => {
        const senderAck = el.ack;
        return {
          ...el,
          ack: (r: AckResult) => {
            if (!r.ok && e.state === 'closed' && ended.get(key) === e) {
              e.state = 'discarded';
              e.why = `its eob was refused: ${r.message}`;
              opts.onTransition?.(e.batchId, e.dataset, 'discarded', e.why);
            }
            senderAck?.(r);
          },
        };
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
              const e = opened(key, el.dataset, el.batchId);
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
            case 'eob': {
              const key = keyOf(el.dataset, el.batchId);
              const e = opened(key, el.dataset, el.batchId);
              if (e.state !== 'open') {
                refuse(el, e);
                return;
              }
              leave(key, e, 'closed', 'closed by its eob');
              emitControl(watched(key, e, el));
              return;
            }
            case 'bbn': {
              const key = keyOf(el.dataset, el.batchId);
              const e = open.get(key) ?? ended.get(key);
              if (!e) {
                // Never seen (or forgotten long ago): no replica holds a partial copy, nothing to forward.
                const fresh: Entry = { dataset: el.dataset, batchId: el.batchId, state: 'discarded', count: 0, why: `discarded by its bbn: ${el.reason}`, replaceable: true };
                remembered(key, fresh);
                opts.onTransition?.(el.batchId, el.dataset, 'discarded', fresh.why);
                el.ack?.({ ok: true });
              } else if (e.state === 'open') {
                leave(key, e, 'discarded', `discarded by its bbn: ${el.reason}`);
                e.replaceable = true;
                emitControl(el);
              } else if (e.state === 'discarded') {
                e.replaceable = true;
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
