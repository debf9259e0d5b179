/**
 * Storage Node pushdown scan (docs/query.md, "Storage Node scan" and "engine-rs scan API"): the
 * `sub_queries` of a query compiled once against the dataset schema, then evaluated natively over
 * segment blocks (zone maps skip blocks that cannot match) or over records in memory. No
 * JavaScript runs per record.
 */
import { BatchID } from './batchId';
import { native, type SegmentScannerHandle, type TopPlanHandle } from './native';
import { AggregateAccumulator, AggregatePlan, type GroupScanBudget, type SummaryGroup } from './scanAggregate';
import { evaluateFilter, ScanFilter } from './scanFilter';
import type { Schema } from './schema';
import { ScanError, toScanError } from './scanError';
import { decodeZoneFields, type ZoneField } from './segmentZones';

export { AggregateAccumulator, AggregatePlan, evaluateFilter, ScanFilter, type GroupScanBudget, type SummaryGroup };

/** Blocks a `SegmentScanner.next()` covers by default (64-record blocks of 150 bytes: 2.4 MB). */
export const DEFAULT_SCAN_BLOCKS = 256;

/** An HDQuery `top`: the best `k` records by `field`, largest first when `desc`. */
export interface TopSpec {
  readonly field: string;
  /** 1..1_000_000. */
  readonly k: number;
  readonly desc: boolean;
}

/**
 * The best `k` records of a set by one field's order, ties at the boundary kept (HDQuery `top`):
 * a Storage Node sends only these of each batch for `ORDER BY <field> LIMIT k` (hd_sql orders and
 * limits the union again, so a superset of the batch's true top k is what it needs).
 *
 * The order is that of the field's bytes as the caller reads them (`stored & mask`), as
 * {@link AggregatePlan}'s min / max order them: integers (signed / unsigned, 8..256-bit, both byte
 * orders), numerics (the scaled integer), timestamps, floats and doubles (NaN above every number;
 * -0 ties with 0).
 *
 * @example
 * const top = TopPlan.compile(schema, { field: 'bytes', k: 10, desc: true }, mask);
 * send(top.select(step.records));
 */
export class TopPlan {
  private constructor(
    /** The native plan. Not public API. */
    readonly handle: TopPlanHandle,
  ) {}

  /**
   * Compiles against `schema` and the caller's field mask (one record of bytes, or undefined).
   * @throws QueryError with `path` `top.field` (an unknown field, or one of another type than
   *   those above), `top.k` (not a whole number 1..1_000_000) or `field_mask` (not one record long).
   */
  static compile(schema: Schema, top: TopSpec, fieldMask?: Uint8Array): TopPlan {
    try {
      return new TopPlan(native.scanTopCompile(schema.handle, top.field, top.k, top.desc, fieldMask ?? null));
    } catch (err) {
      throw toScanError(err);
    }
  }

  /**
   * The records of `records` (whole records of the schema's size, back to back) whose key ranks
   * within the best k (largest when `desc`, smallest otherwise), plus every record tied with the
   * k-th best key, in their original order, as a new Buffer; k or fewer records: all of them.
   * Synchronous, on the calling thread (one pass plus a select).
   * @throws RangeError when `records.length` is not a whole number of records.
   */
  select(records: Uint8Array): Buffer {
    return native.scanTopSelect(this.handle, records);
  }
}

/** What one `SegmentScanner.next()` produced. */
export interface ScanStep {
  /** The matching records, back to back, in segment order. */
  readonly records: Buffer;
  readonly matched: number;
  /** Records the kernel evaluated (those of blocks the zone maps did not rule out). */
  readonly scanned: number;
  /** Blocks the zone maps ruled out in this step. */
  readonly blocksSkipped: number;
  /** No blocks are left. */
  readonly done: boolean;
  /** With `verifyHash`, on the last step: whether every block hash and the closing hash matched. */
  readonly hashOk?: boolean;
  /**
   * With `setAggregate`, on the last step: the batch's partial (aggregate frame JSON); `records` stays
   * empty. Never with `setAggregateFold` (the partial stays native for `foldInto`).
   */
  readonly partial?: string;
}

