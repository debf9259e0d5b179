import { toSegmentError } from './segmentError';

/**
 * A filter of a query that the dataset schema cannot take, or malformed `sub_queries` JSON.
 * `path` names the JSON value at fault (`sub_queries[1].filters[0].value`), `reason` what is
 * wrong with it, and `message` is both (`sub_queries[1].filters[0].value: 300 does not fit
 * uint8`): the text a Storage Node sends with error code 11 (`bad query`).
 */
export class QueryError extends Error {
  /** Stable error code. */
  readonly code = 'ERR_QUERY';
  /** JSON path of the offending value. */
  readonly path: string;
  /** What is wrong with it. */
  readonly reason: string;

  /** An error at `path`. */
  constructor(path: string, reason: string) {
    super(`${path}: ${reason}`);
    this.name = 'QueryError';
    this.path = path;
    this.reason = reason;
  }
}

/** Codes of scan failures that are not segment damage (those are `SegmentError`s). */
export const SCAN_ERROR_CODES = [
  'ERR_SCAN_RECORD_SIZE',
  'ERR_SCAN_LENGTH',
  'ERR_SCAN_CLOSED',
  'ERR_SCAN_BUSY',
  'ERR_SCAN_HANDLE',
  'ERR_SCAN_TOO_MANY_GROUPS',
  // SegmentScanner.foldInto: the batch is not finished (or the scan does not fold), it was folded
  // already, the accumulator belongs to another aggregate plan.
  'ERR_SCAN_NOT_DONE',
  'ERR_SCAN_FOLDED',
  'ERR_SCAN_PLAN',
] as const;

/** One scan error code. */
export type ScanErrorCode = (typeof SCAN_ERROR_CODES)[number];

/** A scan could not start or go on for a reason other than the segment's bytes. */
export class ScanError extends Error {
  /** Why, e.g. `ERR_SCAN_RECORD_SIZE` (segment and filter disagree on the record size). */
  readonly code: ScanErrorCode;

  /** Wraps a message and code. */
  constructor(code: ScanErrorCode, message: string) {
    super(message);
    this.name = 'ScanError';
    this.code = code;
  }
}

function isScanCode(c: unknown): c is ScanErrorCode {
  return typeof c === 'string' && (SCAN_ERROR_CODES as readonly string[]).includes(c);
}

/** The typed error of a coded native scan error: QueryError, ScanError or SegmentError; anything else unchanged. */
export function toScanError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as Error & { code?: unknown; path?: unknown; reason?: unknown };
  if (e.code === 'ERR_QUERY' && typeof e.path === 'string' && typeof e.reason === 'string') return new QueryError(e.path, e.reason);
  if (isScanCode(e.code)) return new ScanError(e.code, e.message);
  return toSegmentError(err);
}
