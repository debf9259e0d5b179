/**
 * Codes on query result streams (docs/query.md, "Error / bbn codes"). A bbn frame has no code field,
 * only a reason, so on result streams and on the node → SCC progress stream the reason opens with
 * the code: `13 batch unreadable: segment flows/…/0007.seg is missing`. {@link bbnReason} writes it
 * and {@link parseBbnReason} reads it back; a reason without a leading code reads as code 0.
 */
import { clipUtf8, HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';

/** The codes a batch of a query can fail with, and their names. */
export const BATCH_ERROR_NAMES: Readonly<Record<number, string>> = {
  [HDWP_ERROR_FRAME_CODES.unknownQuery]: 'unknown query',
  [HDWP_ERROR_FRAME_CODES.cancelled]: 'cancelled',
  [HDWP_ERROR_FRAME_CODES.timeout]: 'timeout',
  [HDWP_ERROR_FRAME_CODES.overloaded]: 'overloaded',
  [HDWP_ERROR_FRAME_CODES.internal]: 'internal',
  [HDWP_ERROR_FRAME_CODES.badQuery]: 'bad query',
  [HDWP_ERROR_FRAME_CODES.hashMismatch]: 'hash mismatch',
  [HDWP_ERROR_FRAME_CODES.batchUnreadable]: 'batch unreadable',
};

/** The reason text of a bbn that fails a batch with `code`: `<code> <name>: <detail>` (clipped to 4096 bytes). */
export function bbnReason(code: number, detail: string): string {
  const name = BATCH_ERROR_NAMES[code] ?? 'error';
  return clipUtf8(`${code} ${name}: ${detail}`);
}

/** The code and text of a bbn reason written by {@link bbnReason}; code 0 when it opens with none. */
export function parseBbnReason(reason: string): { code: number; message: string } {
  const m = /^(\d{1,5})(?=[ :])/.exec(reason);
  const code = m ? Number(m[1]) : 0;
  return { code: code <= 0xffff ? code : 0, message: reason };
}

/** What a node's bbn 13 says when it simply does not store the batch (docs/query.md). */
export const NOT_HELD = 'is not held by node';

/**
 * Whether a batch error only says the batch is not stored anywhere it was asked for: a time window
 * names every interval, and an interval nobody ingested has no batch. Such a batch is absent from
 * the result (getMissingBatchIds) but is not an error of the query.
 */
export function isNotHeld(e: { readonly code: number; readonly message: string }): boolean {
  return e.code === HDWP_ERROR_FRAME_CODES.batchUnreadable && e.message.includes(NOT_HELD);
}
