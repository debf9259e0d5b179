/**
 * Streaming HDWP decoding: FrameDecoder takes socket chunks of any size and returns whole frames.
 * The bytes are parsed in Rust (`hdwpScan`, all whole frames of a buffer per call); this file
 * only keeps the unparsed tail and turns the scan's numeric descriptors into Frame objects, so
 * the work here is per frame, never per record.
 */
import { BatchID, BATCH_ID_LEN } from './batchId';
import { HdwpError, isHdwpErrorCode } from './hdwpError';
import type { HdwpErrorCode } from './hdwpError';
import {
  HDWP_BATCH_DIGEST_LEN,
  HDWP_DEFAULT_MAX_PAYLOAD,
  HDWP_EOBS_ENTRY_LEN,
  HDWP_HEADER_LEN,
  HDWP_KINDS,
  HDWP_MAX_PAYLOAD_CEILING,
  HDWP_ROLES,
  HDWP_TOKEN_LEN,
  MTU_STANDARD,
} from './hdwpFrame';
import type { BatchEnd, Frame, QueryAuth } from './hdwpFrame';
import { native } from './native';

/** Numbers per frame in a scan descriptor (see `hdwpScan` in native.ts). */
const SLOTS = 10;

/** Options of a FrameDecoder. */
export interface FrameDecoderOptions {
  /** Largest payload accepted, 1..1 GiB; default 16 MiB. A larger frame fails ERR_HDWP_TOO_LARGE from its header alone. */
  maxPayload?: number;
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

function codeOf(c: string | null): HdwpErrorCode {
  // The addon only emits known codes; anything else would be a bridge bug, reported as such.
  return isHdwpErrorCode(c) ? c : 'ERR_HDWP_INVALID_VALUE';
}

/** The `count` entries of an eobs frame at `at` (checked in Rust): batch id views and record counts. */
function batchEnds(buf: Buffer, at: number, count: number): BatchEnd[] {
  const out: BatchEnd[] = new Array<BatchEnd>(count);
  for (let i = 0, off = at; i < count; i++, off += HDWP_EOBS_ENTRY_LEN) {
    // u64 big-endian, at most 2^53 - 1 (the decoder refused more), so two halves add up exactly.
    const recordCount = buf.readUInt32BE(off + BATCH_ID_LEN) * 2 ** 32 + buf.readUInt32BE(off + BATCH_ID_LEN + 4);
    out[i] = { batchId: new BatchID(buf.subarray(off, off + BATCH_ID_LEN)), recordCount };
  }
  return out;
}

/** Frame `i` of a scan descriptor, with views into `buf` for every variable-length part. */
function frameAt(buf: Buffer, d: Float64Array, i: number): Frame {
  const at = i * SLOTS;
  const kind = HDWP_KINDS[d[at] - 1];
  const queryId = d[at + 3];
  const tokenAt = d[at + 4];
  const token = tokenAt >= 0 ? buf.subarray(tokenAt, tokenAt + HDWP_TOKEN_LEN) : undefined;
  const withAuth = <F extends Frame>(f: F): F => {
    if (token !== undefined) (f as F & { auth?: QueryAuth }).auth = { queryId, token };
    return f;
  };
  const [a, b, c, e, g] = [d[at + 5], d[at + 6], d[at + 7], d[at + 8], d[at + 9]];
  const batchId = (off: number): BatchID => new BatchID(buf.subarray(off, off + BATCH_ID_LEN));
  switch (kind) {
    case 'hello':
      return withAuth({ kind, version: c, role: HDWP_ROLES[e - 1], datasetId: buf.toString('utf8', a, b), recordSize: g });
    case 'records':
      return withAuth({ kind, batchId: batchId(a), recordSize: b, count: c, payload: buf.subarray(e, g) });
    case 'eob':
      return withAuth({
        kind,
        batchId: batchId(a),
        recordCount: b,
        closingHash: buf.subarray(c, e),
        ...(g === 1 ? { digest: buf.subarray(e + 1, e + 1 + HDWP_BATCH_DIGEST_LEN) } : {}),
      });
    case 'bbn':
      return withAuth({ kind, batchId: batchId(a), reason: buf.toString('utf8', b, c) });
    case 'query':
      return { kind, queryId, token: token ?? Buffer.alloc(0), json: buf.toString('utf8', a, b) };
    case 'cancel':
      return { kind, queryId, token: token ?? Buffer.alloc(0) };
    case 'error':
      return withAuth({ kind, code: a, message: buf.toString('utf8', b, c) });
    case 'credit':
      return withAuth({ kind, bytes: a });
    case 'aggregate':
      return withAuth({ kind, batchId: batchId(a), json: buf.toString('utf8', b, c) });
    case 'columns':
      return withAuth({ kind, batchId: batchId(a), rows: b, body: buf.subarray(c, e) });
    case 'eobs':
      return withAuth({ kind, batches: batchEnds(buf, a, b) });
    case 'traceContext':
      return withAuth({ kind, json: buf.toString('utf8', a, b) });
    default:
      throw new HdwpError('ERR_HDWP_UNKNOWN_KIND', `scan returned kind ${d[at]}`);
  }
}

function framesOf(buf: Buffer, d: Float64Array): Frame[] {
  const out: Frame[] = [];
  for (let i = 0; i < d.length / SLOTS; i++) out.push(frameAt(buf, d, i));
  return out;
}

/**
 * Streaming decoder over one HDWP stream (e.g. a TCP socket's 'data' chunks).
 *
 * `push` returns the whole frames completed by the chunk; records payloads, tokens and hashes
 * are Buffer views of the pushed chunks (no copies), so don't reuse a chunk's memory after
 * pushing it. A malformed frame throws an HdwpError whose `frames` holds the good frames of the
 * same push, and closes the decoder: every later `push` or `end` throws the same code.
 *
 * @example
 * const decoder = new FrameDecoder();
 * socket.on('data', (chunk) => { for (const frame of decoder.push(chunk)) handle(frame); });
 * socket.on('end', () => decoder.end());
 */
export class FrameDecoder {
  /** Largest payload accepted. */
  readonly maxPayload: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes the next frame needs before a scan can complete it. */
  private need = HDWP_HEADER_LEN;
  private consumed = 0;
  private failure: HdwpError | null = null;

