/**
 * The contracts of the `scan` operator (operators/scan.ts): what a scan source compiles for a query
 * and how one batch is read, the counters it reports to, and the operator's options.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { StageCounters } from '../stream/stageCounters';
import type { QuerySpec } from '../stream/queryElement';
import type { ReadScheduler } from './readScheduler';
import type { FoldableBatch, PartialAccumulator } from './mergedPartials';

/** What one read step of a batch produced. */
export interface BatchScanStep {
  /** The matching records, back to back. */
  readonly records: Buffer;
  readonly matched: number;
  /** Records the kernel evaluated. */
  readonly scanned: number;
  /** Blocks the kernel read and evaluated in this step. */
  readonly blocksRead: number;
  /** Blocks the zone maps ruled out in this step. */
  readonly blocksSkipped: number;
  /** No blocks are left. */
  readonly done: boolean;
  /** With verify_hash, on the last step: whether the recomputed chain matched the stored closing hash. */
  readonly hashOk?: boolean;
  /** For an aggregate query, on the last step: the batch's partial (aggregate frame JSON); `records` is then empty. */
  readonly partial?: string;
}

/** One batch being read with a query's filter. */
export interface BatchScan {
  /** Reads the next block step (about `stepBytes` of records, at least one block). */
  next(): Promise<BatchScanStep>;
  /** With merged partials (`CompiledQuery.newAccumulator`), after the last step: folds the batch's partial in. */
  readonly foldInto?: FoldableBatch['foldInto'];
  close(): void;
}

/** A batch that cannot be read here: `code` 13 (missing, not held, damaged). */
export interface BatchUnreadable {
  readonly code: number;
  readonly message: string;
}

/** Rows of a step as one columnar body (engine-rs/columnar.ts), for one columns frame. */
export interface ColumnarPiece {
  readonly rows: number;
  readonly body: Buffer;
}

/** A query's filters compiled for its dataset. */
export interface CompiledQuery {
  /** Record size of the results (the dataset's). */
  readonly recordSize: number;
  /**
   * Present when the query asked for columnar results (`result_format: "columns"`): a step's
   * matching records, already masked, as columnar bodies (in record order), sent instead of records.
   */
  readonly encodeColumns?: (records: Buffer) => Promise<ColumnarPiece[]>;
  /**
   * The query carries an `aggregate`: steps fold their matches natively and the last one carries the
   * batch's partial, sent as one aggregate frame right before the batch's eob (none on a bbn).
   */
  readonly aggregate?: boolean;
  /**
   * The query's aggregate with merged partials (HDQuery `merge_batches`): a fresh accumulator the
   * query's batches fold into (their steps then carry no `partial`; each BatchScan has `foldInto`).
   */
  readonly newAccumulator?: () => PartialAccumulator;
  /**
   * HDQuery `top`: the best records of a set of matching records (ties with the k-th kept, original
   * order). A batch's steps feed it and only its result is sent, at the batch's end.
   */
  readonly selectTop?: (records: Buffer) => Buffer;
  /**
   * With merged partials over a filter: answers, in one call for the group (no open, step and
   * close per batch), those of `batchIds` that their segment summaries answer and the small ones
   * it scans whole with the query's filter and aggregate (exactly as their own reads would). The
   * others are read as usual with {@link CompiledQuery.open}, which says why one cannot be read.
   * Never with verify_hash or `limit` (every block is then read, or a batch at a time).
   */
  readonly fromSummaries?: (batchIds: readonly BatchID[]) => Promise<SummaryAnswers>;
  /**
   * With merged rows over a filter: scans, in one call for the group, those of `batchIds` small
   * enough (exactly as their own reads would), and returns their matches. The others are read as
   * usual with {@link CompiledQuery.open}. Never with verify_hash or `limit`.
   */
  readonly fromRows?: (batchIds: readonly BatchID[]) => Promise<RowsAnswers>;
  /** Opens one batch for reading, or says why it cannot be read. */
  open(batchId: BatchID, verifyHash: boolean): Promise<BatchScan | BatchUnreadable>;
}

/** What {@link CompiledQuery.fromRows} answered: the numbers of {@link SummaryAnswers} per batch, and the rows. */
export interface RowsAnswers extends Omit<SummaryAnswers, 'partial'> {
  /** Per batch: the records it put in `rows` when scanned (its matches; with a top, its best), else -1. */
  readonly kept: Float64Array;
  /** The scanned batches' kept records, back to back in group order. */
  readonly rows: Buffer;
}

/** What {@link CompiledQuery.fromSummaries} answered for a group of batches. */
export interface SummaryAnswers {
  /**
   * Per batch of the group: its records when folded; -1 for one to read as usual, -2 for one the
   * call did not try (its scan budget was spent: the batch may join another group).
   */
  readonly records: Float64Array;
  /** Per batch of the group: its blocks when folded, else -1. */
  readonly blocks: Float64Array;
  /** Per batch: its matching records when folded (all of them when its summary answered), else -1. */
  readonly matched: Float64Array;
  /** Per batch: records the kernel evaluated when folded (none when its summary answered), else -1. */
  readonly scanned: Float64Array;
  /** Per batch: blocks not read when folded (ruled out by zone maps; all when its summary answered), else -1. */
  readonly skipped: Float64Array;
  /** The folded batches' merged partial, folded into the query's accumulator at once. */
  readonly partial: FoldableBatch;
}

/** Where a scan finds filters and segments: the node's schemas and batch index, and the engine-rs kernel. */
export interface ScanSource {
  /** Compiles a query for its dataset; throws {@link QueryError} naming the key for a filter the schema refuses. */
  compile(spec: QuerySpec, helloRecordSize: number): Promise<CompiledQuery>;
}

/** Counters a scan reports as it reads (the node's /metrics). */
export interface ScanMeter {
  step(s: BatchScanStep): void;
  /** A batch ended: `eob`, or the bbn code. */
  batch(outcome: 'eob' | number): void;
  /** Queries scanning now changed by `delta`. */
  active(delta: number): void;
}

/** Options of {@link scan}. */
export interface ScanOptions {
  readonly source: ScanSource;
  readonly scheduler: ReadScheduler;
  /**
   * Batches of one query read at once (default 1): each batch's read steps are native tasks on
   * libuv's pool, so several batches scan on several cores. The Storage Node's `query_threads`.
   */
  readonly queryThreads?: number;
  /** Result chunks of one query waiting at the sink before that query's scan pauses (default 4). */
  readonly maxPendingChunks?: number;
  /** `received`: records scanned; `sent`: records matched and emitted; `dropped`: records the filters left out; `controls`: eob + bbn; `errors`: bbn. */
  readonly counters?: StageCounters;
  readonly meter?: ScanMeter;
  /** Batches that failed and queries refused (the pipeline prints a bounded number). */
  readonly report?: (message: string) => void;
}
