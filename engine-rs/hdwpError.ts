/**
 * HdwpError: a malformed HDWP frame, or a frame that cannot be encoded, with a stable code.
 */
import type { Frame } from './hdwpFrame';

/** Every code an HdwpError can carry; the Rust `HdwpError::code()` strings. */
export const HDWP_ERROR_CODES = [
  'ERR_HDWP_BAD_MAGIC',
  'ERR_HDWP_UNSUPPORTED_VERSION',
  'ERR_HDWP_UNKNOWN_KIND',
  'ERR_HDWP_BAD_FLAGS',
  'ERR_HDWP_TOO_LARGE',
  'ERR_HDWP_CHECKSUM_MISMATCH',
  'ERR_HDWP_TRUNCATED_FIELD',
  'ERR_HDWP_INCONSISTENT_LENGTH',
  'ERR_HDWP_INVALID_VALUE',
  'ERR_HDWP_BAD_UTF8',
  'ERR_HDWP_BAD_JSON',
  'ERR_HDWP_TRUNCATED_FRAME',
] as const;

/** A stable HDWP error code. */
export type HdwpErrorCode = (typeof HDWP_ERROR_CODES)[number];

/** True when `c` is one of the HDWP error codes. */
export function isHdwpErrorCode(c: unknown): c is HdwpErrorCode {
  return typeof c === 'string' && (HDWP_ERROR_CODES as readonly string[]).includes(c);
}

/**
 * A malformed frame (decoding) or an unencodable one (encoding). A decoder that throws it is
 * closed: later pushes throw the same code. `frames` holds the good frames decoded in the same
 * `push` before the bad one, so nothing already received is lost.
 */
export class HdwpError extends Error {
  /** Stable code, e.g. `ERR_HDWP_CHECKSUM_MISMATCH`. */
  readonly code: HdwpErrorCode;
  /** Stream offset of the bad frame (-1 for encoding errors). */
  readonly offset: number;
  /** Good frames decoded by the failing call before the bad frame. */
  readonly frames: Frame[];

  /** Builds an error; `offset` and `frames` apply to decoding. */
  constructor(code: HdwpErrorCode, message: string, offset = -1, frames: Frame[] = []) {
    super(message);
    this.name = 'HdwpError';
    this.code = code;
    this.offset = offset;
    this.frames = frames;
  }
}

/** Runs a native call, turning its coded HDWP errors into HdwpError; other errors pass through. */
export function hdwpCall<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (err instanceof Error && isHdwpErrorCode(code)) throw new HdwpError(code, err.message);
    throw err;
  }
}