  /** A decoder with the given payload limit (default 16 MiB). */
  constructor(options: FrameDecoderOptions = {}) {
    const max = options.maxPayload ?? HDWP_DEFAULT_MAX_PAYLOAD;
    if (!Number.isInteger(max) || max < 1 || max > HDWP_MAX_PAYLOAD_CEILING) {
      throw new RangeError(`maxPayload must be an integer 1..${HDWP_MAX_PAYLOAD_CEILING}, got ${max}`);
    }
    this.maxPayload = max;
  }

  /** Stream offset of the next undecoded frame (of the bad frame, once closed). */
  get position(): number {
    return this.consumed;
  }

  /** Bytes received but not yet decoded. */
  get buffered(): number {
    return this.pendingBytes;
  }

  /** Adds a chunk; returns the frames it completes (often none, often many). */
  push(chunk: Uint8Array): Frame[] {
    if (this.failure) throw this.closed();
    if (chunk.length === 0) return [];
    this.pending.push(asBuffer(chunk));
    this.pendingBytes += chunk.length;
    // Until the next frame can be complete there is nothing to scan: big frames arriving in many
    // small chunks are joined once, not once per chunk.
    if (this.pendingBytes < this.need) return [];
    const buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    const r = native.hdwpScan(buf, this.maxPayload);
    const frames = framesOf(buf, r.frames);
    const rest = buf.subarray(r.consumed);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    this.consumed += r.consumed;
    this.need = r.need;
    if (r.code !== null) {
      this.failure = new HdwpError(codeOf(r.code), r.message ?? r.code, this.consumed);
      throw new HdwpError(this.failure.code, this.failure.message, this.consumed, frames);
    }
    return frames;
  }

  /**
   * Declares the end of the stream. Throws ERR_HDWP_TRUNCATED_FRAME when a partial frame is
   * left (or the bad frame's code if the leftover is already malformed).
   */
  end(): void {
    if (this.failure) throw this.closed();
    if (this.pendingBytes === 0) return;
    const buf = Buffer.concat(this.pending, this.pendingBytes);
    const r = native.hdwpScan(buf, this.maxPayload);
    if (r.code !== null) {
      this.failure = new HdwpError(codeOf(r.code), r.message ?? r.code, this.consumed);
    } else {
      const msg = `stream ended inside a frame: ${buf.length} of ${r.need} bytes present`;
      this.failure = new HdwpError('ERR_HDWP_TRUNCATED_FRAME', msg, this.consumed);
    }
    throw this.closed();
  }

  private closed(): HdwpError {
    const f = this.failure as HdwpError;
    return new HdwpError(f.code, f.message, f.offset);
  }
}

/**
 * Decodes one datagram: exactly one whole frame of at most `mtu` bytes (default MTU_STANDARD),
 * nothing after it.
 */
export function decodeDatagram(datagram: Uint8Array, mtu: number = MTU_STANDARD): Frame {
  if (!Number.isInteger(mtu) || mtu < HDWP_HEADER_LEN || mtu > 65507) {
    throw new HdwpError('ERR_HDWP_INVALID_VALUE', `invalid mtu: must be ${HDWP_HEADER_LEN}..65507, got ${mtu}`);
  }
  const buf = asBuffer(datagram);
  const r = native.hdwpScan(buf, mtu - HDWP_HEADER_LEN);
  if (r.frames.length === 0) {
    if (r.code !== null) throw new HdwpError(codeOf(r.code), r.message ?? r.code, 0);
    const msg = `datagram of ${buf.length} bytes holds an incomplete frame of ${r.need}`;
    throw new HdwpError('ERR_HDWP_TRUNCATED_FRAME', msg, 0);
  }
  const end = r.frames[2];
  if (end !== buf.length) {
    const msg = `datagram of ${buf.length} bytes holds a frame of ${end} and trailing bytes`;
    throw new HdwpError('ERR_HDWP_INCONSISTENT_LENGTH', msg, 0);
  }
  return framesOf(buf, r.frames)[0];
}
