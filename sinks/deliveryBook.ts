/**
 * `sccSink`'s delivery bookkeeping as a plain class: which batches are receiving records, which
 * were closed (eob or bbn sent) and wait for the SCC's answer, and what a checkpoint has to wait
 * for. No RxJS, no sockets: the sink sends and reads answers, this book only records them; tests
 * drive it synchronously.
 */
import type { BatchDigest } from '../engine-rs/hashChain';
import type { BatchID } from '../engine-rs/batchId';
import { batchKey } from '../stream/chunk';

/** A batch with records handed to the SCC and no answer yet. */
export interface PendingBatch {
  /** Records and record bytes sent for it in this run. */
  records: number;
  bytes: number;
  /** The batch digest of the records sent, set by the sink on the first records (its eob carries it). */
  digest?: BatchDigest;
  /** Settles once the batch is answered: resolved when durable or let go, rejected when it failed. */
  readonly settled: Promise<void>;
}

interface Entry extends PendingBatch {
  resolve(): void;
  reject(err: Error): void;
}

function newEntry(): Entry {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const settled = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  settled.catch(() => undefined);
  return { records: 0, bytes: 0, settled, resolve, reject };
}

/**
 * Batches receiving records by dataset and batch id, and batches closing (their eob or bbn sent,
 * not answered). The two are kept apart: records of the same id that come after a bbn (a window
 * rebuilt after a rebalance) are a new copy of the batch, sent afresh and settled by its own eob.
 */
export class DeliveryBook {
  private readonly receiving = new Map<string, Entry>();
  private readonly closing = new Set<Entry>();

  /** Records sent for a batch; `first` is true when they open a new copy of it (the sink sends its replace bbn first). */
  records(dataset: string, batchId: BatchID, count: number, bytes: number): { readonly batch: PendingBatch; readonly first: boolean } {
    const key = batchKey(dataset, batchId);
    let b = this.receiving.get(key);
    const first = !b;
    if (!b) {
      b = newEntry();
      this.receiving.set(key, b);
    }
    b.records += count;
    b.bytes += bytes;
    return { batch: b, first };
  }

  /** The batch receiving records under this id, if any. */
  current(dataset: string, batchId: BatchID): PendingBatch | undefined {
    return this.receiving.get(batchKey(dataset, batchId));
  }

  /**
   * The batch's eob or bbn was sent: it moves to the closing batches (an empty one when no records
   * were sent for it) and stays listed until {@link settle}, so a checkpoint taken meanwhile waits for it.
   */
  close(dataset: string, batchId: BatchID): PendingBatch {
    const key = batchKey(dataset, batchId);
    const b = this.receiving.get(key) ?? newEntry();
    this.receiving.delete(key);
    this.closing.add(b);
    return b;
  }

  /** The SCC answered a closing batch: it is settled (`err`: rejected with it) and no longer pending. */
  settle(b: PendingBatch, err?: Error): void {
    const e = b as Entry;
    if (err) e.reject(err);
    else e.resolve();
  }

  /** The answer's handling is over: the batch leaves the closing batches. */
  forget(b: PendingBatch): void {
    this.closing.delete(b as Entry);
  }

  /** Batches receiving records or waiting for an answer. */
  get pending(): number {
    return this.receiving.size + this.closing.size;
  }

  /** Resolves once every batch pending now is settled (rejects when one of them failed). */
  durableNow(): Promise<void> {
    return Promise.all([...this.receiving.values(), ...this.closing].map((b) => b.settled)).then(() => undefined);
  }

  /** Rejects every pending batch with `why` and forgets them all; returns the records they held. */
  abandon(why: string): number {
    let records = 0;
    for (const b of [...this.receiving.values(), ...this.closing]) {
      records += b.records;
      b.reject(new Error(why));
    }
    this.receiving.clear();
    this.closing.clear();
    return records;
  }
}
