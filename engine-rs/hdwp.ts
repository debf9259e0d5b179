/**
 * HDWP v1 encoding: one frame, a chunk of records as stream frames, or a chunk of records as
 * datagrams that fit an MTU. Encoding (layout, checksums, bounds) happens in Rust; the byte
 * layout is in docs/hdwp.md. Decoding lives in hdwpDecoder.ts, the types in hdwpFrame.ts.
 */
import { BATCH_ID_LEN } from './batchId';
import type { BatchID } from './batchId';
import { HdwpError, hdwpCall } from './hdwpError';
import { HDWP_DEFAULT_MAX_PAYLOAD, HDWP_HEADER_LEN, HDWP_ROLES } from './hdwpFrame';
import type { BatchEnd, Frame, QueryAuth } from './hdwpFrame';
import { native } from './native';

export * from './hdwpFrame';
export { HdwpError, HDWP_ERROR_CODES } from './hdwpError';
export type { HdwpErrorCode } from './hdwpError';
export { FrameDecoder, decodeDatagram } from './hdwpDecoder';
export type { FrameDecoderOptions } from './hdwpDecoder';

/** Largest frame (header included) the stream encoder writes by default: header + 16 MiB payload. */
export const HDWP_DEFAULT_MAX_FRAME = HDWP_HEADER_LEN + HDWP_DEFAULT_MAX_PAYLOAD;

const EMPTY = new Uint8Array(0);

/** Native arguments for an optional query block: a null token means none. */
function authArgs(auth: QueryAuth | undefined): [number, Uint8Array | null] {
  return auth ? [auth.queryId, auth.token] : [0, null];
}

/** Native arguments of an eobs frame: the batch ids back to back, and the record counts. */
function eobsArgs(batches: readonly BatchEnd[]): [Buffer, Float64Array] {
  const ids = Buffer.allocUnsafe(batches.length * BATCH_ID_LEN);
  const counts = new Float64Array(batches.length);
  for (let i = 0; i < batches.length; i++) {
    const id = batches[i].batchId.bytes;
    // A wrong-sized id would shift every entry after it: refuse it here, by name.
    if (id.length !== BATCH_ID_LEN) throw new HdwpError('ERR_HDWP_INVALID_VALUE', `invalid batch id: entry ${i} is ${id.length} bytes, not ${BATCH_ID_LEN}`);
    ids.set(id, i * BATCH_ID_LEN);
    counts[i] = batches[i].recordCount;
  }
  return [ids, counts];
}

/**
 * Encodes one frame. Throws HdwpError (ERR_HDWP_INVALID_VALUE, ERR_HDWP_TOO_LARGE,
 * ERR_HDWP_INCONSISTENT_LENGTH, ERR_HDWP_BAD_JSON, ...) for anything a decoder would reject.
 */
export function encodeFrame(frame: Frame): Buffer {
  return hdwpCall(() => {
    switch (frame.kind) {
      case 'hello': {
        const role = HDWP_ROLES.indexOf(frame.role) + 1;
        if (role === 0) throw new HdwpError('ERR_HDWP_INVALID_VALUE', `invalid role: ${String(frame.role)}`);
        return native.hdwpEncodeHello(frame.version, role, frame.recordSize, frame.datasetId, ...authArgs(frame.auth));
      }
      case 'records':
        return native.hdwpEncodeRecordsFrame(frame.batchId.bytes, frame.recordSize, frame.count, frame.payload, ...authArgs(frame.auth));
      case 'eob':
        return native.hdwpEncodeEob(frame.batchId.bytes, frame.recordCount, frame.closingHash, frame.digest ?? EMPTY, ...authArgs(frame.auth));
      case 'bbn':
        return native.hdwpEncodeBbn(frame.batchId.bytes, frame.reason, ...authArgs(frame.auth));
      case 'query':
        return native.hdwpEncodeQuery(frame.queryId, frame.token, frame.json);
      case 'cancel':
        return native.hdwpEncodeCancel(frame.queryId, frame.token);
      case 'error':
        return native.hdwpEncodeError(frame.code, frame.message, ...authArgs(frame.auth));
      case 'credit':
        return native.hdwpEncodeCredit(frame.bytes, ...authArgs(frame.auth));
      case 'aggregate':
        return native.hdwpEncodeAggregate(frame.batchId.bytes, frame.json, ...authArgs(frame.auth));
      case 'columns':
        return native.hdwpEncodeColumns(frame.batchId.bytes, frame.rows, frame.body, ...authArgs(frame.auth));
      case 'eobs':
        return native.hdwpEncodeEobs(...eobsArgs(frame.batches), ...authArgs(frame.auth));
      case 'traceContext':
        return native.hdwpEncodeTraceContext(frame.json, ...authArgs(frame.auth));
      default: {
        const unknown: never = frame;
        throw new HdwpError('ERR_HDWP_UNKNOWN_KIND', `unknown frame kind ${String((unknown as { kind?: unknown }).kind)}`);
      }
    }
  });
}

/** Options of encodeRecords. */
export interface EncodeRecordsOptions {
  /** Query block for result streams. */
  auth?: QueryAuth;
  /** Largest frame written, header included; default HDWP_DEFAULT_MAX_FRAME (header + 16 MiB). */
  maxFrameBytes?: number;
}

/**
 * Encodes a chunk of whole records of one batch as records frames, each at most
 * `maxFrameBytes` long, packed with as many whole records as fit, concatenated into one Buffer
 * ready for a stream socket. One native call for the whole chunk; no records means an empty Buffer.
 */
export function encodeRecords(batchId: BatchID, recordSize: number, records: Uint8Array, options: EncodeRecordsOptions = {}): Buffer {
  const max = options.maxFrameBytes ?? HDWP_DEFAULT_MAX_FRAME;
  return hdwpCall(() => native.hdwpEncodeRecords(batchId.bytes, recordSize, records, max, false, ...authArgs(options.auth)));
}

/**
 * Encodes a chunk of whole records of one batch for a datagram transport: one records frame per
 * datagram, each at most `mtu` bytes (MTU_STANDARD or MTU_JUMBO, instance-wide), records never
 * split across datagrams. Returns one Buffer per datagram, all views of a single allocation.
 * Throws ERR_HDWP_TOO_LARGE when one record does not fit the MTU.
 */
export function splitRecordsForMtu(mtu: number, batchId: BatchID, recordSize: number, records: Uint8Array, auth?: QueryAuth): Buffer[] {
  const all = hdwpCall(() => native.hdwpEncodeRecords(batchId.bytes, recordSize, records, mtu, true, ...authArgs(auth)));
  const out: Buffer[] = [];
  // One step per datagram (not per record): each frame's length is in its header at offset 8.
  for (let at = 0; at < all.length; ) {
    const len = HDWP_HEADER_LEN + all.readUInt32BE(at + 8);
    out.push(all.subarray(at, at + len));
    at += len;
  }
  return out;
}