/** Options of `SegmentScanner.open`. */
export interface SegmentScanOptions {
  /** Read and hash every record (skipped blocks too) and report `hashOk` on the last step. */
  readonly verifyHash?: boolean;
}

/**
 * Scans one segment with a compiled filter, a block range per `next()`, each step a Neon task
 * off the event loop. Blocks are read with their CRC checked (a damaged block rejects with
 * `SegmentError` `ERR_SEGMENT_BLOCK_CHECKSUM`, and the scanner is closed).
 *
 * @example
 * const scan = await SegmentScanner.open(path, filter, { verifyHash: true });
 * for (let step = await scan.next(); ; step = await scan.next()) {
 *   send(step.records);
 *   if (step.done) { if (step.hashOk === false) badBatch(); break; }
 * }
 * scan.close();
 */
export class SegmentScanner {
  /** Records in the segment. */
  readonly records: number;
  /** Blocks in the segment. */
  readonly blocks: number;
  readonly batchId: BatchID;
  /** Dataset id written in the segment header. */
  readonly datasetId: string;
  /** Closing hash stored at ingest. */
  readonly closingHash: Buffer;
  private busy = false;
  private closed = false;

  private constructor(
    private readonly handle: SegmentScannerHandle,
    /** The segment file. */
    readonly path: string,
    info: { records: number; blocks: number; batchId: Buffer; datasetId: string; closingHash: Buffer },
  ) {
    this.records = info.records;
    this.blocks = info.blocks;
    this.batchId = new BatchID(info.batchId);
    this.datasetId = info.datasetId;
    this.closingHash = info.closingHash;
  }

  /**
   * Opens and validates `path` (off the event loop) for a scan with `filter`.
   * @throws SegmentError for a missing, foreign or damaged file; ScanError `ERR_SCAN_RECORD_SIZE`
   *   when its records are not the filter's size.
   */
  static async open(path: string, filter: ScanFilter, opts: SegmentScanOptions = {}): Promise<SegmentScanner> {
    try {
      const r = await native.scanOpen(path, filter.handle, opts.verifyHash ?? false);
      return new SegmentScanner(r.handle, path, r);
    } catch (err) {
      throw toScanError(err);
    }
  }

  /**
   * Opens `path` on this thread when the process's footer cache holds its footer (the segment was
   * opened before and the file is unchanged: an open, a stat and a lookup, no footer read, so
   * cheap enough for the event loop); undefined when it does not — then {@link SegmentScanner.open}
   * reads and validates the footer off the event loop. A query over many batches opens each
   * cached one without a thread hand-off.
   * @throws like {@link SegmentScanner.open}
   */
  static openCached(path: string, filter: ScanFilter, opts: SegmentScanOptions = {}): SegmentScanner | undefined {
    try {
      const r = native.scanOpenCachedSync(path, filter.handle, opts.verifyHash ?? false);
      return r ? new SegmentScanner(r.handle, path, r) : undefined;
    } catch (err) {
      throw toScanError(err);
    }
  }

  /** Scans up to `maxBlocks` more blocks (at least one; at most 16 MiB of records per step). */
  async next(maxBlocks: number = DEFAULT_SCAN_BLOCKS): Promise<ScanStep> {
    if (this.closed) throw new ScanError('ERR_SCAN_CLOSED', `the scanner of ${this.path} is closed`);
    if (this.busy) throw new ScanError('ERR_SCAN_BUSY', `a step of the scanner of ${this.path} is still running`);
    if (!Number.isInteger(maxBlocks) || maxBlocks < 1 || maxBlocks > 0xffffffff) {
      throw new RangeError(`maxBlocks must be a whole number 1..2^32-1, got ${maxBlocks}`);
    }
    this.busy = true;
    try {
      return await native.scanNext(this.handle, maxBlocks);
    } catch (err) {
      this.closed = true;
      throw toScanError(err);
    } finally {
      this.busy = false;
    }
  }

