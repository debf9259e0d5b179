/**
 * The SCC's catch-up log (docs/scc.md, "Catch-up"): the batches some replica has not made durable
 * yet, with their records, so a replica that was down can be given what it missed. A batch leaves
 * the log as soon as every replica that needs it has acknowledged it, so in steady state the log
 * holds only the batches in flight. The records are bounded by `maxBytes`: past it the oldest
 * batches lose their records (they are `truncated`), and a replica that still needs a truncated
 * batch cannot be caught up from here — it is out of sync.
 */
import type { BatchID } from '../../engine-rs/batchId';
import { batchKey } from '../../stream/chunk';

/** How a logged batch ended. */
export type BatchEnd = { readonly kind: 'eob'; readonly recordCount: number; readonly closingHash?: Uint8Array } | { readonly kind: 'bbn'; readonly reason: string };

/** One batch in the log. */
export interface LoggedBatch {
  readonly key: string;
  readonly dataset: string;
  readonly batchId: BatchID;
  readonly recordSize: number;
  /** Records chunks in arrival order (empty once truncated). */
  readonly chunks: Buffer[];
  /** Bytes of `chunks`. */
  bytes: number;
  /** Set once the batch's eob or bbn went by. */
  end?: BatchEnd;
  /** The records were dropped to keep the log under its cap. */
  truncated: boolean;
  /** Replicas that have not acknowledged the batch yet. */
  readonly waitingFor: Set<string>;
}

/** Key of a batch: batch ids are unique per dataset only (the stream kernel's one spelling of it). */
export { batchKey };

/** Options of {@link CatchUpLog}. */
export interface CatchUpLogOptions {
  /** Most record bytes kept. */
  readonly maxBytes: number;
  /** Most batches kept (records or not); past it the oldest batch's waiting replicas are given up on. */
  readonly maxBatches?: number;
  /** Told when replicas can no longer be caught up because a batch they need was dropped whole. */
  readonly onLost?: (replicas: readonly string[], batch: LoggedBatch) => void;
}

/** Bounded log of the batches not yet durable on every replica. */
export class CatchUpLog {
  private readonly batches = new Map<string, LoggedBatch>();
  private recordBytes = 0;
  /** Batches truncated since start, for /health. */
  truncations = 0;

  /** @param opts caps and the lost-batch callback */
  constructor(private readonly opts: CatchUpLogOptions) {}

  /** Record bytes held. */
  get bytes(): number {
    return this.recordBytes;
  }

  /** Batches held. */
  get size(): number {
    return this.batches.size;
  }

  /** The batch, if logged. */
  get(dataset: string, batchId: BatchID): LoggedBatch | undefined {
    return this.batches.get(batchKey(dataset, batchId));
  }

  /**
   * The batch, created with `replicas` waiting for it when new. A logged batch that already ended
   * with a bbn is replaced by a new entry: its sender discarded it and is sending it again (batch
   * replace, docs/scc.md). Replicas still owed the old bbn are owed the new batch instead, whose
   * catch-up starts with a bbn anyway.
   */
  open(dataset: string, batchId: BatchID, recordSize: number, replicas: Iterable<string>): LoggedBatch {
    const key = batchKey(dataset, batchId);
    let b = this.batches.get(key);
    if (b?.end?.kind === 'bbn') {
      const owed = b.waitingFor;
      this.batches.delete(key);
      this.recordBytes -= b.bytes;
      b = { key, dataset, batchId, recordSize, chunks: [], bytes: 0, truncated: false, waitingFor: new Set([...replicas, ...owed]) };
      this.batches.set(key, b);
    } else if (!b) {
      b = { key, dataset, batchId, recordSize, chunks: [], bytes: 0, truncated: false, waitingFor: new Set(replicas) };
      this.batches.set(key, b);
      this.trimBatches();
    }
    return b;
  }

  /** Appends a records chunk to its batch (kept by reference: chunks are never reused upstream). */
  append(b: LoggedBatch, buf: Buffer): void {
    if (b.truncated) return;
    b.chunks.push(buf);
    b.bytes += buf.length;
    this.recordBytes += buf.length;
    this.trimBytes();
  }

  /** Notes how the batch ended; it leaves the log once nobody waits for it. */
  end(b: LoggedBatch, end: BatchEnd): void {
    b.end = end;
    this.dropIfDone(b);
  }

  /** `replica` has the batch durable (or discarded, for a bbn). */
  done(b: LoggedBatch, replica: string): void {
    b.waitingFor.delete(replica);
    this.dropIfDone(b);
  }

  /** `replica` is given up on (out of sync): nothing waits for it any more. */
  forget(replica: string): void {
    for (const b of [...this.batches.values()]) {
      b.waitingFor.delete(replica);
      this.dropIfDone(b);
    }
  }

  /** Keys of every batch held now (open, or closed and waiting for a replica). */
  keys(): string[] {
    return [...this.batches.keys()];
  }

  /** Batches `replica` still needs, oldest first. */
  waitingFor(replica: string): LoggedBatch[] {
    return [...this.batches.values()].filter((b) => b.waitingFor.has(replica));
  }

  /** Drops everything (shutdown). */
  clear(): void {
    this.batches.clear();
    this.recordBytes = 0;
  }

  private dropIfDone(b: LoggedBatch): void {
    if (b.end === undefined || b.waitingFor.size > 0) return;
    if (this.batches.get(b.key) !== b) return;
    this.batches.delete(b.key);
    this.recordBytes -= b.bytes;
  }

  private trimBytes(): void {
    for (const b of this.batches.values()) {
      if (this.recordBytes <= this.opts.maxBytes) return;
      if (b.truncated || b.bytes === 0) continue;
      this.recordBytes -= b.bytes;
      b.chunks.length = 0;
      b.bytes = 0;
      b.truncated = true;
      this.truncations++;
    }
  }

  private trimBatches(): void {
    const max = this.opts.maxBatches ?? 100_000;
    while (this.batches.size > max) {
      const oldest = this.batches.values().next().value as LoggedBatch;
      this.batches.delete(oldest.key);
      this.recordBytes -= oldest.bytes;
      if (oldest.waitingFor.size > 0) this.opts.onLost?.([...oldest.waitingFor], oldest);
    }
  }
}
