/**
 * The reference's ingest batch state table (docs/scc.md, "Batch states") as a plain class: no
 * RxJS, no timers, no I/O. `batchTimeout` is the thin operator around it (it forwards elements,
 * arms the timers and answers acks with what this table decides); tests drive it synchronously.
 */
import type { BatchID } from '../engine-rs/batchId';
import { batchEndText, batchStateRefusal, type BatchEnd } from '../hdwp/refusals';
import { batchKey, type AckResult } from '../stream/chunk';

/** A batch's state in the reference's ingest state table. */
export type BatchState = 'open' | 'closed' | 'discarded';

/** One batch's row. */
export interface BatchEntry {
  readonly dataset: string;
  readonly batchId: BatchID;
  /** {@link batchKey} of the batch. */
  readonly key: string;
  state: BatchState;
  /** Records forwarded while open. */
  count: number;
  /** Why the batch left `open` (absent while open). */
  end?: BatchEnd;
  /**
   * Set on a discarded batch once its sender sent a bbn for it (the bbn that discarded it, or one
   * repeated after a timeout or refusal discarded it): the sender replaces the batch, so its next
   * records or eob open the batch afresh under the same id.
   */
  replaceable?: boolean;
}

/** Options of {@link BatchStateTable}. */
export interface BatchStateTableOptions {
  /** Most batches open at once; records opening one more are refused (the batch is discarded). Default 10 000. */
  readonly maxOpenBatches?: number;
  /** Closed / discarded batches remembered, so late records and repeated closes are recognised. Default 65 536. */
  readonly rememberClosed?: number;
  /** Told about every state change (for logs and metrics). */
  readonly onTransition?: (batchId: BatchID, dataset: string, to: BatchState, why: string) => void;
}

/** What to do with records: forward them (the batch is open), or drop them with `message`. */
export type RecordsVerdict = { readonly accepted: true; readonly entry: BatchEntry } | { readonly accepted: false; readonly entry: BatchEntry; readonly message: string };

/**
 * What to do with an eob or bbn: `forward` it (it closed or discarded the open batch), answer its
 * ack `ok` without forwarding (`ack`: a repeated bbn, or one for a batch never seen), or `refuse` it
 * with the error frame code and message for its ack.
 */
export type CloseVerdict =
  | { readonly action: 'forward'; readonly entry: BatchEntry }
  | { readonly action: 'ack'; readonly entry: BatchEntry }
  | { readonly action: 'refuse'; readonly entry: BatchEntry; readonly code: number; readonly message: string };

/**
 * Rows of open batches and of the last `rememberClosed` closed or discarded ones. A batch is `open`
 * from its first records (or its closing element), `closed` by an eob, `discarded` by a bbn, and
 * the timeout's action is applied by {@link expire}. See `batchTimeout` for the rules in prose.
 */
export class BatchStateTable {
  private readonly open = new Map<string, BatchEntry>();
  // Insertion-ordered, so the oldest is forgotten first once more than `remember` are kept.
  private readonly ended = new Map<string, BatchEntry>();
  private readonly maxOpen: number;
  private readonly remember: number;

  constructor(private readonly opts: BatchStateTableOptions = {}) {
    this.maxOpen = opts.maxOpenBatches ?? 10_000;
    this.remember = opts.rememberClosed ?? 65_536;
  }

  /** Batches open now, oldest first. */
  openBatches(): IterableIterator<BatchEntry> {
    return this.open.values();
  }

  /** True while `e` is the open row of its batch (a timer armed for it still applies). */
  isOpen(e: BatchEntry): boolean {
    return this.open.get(e.key) === e;
  }

  /** Records of a batch: counted and accepted while it is open (opening it on its first element). */
  records(dataset: string, batchId: BatchID, count: number): RecordsVerdict {
    const e = this.opened(dataset, batchId);
    if (e.state !== 'open') {
      return { accepted: false, entry: e, message: `${count} records for batch ${batchId.toString()} of '${dataset}' refused: the batch is ${e.state} (${this.why(e)})` };
    }
    e.count += count;
    return { accepted: true, entry: e };
  }

  /** An eob: closes the open batch, else is refused naming the batch's state. */
  eob(dataset: string, batchId: BatchID): CloseVerdict {
    const e = this.opened(dataset, batchId);
    if (e.state !== 'open') return this.refusal('eob', e);
    this.leave(e, { state: 'closed', cause: 'eob' });
    return { action: 'forward', entry: e };
  }

