/**
 * A query's `sub_queries` compiled against a dataset schema (docs/query.md, "engine-rs scan API"):
 * the native filter program segment scans run, and the kernel over records in memory.
 */
import { native, type ScanFilterHandle } from './native';
import type { Schema } from './schema';
import { toScanError } from './scanError';

/**
 * A query's filters compiled against a dataset schema: records match when any sub-query
 * matches, a sub-query when all its filters do; no sub-queries match every record.
 *
 * @example
 * const filter = ScanFilter.compile(schema, JSON.stringify(query.sub_queries));
 * const hits = evaluateFilter(filter, records);
 */
export class ScanFilter {
  /** Bytes per record of the dataset. */
  readonly recordSize: number;
  /** Sub-queries as written. */
  readonly subQueries: number;
  /** Every record matches (no sub-queries, or one whose filters always hold). */
  readonly matchesAll: boolean;
  /** No record can match (every sub-query has a filter that never holds). */
  readonly matchesNone: boolean;

  private constructor(
    /** The native program. Not public API. */
    readonly handle: ScanFilterHandle,
  ) {
    const info = native.scanFilterInfo(handle);
    this.recordSize = info.recordSize;
    this.subQueries = info.subQueries;
    this.matchesAll = info.matchesAll;
    this.matchesNone = info.matchesNone;
  }

  /**
   * Compiles `sub_queries` JSON (an array of `{ "filters": [...] }`) against `schema`.
   * @throws QueryError naming the JSON path of the first problem (also for 17+ sub-queries,
   *   an empty sub-query, 65+ filters, a value that does not fit its field).
   */
  static compile(schema: Schema, subQueriesJson: string): ScanFilter {
    try {
      return new ScanFilter(native.scanFilterCompile(schema.handle, subQueriesJson));
    } catch (err) {
      throw toScanError(err);
    }
  }
}

/**
 * The kernel over records in memory, on the calling thread: the records of `records` (whole
 * records of the filter's size) that match, back to back, in their order.
 * @throws ScanError `ERR_SCAN_LENGTH` when `records` is not a whole number of records.
 */
export function evaluateFilter(filter: ScanFilter, records: Uint8Array): Buffer {
  try {
    return native.scanEvaluate(filter.handle, records);
  } catch (err) {
    throw toScanError(err);
  }
}
