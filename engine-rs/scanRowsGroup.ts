/**
 * A group of small batches' rows in one native call (engine-rs `SegmentScanner::rows_group`): the
 * row counterpart of {@link AggregateAccumulator.fromSummaries}. A Storage Node reading a query's
 * batches one by one pays an open, a step and a close each, every one a hand-off to the native
 * pool: for the `hd up` demo's minutes of ~1 400 records far more than their kernel work.
 */
import { native } from './native';
import type { GroupScanBudget } from './scanAggregate';
import type { ScanFilter } from './scanFilter';
import type { TopPlan } from './scan';
import { toScanError } from './scanError';

/** What {@link scanRowsGroup} answered. */
export interface RowsGroup {
  /** Per path: the batch's records when scanned; -1 when left to its own read, -2 when not tried within the budget. */
  readonly records: Float64Array;
  /** Per path: the batch's blocks when scanned, else -1. */
  readonly blocks: Float64Array;
  /** Per path: the batch's matching records when scanned, else -1. */
  readonly matched: Float64Array;
  /** Per path: records the kernel evaluated when scanned, else -1. */
  readonly scanned: Float64Array;
  /** Per path: blocks the zones ruled out when scanned, else -1. */
  readonly skipped: Float64Array;
  /** Per path: the records the batch put in `rows` when scanned (its matches, or with a top its best), else -1. */
  readonly kept: Float64Array;
  /** The scanned batches' kept records, back to back in path order. */
  readonly rows: Buffer;
}

/**
 * Scans the batches of `paths` that one call can, off the event loop: each segment is opened
 * through the footer cache, and a batch of at most `budget.batchBytes` record bytes is scanned to
 * its end with `filter` (zone maps, the kernel: exactly as its own scan) while the group's scanned
 * bytes stay within `budget.groupBytes` (the first batch scanned always fits). With `top`, each
 * batch keeps only its best (as {@link TopPlan.select} over its matches), so many matches come
 * back as a few. No hash is verified (a query with verify_hash reads its batches). A batch too
 * large, not openable or not read cleanly is -1 (its own read says why); one past the budget -2.
 */
export async function scanRowsGroup(paths: readonly string[], filter: ScanFilter, budget: GroupScanBudget, top?: TopPlan): Promise<RowsGroup> {
  try {
    return await native.scanRowsGroup([...paths], filter.handle, top?.handle ?? null, budget.batchBytes, budget.groupBytes);
  } catch (err) {
    throw toScanError(err);
  }
}