  /**
   * A bbn: discards an open batch (forward); a discarded one stays discarded and becomes replaceable
   * (ack); one never seen is remembered discarded and replaceable (ack: no replica holds any of it);
   * a closed batch refuses it.
   */
  bbn(dataset: string, batchId: BatchID, reason: string): CloseVerdict {
    const key = batchKey(dataset, batchId);
    const e = this.open.get(key) ?? this.ended.get(key);
    if (!e) {
      const end: BatchEnd = { state: 'discarded', cause: 'bbn', detail: reason };
      const fresh: BatchEntry = { dataset, batchId, key, state: 'discarded', count: 0, end, replaceable: true };
      this.remembered(fresh);
      this.opts.onTransition?.(batchId, dataset, 'discarded', batchEndText(end));
      return { action: 'ack', entry: fresh };
    }
    if (e.state === 'open') {
      this.leave(e, { state: 'discarded', cause: 'bbn', detail: reason });
      e.replaceable = true;
      return { action: 'forward', entry: e };
    }
    if (e.state === 'discarded') {
      e.replaceable = true;
      return { action: 'ack', entry: e };
    }
    return this.refusal('bbn', e);
  }

  /**
   * The batch timeout fired for `e`: an open batch is closed (`eob`) or discarded (`bbn`) with
   * `detail` as the reason; returns false (nothing to emit) when `e` is no longer open.
   */
  expire(e: BatchEntry, action: 'eob' | 'bbn', detail: string): boolean {
    if (!this.isOpen(e)) return false;
    this.leave(e, { state: action === 'eob' ? 'closed' : 'discarded', cause: 'timeout', detail });
    return true;
  }

  /**
   * The answer to a forwarded eob: a refusal (hash or count mismatch downstream, no replica made it
   * durable) leaves nothing durable, so the batch counts as discarded, not closed — a later resend
   * of it is not mistaken for a duplicate of a stored batch.
   */
  eobAnswered(e: BatchEntry, r: AckResult): void {
    if (r.ok || e.state !== 'closed' || this.ended.get(e.key) !== e) return;
    e.state = 'discarded';
    e.end = { state: 'discarded', cause: 'eobRefused', detail: r.message };
    this.opts.onTransition?.(e.batchId, e.dataset, 'discarded', batchEndText(e.end));
  }

  /** Forgets every row. */
  clear(): void {
    this.open.clear();
    this.ended.clear();
  }

  private why(e: BatchEntry): string {
    return e.end ? batchEndText(e.end) : '';
  }

  private refusal(kind: 'eob' | 'bbn', e: BatchEntry): CloseVerdict {
    const end: BatchEnd = e.end ?? { state: e.state === 'open' ? 'closed' : e.state, cause: 'eob' };
    return { action: 'refuse', entry: e, ...batchStateRefusal(e.dataset, e.batchId, kind, end, e.count) };
  }

  private remembered(e: BatchEntry): void {
    this.ended.set(e.key, e);
    if (this.ended.size > this.remember) this.ended.delete(this.ended.keys().next().value as string);
  }

  private leave(e: BatchEntry, end: BatchEnd): void {
    e.state = end.state;
    e.end = end;
    this.open.delete(e.key);
    this.remembered(e);
    this.opts.onTransition?.(e.batchId, e.dataset, end.state, batchEndText(end));
  }

  /**
   * The batch's row, opened on its first element. A discarded batch its sender replaces (a bbn came
   * for it) opens afresh: what arrives now is the batch sent again from its start.
   */
  private opened(dataset: string, batchId: BatchID): BatchEntry {
    const key = batchKey(dataset, batchId);
    const known = this.open.get(key) ?? this.ended.get(key);
    if (known && !(known.state === 'discarded' && known.replaceable)) return known;
    if (known) this.ended.delete(key);
    const e: BatchEntry = { dataset, batchId, key, state: 'open', count: 0 };
    if (this.open.size >= this.maxOpen) {
      // Refusing the batch as a whole keeps its fate clear: its eob will be answered with this reason.
      e.state = 'discarded';
      e.end = { state: 'discarded', cause: 'tooManyOpen', detail: `${this.maxOpen} batches are open already` };
      this.remembered(e);
      this.opts.onTransition?.(batchId, dataset, 'discarded', batchEndText(e.end));
      return e;
    }
    this.open.set(key, e);
    this.opts.onTransition?.(batchId, dataset, 'open', known ? 'sent again after its bbn (batch replaced)' : 'first element');
    return e;
  }
}