  /**
   * Folds the matching records into `plan` instead of returning them; the last step carries the
   * batch's partial. Call before the first `next()`. A batch with more groups than the plan's
   * `max_groups` rejects its last step with ScanError `ERR_SCAN_TOO_MANY_GROUPS`.
   * @returns the batch's partial when the segment's summary answers the aggregate (every record
   *   passes the filter, no hash to verify; docs/segment.md "Batch summary"): no step needs to run,
   *   and the one that would finish the batch carries this same partial. Undefined: scan it.
   */
  setAggregate(plan: AggregatePlan): string | undefined {
    if (this.closed) throw new ScanError('ERR_SCAN_CLOSED', `the scanner of ${this.path} is closed`);
    try {
      return native.scanSetAggregate(this.handle, plan.handle);
    } catch (err) {
      throw toScanError(err);
    }
  }

  /**
   * Like {@link SegmentScanner.setAggregate}, but no per-batch JSON is built (neither from the
   * summary nor at the last step: steps carry no `partial`): the batch's partial stays native until
   * {@link SegmentScanner.foldInto}. Call before the first `next()`. More groups in the batch than
   * the plan's `max_groups` still reject its last step with ScanError `ERR_SCAN_TOO_MANY_GROUPS`.
   * @returns true when the batch's summary answers it (no step needs to run; `foldInto` may be
   *   called at once); false: step until `done`, then fold.
   */
  setAggregateFold(plan: AggregatePlan): boolean {
    if (this.closed) throw new ScanError('ERR_SCAN_CLOSED', `the scanner of ${this.path} is closed`);
    try {
      return native.scanSetAggregateFold(this.handle, plan.handle);
    } catch (err) {
      throw toScanError(err);
    }
  }

  /**
   * Merges this batch's partial (summary-answered, or scanned: after the step with `done`) into
   * `acc`, synchronously on the calling thread. A batch folds at most once.
   * @returns false, leaving `acc` unchanged, when the merge would give `acc` more groups than the
   *   plan's `max_groups` (take `acc`, then fold again into the now empty accumulator).
   * @throws ScanError `ERR_SCAN_CLOSED` when closed, `ERR_SCAN_BUSY` while a step runs,
   *   `ERR_SCAN_NOT_DONE` before the batch is finished or without `setAggregateFold`,
   *   `ERR_SCAN_FOLDED` when folded already, `ERR_SCAN_TOO_MANY_GROUPS` when the batch itself has
   *   more groups than `max_groups`, `ERR_SCAN_PLAN` when `acc` was created for another plan.
   */
  foldInto(acc: AggregateAccumulator): boolean {
    if (this.closed) throw new ScanError('ERR_SCAN_CLOSED', `the scanner of ${this.path} is closed`);
    if (this.busy) throw new ScanError('ERR_SCAN_BUSY', `a step of the scanner of ${this.path} is still running`);
    try {
      return native.scanFoldInto(this.handle, acc.handle);
    } catch (err) {
      throw toScanError(err);
    }
  }

  /** Releases the segment; a step in flight still settles. Later `next()` calls reject. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    native.scanClose(this.handle);
  }
}

/**
 * The zone fields a segment of `schema` should keep so scans can skip blocks: integers and
 * numerics up to 64 bits, timestamps, floats, booleans, and text, bytes and blob fields (arrays,
 * wider integers, addresses and chess values are left out). Pass them to `SegmentWriter.create`.
 */
export function zoneFieldsOf(schema: Schema): ZoneField[] {
  return decodeZoneFields(native.scanZoneFields(schema.handle));
}

/**
 * Reads every byte of `buf` once, natively, on the calling thread: the plain memory read a scan's
 * throughput is measured against in the benchmarks. Returns a fold of the bytes.
 */
export function memoryReadBaseline(buf: Uint8Array): number {
  return native.scanReadBaseline(buf);
}
