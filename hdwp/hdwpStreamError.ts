/**
 * Errors of HDWP streams over TCP (docs/ingest-protocol.md): what closes a connection or refuses a
 * batch, with the error frame code that goes (or came) over the wire. Shared by the server side
 * (`HdwpServer`) and the client side (`HdwpClient`).
 */
import { BatchID } from '../engine-rs/batchId';
import { clipUtf8, HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';
import type { ErrorFrame } from '../engine-rs/hdwpFrame';

/**
 * Error frame codes used on ingest streams: the assigned codes of docs/hdwp.md (`shuttingDown`, 9,
 * goes to every connection when a server stops; `batchRefused`, 10, refuses one batch).
 */
export const STREAM_ERROR_CODES = HDWP_ERROR_FRAME_CODES;

/** What went wrong with a stream, as a stable code. */
export type HdwpStreamErrorCode =
  /** The peer sent an error frame (`frameCode` holds its code). */
  | 'ERR_HDWP_PEER_ERROR'
  /** We refused the peer's bytes or frames and sent it an error frame (`frameCode`). */
  | 'ERR_HDWP_REFUSED'
  /** The connection could not be opened, or dropped. */
  | 'ERR_HDWP_DISCONNECTED'
  /** A connect, handshake or idle timeout expired. */
  | 'ERR_HDWP_TIMEOUT'
  /** This side closed the stream while the operation was pending. */
  | 'ERR_HDWP_CLOSED';

/** Why a stream closed or a batch was refused. */
export class HdwpStreamError extends Error {
  /** Stable code. */
  readonly code: HdwpStreamErrorCode;
  /** Error frame code sent or received (see {@link STREAM_ERROR_CODES}); absent when no error frame was involved. */
  readonly frameCode?: number;
  /** The batch an error frame named, for the refusal of one batch. */
  readonly batchId?: BatchID;

  /** Builds an error; `frameCode` and `batchId` describe the error frame, when there is one. */
  constructor(code: HdwpStreamErrorCode, message: string, opts: { frameCode?: number; batchId?: BatchID; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'HdwpStreamError';
    this.code = code;
    if (opts.frameCode !== undefined) this.frameCode = opts.frameCode;
    if (opts.batchId !== undefined) this.batchId = opts.batchId;
  }
}

const BATCH_PREFIX = /^batch ([0-9a-f]{128}): /;

/**
 * The error frame that refuses one batch while the stream stays open. Its message opens with
 * `batch <128 hex digits>: ` so the sender can tell which pending end-of-batch it answers.
 */
export function batchErrorFrame(batchId: BatchID, code: number, message: string): ErrorFrame {
  return { kind: 'error', code, message: clipUtf8(`batch ${batchId.toHex()}: ${message}`) };
}

/** The batch an error frame refuses (see {@link batchErrorFrame}), or undefined for a stream error. */
export function batchOfError(frame: ErrorFrame): BatchID | undefined {
  const m = BATCH_PREFIX.exec(frame.message);
  return m ? BatchID.fromHex(m[1]) : undefined;
}

/** An error frame for a stream-level failure (the message clipped to what a frame holds). */
export function streamErrorFrame(code: number, message: string): ErrorFrame {
  return { kind: 'error', code, message: clipUtf8(message) };
}
