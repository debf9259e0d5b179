/**
 * Aggregates on a Storage Node (docs/query.md, "Aggregates" and "Merged results"): an HDQuery
 * `aggregate` compiled against a dataset schema, and the native accumulator the partials of many
 * batches of one query merge into, filled batch by batch or, for batches their summaries answer, a
 * group at a time.
 */
import { native, type AggregateAccumulatorHandle, type AggregatePlanHandle } from './native';
import type { Schema } from './schema';
import type { ScanFilter } from './scanFilter';
import { toScanError } from './scanError';

/**
 * An HDQuery `aggregate` compiled against a dataset schema and the caller's field mask (hidden bits
 * read as zeros): a `SegmentScanner` given it with `setAggregate` folds its matches into one
 * partial per batch instead of returning records (docs/query.md, "Aggregates").
 */
export class AggregatePlan {
  private constructor(
    /** The native plan. Not public API. */
    readonly handle: AggregatePlanHandle,
  ) {}

  /**
   * Compiles `aggregate` JSON against `schema`; `fieldMask` is one record long when given.
   * @throws QueryError naming the JSON path (`aggregate.measures[1].field: ...`).
   */
  static compile(schema: Schema, aggregateJson: string, fieldMask?: Uint8Array): AggregatePlan {
    try {
      return new AggregatePlan(native.scanAggregateCompile(schema.handle, aggregateJson, fieldMask ?? null));
    } catch (err) {
      throw toScanError(err);
    }
  }
}

/**
 * Merged partial aggregates of many batches of one query (one {@link AggregatePlan}), kept natively:
 * a Storage Node folds each finished batch in ({@link SegmentScanner.foldInto}) and sends one
 * aggregate frame for many batches instead of one per batch. Counts and sums add exactly, min / max
 * compare as the field orders; the result is exactly the partial of one scan over all the records.
 *
 * @example
 * const acc = AggregateAccumulator.create(plan);
 * if (!scanner.setAggregateFold(plan)) for (let s = await scanner.next(); !s.done; s = await scanner.next());
 * if (!scanner.foldInto(acc)) { send(acc.take()); scanner.foldInto(acc); }
 * scanner.close();
 * // later: if (!acc.empty) send(`{"v":1,"groups":${acc.take()}}`)
 */
export class AggregateAccumulator {
  private constructor(
    /** The native accumulator. Not public API. */
    readonly handle: AggregateAccumulatorHandle,
  ) {}

  /** An empty accumulator for `plan`. */
  static create(plan: AggregatePlan): AggregateAccumulator {
    try {
      return new AggregateAccumulator(native.scanAccumulatorCreate(plan.handle));
    } catch (err) {
      throw toScanError(err);
    }
  }

  /** Groups held now. */
  get groups(): number {
    return native.scanAccumulatorGroups(this.handle);
  }

  /**
   * Whether nothing has been folded in since creation or the last `take()` (a folded batch with no
   * matching record counts: the accumulator is then not empty, yet holds no group).
   */
  get empty(): boolean {
    return native.scanAccumulatorEmpty(this.handle);
  }

  /**
   * The merged groups as the JSON array an aggregate frame's `groups` holds: exactly the text
   * `{"v":1,"groups":<this>}` would have for the same groups (keys and measures as decimal strings,
   * groups in key order; `"[]"` when empty). Resets the accumulator to empty.
   */
  take(): string {
    return native.scanAccumulatorTake(this.handle);
  }

  /**
   * Moves everything `other` (an accumulator of the same plan) holds into this one, synchronously:
   * its groups and its folded batches; `other` is left empty.
   * @returns false, both unchanged, when this accumulator would then hold more groups than the
   *   plan's `max_groups` (take this one, then absorb again).
   * @throws ScanError `ERR_SCAN_PLAN` when `other` was created for another plan, `ERR_SCAN_HANDLE`
   *   for `other === this`.
   */
  absorb(other: AggregateAccumulator): boolean {
    try {
      return native.scanAccumulatorAbsorb(this.handle, other.handle);
    } catch (err) {
      throw toScanError(err);
    }
  }

  /**
   * Answers the batches of `paths` that one native call can answer, off the event loop (instead of
   * an open, a step and a close per batch): each segment is opened through the footer cache (a
   * footer not cached is read and validated); a batch whose filter the batch's zones prove for
   * every record and whose summary answers `plan` is folded into a fresh accumulator without
   * reading a record, and with `scan`, a batch of at most `scan.batchBytes` record bytes is scanned
   * to its end with `filter` and `plan` (zone maps, the kernel, the field mask compiled into
   * `plan`: exactly as its own scan) and folded, while the group's scanned bytes stay within
   * `scan.groupBytes` (the first batch scanned always fits). No hash is verified (a query with
   * verify_hash reads its batches).
   * @returns per path, the batch's counts when folded; records -1 for a batch the caller reads as
   *   usual (not answered, too large, not openable or not read cleanly — its own read says why —,
   *   or past `max_groups`), -2 for one not tried within `scan.groupBytes`; and the accumulator of
   *   the folded batches (for {@link AggregateAccumulator.absorb}).
   */
  static async fromSummaries(paths: readonly string[], filter: ScanFilter, plan: AggregatePlan, scan?: GroupScanBudget): Promise<SummaryGroup> {
    try {
      const r = await native.scanSummaryGroup([...paths], filter.handle, plan.handle, scan?.batchBytes ?? 0, scan?.groupBytes ?? 0);
      return { records: r.records, blocks: r.blocks, matched: r.matched, scanned: r.scanned, skipped: r.skipped, acc: new AggregateAccumulator(r.acc) };
    } catch (err) {
      throw toScanError(err);
    }
  }
}

/** How much of a group {@link AggregateAccumulator.fromSummaries} scans. */
export interface GroupScanBudget {
  /** Record bytes of one batch scanned at most (a larger batch is left to its own read). */
  readonly batchBytes: number;
  /** Record bytes scanned for the whole group at most (batches past it are not tried). */
  readonly groupBytes: number;
}

/** What {@link AggregateAccumulator.fromSummaries} answered. */
export interface SummaryGroup {
  /** Per path: the batch's records when folded; -1 when left to its own read, -2 when not tried within the budget. */
  readonly records: Float64Array;
  /** Per path: the batch's blocks when folded, else -1. */
  readonly blocks: Float64Array;
  /** Per path: the batch's matching records when folded (all of them when its summary answered), else -1. */
  readonly matched: Float64Array;
  /** Per path: records the kernel evaluated when folded (none when its summary answered), else -1. */
  readonly scanned: Float64Array;
  /** Per path: blocks not read when folded (ruled out by zones; all when its summary answered), else -1. */
  readonly skipped: Float64Array;
  /** The folded batches' merged partial. */
  readonly acc: AggregateAccumulator;
}
