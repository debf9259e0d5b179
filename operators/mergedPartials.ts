/**
 * Merged partials (HDQuery `merge_batches`, docs/query.md "Merged results"): the batches
 * of one aggregate query fold their partials into one native accumulator as they finish, and one
 * aggregate frame of partial version 2 then completes all of them at once. With many small batches
 * this replaces a frame and an eob per batch (and the client's parse and merge of each) by one frame.
 *
 * A batch is folded and listed in the same synchronous step, so a frame's groups cover exactly the
 * batches it lists: a node that dies before sending it leaves all of them unanswered (re-routed by
 * the SCC), never some counted without their share.
 */
import type { BatchID } from '../engine-rs/batchId';
import { MAX_MERGED_BATCHES, MERGED_PARTIAL_VERSION } from '../query/aggregate';

/** Partials of several batches of one query, merged natively (engine-rs `AggregateAccumulator`). */
export interface PartialAccumulator {
  /** The merged groups as an aggregate frame's `groups` JSON array; resets to empty. */
  take(): string;
}

/** A finished batch that can fold its partial into an accumulator. */
export interface FoldableBatch {
  /** Merges the batch's partial; false (nothing changed) when the accumulator would pass max_groups. */
  foldInto(acc: PartialAccumulator): boolean;
}

/** One batch a merged frame completes. */
export interface CompletedBatch {
  readonly batchId: BatchID;
  /** Records of the batch that matched. */
  readonly recordCount: number;
}

/** Options of {@link MergedPartials}. */
export interface MergedPartialsOptions {
  /** Batches one frame completes at most (default and ceiling {@link MAX_MERGED_BATCHES}). */
  readonly maxBatches?: number;
  /** Longest a folded batch waits for its frame (default 20 ms): results keep flowing on long queries. */
  readonly maxDelayMs?: number;
}

/** A query's merged partials: folds finished batches and emits a frame per group of them. */
export class MergedPartials {
  private pending: CompletedBatch[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly maxBatches: number;
  private readonly maxDelayMs: number;

  /**
   * @param acc the query's accumulator
   * @param emit called with each frame's JSON (`{"v":2,"batches":[...],"groups":[...]}`) and the batches it completes, in fold order
   */
  constructor(
    private readonly acc: PartialAccumulator,
    private readonly emit: (json: string, completes: readonly CompletedBatch[]) => void,
    opts: MergedPartialsOptions = {},
  ) {
    this.maxBatches = Math.max(1, Math.min(opts.maxBatches ?? MAX_MERGED_BATCHES, MAX_MERGED_BATCHES));
    this.maxDelayMs = opts.maxDelayMs ?? 20;
  }

  /**
   * Folds a finished batch in and lists it. When the accumulator is full (max_groups), the batches
   * so far go out first and the batch starts the next frame. Throws what the fold throws.
   */
  add(batch: FoldableBatch, completed: CompletedBatch): void {
    this.addAll(batch, [completed]);
  }

  /**
   * Like {@link add} for a partial that already merges several batches (a group its summaries
   * answered, `completed` in order): folded and listed at once, in one frame. When they would
   * not fit the frame being filled (`maxBatches`), that frame goes out first.
   * @throws RangeError for more batches than one frame completes
   */
  addAll(batch: FoldableBatch, completed: readonly CompletedBatch[]): void {
    if (completed.length === 0) return;
    if (completed.length > this.maxBatches) throw new RangeError(`${completed.length} batches in one partial, a frame completes at most ${this.maxBatches}`);
    if (this.pending.length + completed.length > this.maxBatches) this.flush();
    if (!batch.foldInto(this.acc)) {
      this.flush();
      // Alone in an empty accumulator it fits: the scan already held it to max_groups.
      if (!batch.foldInto(this.acc)) throw new Error(`batch ${(completed[0] as CompletedBatch).batchId.toHex()}: its partial does not fit an empty accumulator`);
    }
    for (const c of completed) this.pending.push(c);
    if (this.pending.length >= this.maxBatches) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.maxDelayMs);
  }

  /** Emits the frame of the batches folded so far (nothing when none). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const completes = this.pending;
    this.pending = [];
    const groups = this.acc.take();
    const batches = completes.map((c) => `["${c.batchId.toHex()}",${c.recordCount}]`).join(',');
    this.emit(`{"v":${MERGED_PARTIAL_VERSION},"batches":[${batches}],"groups":${groups}}`, completes);
  }

  /** Drops what is pending (the query was stopped: those batches stay unanswered). */
  discard(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length > 0) this.acc.take();
    this.pending = [];
  }
}
