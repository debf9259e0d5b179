/** Codes of segment store failures, as the Rust core names them. */
export const SEGMENT_ERROR_CODES = [
  'ERR_SEGMENT_IO',
  'ERR_SEGMENT_CONFIG',
  'ERR_SEGMENT_EXISTS',
  'ERR_SEGMENT_TRUNCATED',
  'ERR_SEGMENT_MAGIC',
  'ERR_SEGMENT_VERSION',
  'ERR_SEGMENT_HEADER_CHECKSUM',
  'ERR_SEGMENT_FOOTER_CHECKSUM',
  'ERR_SEGMENT_CORRUPT',
  'ERR_SEGMENT_BLOCK_CHECKSUM',
  'ERR_SEGMENT_CHAIN',
  'ERR_SEGMENT_CLOSING_HASH',
  'ERR_SEGMENT_PARTIAL_RECORD',
  'ERR_SEGMENT_RANGE',
  'ERR_SEGMENT_CLOSED',
  'ERR_SEGMENT_HANDLE',
] as const;

/** One segment error code. */
export type SegmentErrorCode = (typeof SEGMENT_ERROR_CODES)[number];

/** A segment could not be written, read or verified; `code` says why. */
export class SegmentError extends Error {
  /** What went wrong, e.g. `ERR_SEGMENT_CLOSING_HASH`. */
  readonly code: SegmentErrorCode;

  /** Wraps a message and code. */
  constructor(code: SegmentErrorCode, message: string) {
    super(message);
    this.name = 'SegmentError';
    this.code = code;
  }
}

function isCode(c: unknown): c is SegmentErrorCode {
  return typeof c === 'string' && (SEGMENT_ERROR_CODES as readonly string[]).includes(c);
}

/** Runs native segment work, turning its coded errors into `SegmentError`s (others pass through). */
export async function segmentCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toSegmentError(err);
  }
}

/** The `SegmentError` for a coded native error; anything else unchanged. */
export function toSegmentError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && isCode(code) ? new SegmentError(code, err.message) : err;
}
