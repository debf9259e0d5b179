/**
 * Shared fixtures of the HDWP tests: one frame of every kind, frame normalisation for deep
 * comparison, and a raw frame builder with its own CRC-32C so tests can hand-craft payloads the
 * encoder would refuse to write.
 */
import * as assert from 'uvu/assert';
import { BatchID, FrameDecoder, HdwpError, generateBatchIdNumber } from '../../index';
import type { Frame } from '../../index';

export const TOKEN = Buffer.alloc(16, 0x5a);
export const AUTH = { queryId: 0xfeedbeef, token: TOKEN };
export const BATCH: BatchID = generateBatchIdNumber(42);

/** One frame of every kind, with and without the query block where the kind allows one. */
export function samples(): Frame[] {
  const out: Frame[] = [];
  for (const auth of [undefined, AUTH]) {
    const a = auth ? { auth } : {};
    out.push({ kind: 'hello', version: 1, role: 'storageNode', datasetId: 'trades ✓', recordSize: 3, ...a });
    out.push({ kind: 'records', batchId: BATCH, recordSize: 3, count: 2, payload: Buffer.from([1, 2, 3, 4, 5, 6]), ...a });
    out.push({ kind: 'eob', batchId: BATCH, recordCount: 2 ** 40, closingHash: Buffer.alloc(64, 0xab), ...a });
    out.push({ kind: 'eob', batchId: BATCH, recordCount: 0, closingHash: Buffer.alloc(0), ...a });
    out.push({ kind: 'bbn', batchId: BATCH, reason: 'hash mismatch at block 3', ...a });
    out.push({ kind: 'error', code: 503, message: 'overloaded', ...a });
    out.push({ kind: 'credit', bytes: Number.MAX_SAFE_INTEGER, ...a });
    out.push({ kind: 'aggregate', batchId: BATCH, json: '{"v":1,"groups":[{"k":["6"],"m":["3","-18446744073709551616"]}]}', ...a });
    out.push({ kind: 'columns', batchId: BATCH, rows: 2, body: Buffer.from('01000001000000020000', 'hex'), ...a });
    out.push({ kind: 'eobs', batches: [{ batchId: BATCH, recordCount: Number.MAX_SAFE_INTEGER }, { batchId: generateBatchIdNumber(43), recordCount: 0 }], ...a });
    out.push({ kind: 'traceContext', json: '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}', ...a });
  }
  out.push({ kind: 'query', queryId: 7, token: TOKEN, json: '{"query_id":7,"batch_ids":[]}' });
  out.push({ kind: 'cancel', queryId: 7, token: TOKEN });
  return out;
}

/** A frame with byte fields as plain arrays and batch ids as hex, for deep equality. */
export function plain(f: Frame): unknown {
  return JSON.parse(
    JSON.stringify(f, (_k, v: unknown) => {
      if (v instanceof BatchID) return v.toHex();
      if (v instanceof Uint8Array) return Array.from(v);
      if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer') return (v as { data: number[] }).data;
      return v;
    }),
  );
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C (Castagnoli), the table-driven reference form. */
export function crc32c(...parts: Uint8Array[]): number {
  let c = 0xffffffff;
  for (const p of parts) for (const b of p) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A frame with a correct checksum around any header fields and payload. */
export function raw(kind: number, payload: Uint8Array, flags = 0, version = 1): Buffer {
  const h = Buffer.alloc(16);
  h.write('HDWP', 0, 'latin1');
  h[4] = version;
  h[5] = kind;
  h.writeUInt16BE(flags, 6);
  h.writeUInt32BE(payload.length, 8);
  h.writeUInt32BE(crc32c(h.subarray(0, 12), payload), 12);
  return Buffer.concat([h, payload]);
}

/** Big-endian unsigned integer of `bytes` bytes. */
export function be(value: number | bigint, bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  let v = BigInt(value);
  for (let i = bytes - 1; i >= 0; i--, v >>= 8n) b[i] = Number(v & 0xffn);
  return b;
}

/** Every frame of `bytes`, decoded by one streaming decoder that is then ended. */
export function decodeAll(bytes: Buffer): Frame[] {
  const d = new FrameDecoder();
  const frames = d.push(bytes);
  d.end();
  return frames;
}

/** The HdwpError code `fn` throws (fails the test when it throws anything else or nothing). */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.instance(e, HdwpError);
    return (e as HdwpError).code;
  }
  throw new Error('expected an HdwpError');
}
