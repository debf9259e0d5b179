/**
 * Merged rows (HDQuery `merge_batches`, docs/query.md "Merged results"): the matching records of a
 * query's small batches are held as the batches finish, then sent together under one of them (the
 * carrier) and completed by one `eobs` frame, instead of a columns frame and an eob per batch — with
 * the demo's 1 441 batches of 1 400 records, the per-batch frames, native encodes and client-side
 * Arrow batches were most of a selective read's time. With `top`, what is held is the best of all
 * the held batches (each batch's best, then the best of those), so a flush sends at most k records
 * (plus ties) for all of them.
 *
 * A batch is listed in the same synchronous step that adds its records, so a frame group's rows
 * are exactly those of the batches its `eobs` lists. The carrier is the first listed batch that
 * matched a record (a batch the Proxy's verdict excluded matches none, so it never carries rows);
 * it is declared with every row sent, the others with none.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { CompletedBatch } from './mergedPartials';

/** Options of {@link MergedRows}. */
export interface MergedRowsOptions {
  readonly recordSize: number;
  /** With `top`: the best records of a set (ties kept), applied across the held batches. */
  readonly selectTop?: (records: Buffer) => Buffer;
  /** Record bytes held before a flush (default 1 MiB). */
  readonly maxBytes?: number;
  /** Batches held before a flush (default 4 096, the most one eobs frame lists here). */
  readonly maxBatches?: number;
  /** Longest a finished batch waits for its flush (default 20 ms). */
  readonly maxDelayMs?: number;
}

/** What a flush sends: the rows under `carrier` (none: no row matched), then one eobs completing `completes`. */
export type RowsFlush = (carrier: BatchID | undefined, records: Buffer | undefined, completes: readonly CompletedBatch[]) => Promise<void>;

/** A query's held rows: batches join as they finish; groups of them go out on a threshold, a timer or `flush`. */
export class MergedRows {
  /** A batch whose matches pass this many bytes is streamed as before (default 256 KiB). */
  static readonly MAX_BATCH_BYTES = 256 * 1024;
  private held: Buffer[] = [];
  private bytes = 0;
  private pending: BatchID[] = [];
  private carrier: BatchID | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> = Promise.resolve();
  /** The first send that failed: every later flush rejects with it (its batches were never ended). */
  private failure: Error | undefined;
  private readonly maxBytes: number;
  private readonly maxBatches: number;
  private readonly maxDelayMs: number;

  /** @param send sends one group (the query's columns or records frames, then its eobs) */
  constructor(
    private readonly opts: MergedRowsOptions,
    private readonly send: RowsFlush,
  ) {
    this.maxBytes = opts.maxBytes ?? 1024 * 1024;
    this.maxBatches = Math.max(1, Math.min(opts.maxBatches ?? 4096, 4096));
    this.maxDelayMs = opts.maxDelayMs ?? 20;
  }

  /** Adds a finished batch and its matching records (the buffer is ours); may start a flush. */
  add(batchId: BatchID, records: Buffer): void {
    if (records.length > 0) {
      this.carrier ??= batchId;
      if (this.opts.selectTop) {
        const all = this.held.length === 0 ? records : Buffer.concat([...this.held, records]);
        const best = this.opts.selectTop(all);
        this.held = [best];
        this.bytes = best.length;
      } else {
        this.held.push(records);
        this.bytes += records.length;
      }
    }
    this.pending.push(batchId);
    if (this.bytes >= this.maxBytes || this.pending.length >= this.maxBatches) void this.flush().catch(() => undefined);
    else this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.maxDelayMs);
  }

  /**
   * Sends what is held (after any flush already on its way); resolves once it is handed to the sink.
   * Rejects when this or an earlier group's send failed: those batches were never ended, so the
   * query must fail on this node (the SCC then gives them to another replica).
   */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length > 0) {
      const ids = this.pending;
      const carrier = this.carrier;
      const records = this.held.length === 0 ? undefined : this.held.length === 1 ? this.held[0] : Buffer.concat(this.held);
      this.pending = [];
      this.held = [];
      this.bytes = 0;
      this.carrier = undefined;
      const rows = records === undefined ? 0 : records.length / this.opts.recordSize;
      const completes = ids.map((batchId) => ({ batchId, recordCount: carrier !== undefined && batchId.equals(carrier) ? rows : 0 }));
      this.sending = this.sending
        .then(() => this.send(carrier, records, completes))
        .catch((err: unknown) => {
          this.failure ??= err instanceof Error ? err : new Error(String(err));
        });
    }
    return this.sending.then(() => {
      if (this.failure) throw this.failure;
    });
  }

  /** Drops what is held (the query was stopped: those batches stay unanswered). */
  discard(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = [];
    this.held = [];
    this.bytes = 0;
    this.carrier = undefined;
  }
}
