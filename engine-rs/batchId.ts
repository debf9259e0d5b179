import { native } from './native';

/** Size of every batch identifier in bytes. */
export const BATCH_ID_LEN = 64;

const BATCH_HEX = /^[0-9a-fA-F]{128}$/;

/**
 * A fixed 64-byte batch identifier, carried by every record, end-of-batch marker and bad batch
 * notice. Build one with the `generateBatchId*` functions.
 */
export class BatchID {
  /** The 64 bytes of the identifier. */
  readonly bytes: Uint8Array;

  /** Wraps 64 bytes (copied, so later changes to `bytes` do not alter the id). */
  constructor(bytes: Uint8Array) {
    if (bytes.length !== BATCH_ID_LEN) {
      throw new RangeError(`a BatchID is exactly ${BATCH_ID_LEN} bytes, got ${bytes.length}`);
    }
    this.bytes = new Uint8Array(bytes);
  }

  /** Parses 128 hex digits. */
  static fromHex(hex: string): BatchID {
    if (!BATCH_HEX.test(hex)) {
      throw new RangeError('a BatchID in hex is exactly 128 hex digits');
    }
    return new BatchID(Buffer.from(hex, 'hex'));
  }

  /** The hex form, once asked for (ids key maps on every node, so the same id is asked often); an ES private field, so deep equality of ids is unchanged. */
  #hex: string | undefined;

  /** Lower-case hex of the 64 bytes (an id never changes: its bytes are its own copy). */
  toHex(): string {
    this.#hex ??= Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength).toString('hex');
    return this.#hex;
  }

  /** Start of the window of a time-form id (bytes 48..56, big-endian signed). */
  get timeStart(): number {
    return Number(new DataView(this.bytes.buffer, this.bytes.byteOffset).getBigInt64(48));
  }

  /** End of the window of a time-form id (bytes 56..64, big-endian signed). */
  get timeEnd(): number {
    return Number(new DataView(this.bytes.buffer, this.bytes.byteOffset).getBigInt64(56));
  }

  /** True when both ids hold the same bytes. */
  equals(other: BatchID): boolean {
    return Buffer.compare(this.bytes, other.bytes) === 0;
  }

  /** The hex form, so ids print and key maps readably. */
  toString(): string {
    return this.toHex();
  }
}

function checkTime(name: string, v: number): void {
  if (!Number.isSafeInteger(v)) throw new RangeError(`${name} must be an integer number of seconds, got ${v}`);
}

/** Batch id from a string: its first 64 UTF-8 bytes, right-aligned, zero padding on the left. */
export function generateBatchIdString(s: string): BatchID {
  return new BatchID(native.batchIdString(s));
}

/** Batch id from an unsigned 64-bit number: big-endian in the final 8 bytes. */
export function generateBatchIdNumber(n: bigint | number): BatchID {
  const v = typeof n === 'bigint' ? n : BigInt(n);
  if (v < 0n || v > 0xffff_ffff_ffff_ffffn) throw new RangeError(`batch id number must be 0..2^64-1, got ${v}`);
  return new BatchID(native.batchIdNumber(v));
}

/**
 * Batch id for a time window: start floored to the interval (bytes 48-55), end rounded up to the
 * next boundary (bytes 56-63; an end on a boundary stays). Interval 0 means one second.
 */
export function generateBatchIdTime(startTime: number, endTime: number, intervalOverride = 0): BatchID {
  checkTime('startTime', startTime);
  checkTime('endTime', endTime);
  checkTime('intervalOverride', intervalOverride);
  return new BatchID(native.batchIdTime(startTime, endTime, intervalOverride));
}

/**
 * One batch id per interval: start floors, end rounds up, and the loop runs inclusively to the
 * rounded end, so the list covers the range and typically extends one interval past it.
 */
export function generateBatchIdsTime(startTime: number, endTime: number, intervalOverride = 0): BatchID[] {
  const all = batchIdBytesTime(startTime, endTime, intervalOverride);
  const out: BatchID[] = [];
  for (let off = 0; off < all.length; off += BATCH_ID_LEN) out.push(new BatchID(all.subarray(off, off + BATCH_ID_LEN)));
  return out;
}

/**
 * {@link generateBatchIdsTime}'s ids as lower-case hex (128 digits each), for a caller that only
 * names them (an HDQuery's `batch_ids`): one hex conversion of them all, no BatchID per id.
 */
export function generateBatchIdHexesTime(startTime: number, endTime: number, intervalOverride = 0): string[] {
  const all = batchIdBytesTime(startTime, endTime, intervalOverride);
  const hex = Buffer.from(all.buffer, all.byteOffset, all.byteLength).toString('hex');
  const out: string[] = new Array<string>(all.length / BATCH_ID_LEN);
  for (let i = 0; i < out.length; i++) out[i] = hex.slice(i * BATCH_ID_LEN * 2, (i + 1) * BATCH_ID_LEN * 2);
  return out;
}

/** The 64-byte ids of {@link generateBatchIdsTime}, end to end, from one native call (arguments checked first). */
function batchIdBytesTime(startTime: number, endTime: number, intervalOverride: number): Uint8Array {
  checkTime('startTime', startTime);
  checkTime('endTime', endTime);
  checkTime('intervalOverride', intervalOverride);
  return native.batchIdsTime(startTime, endTime, intervalOverride);
}
