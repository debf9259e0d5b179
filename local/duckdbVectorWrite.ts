/**
 * Raw writes into DuckDB vectors for the Arrow → DuckDB loaders (arrowToDuckdb.ts): a shared staging
 * buffer, validity bits, strings as `duckdb_string_t`, and the bounds check every raw copy relies on.
 * `copy_data_to_vector` is an unchecked memcpy: nothing here may run on data `inBounds` refused.
 */
import * as arrow from 'apache-arrow';
import duckdb from '@duckdb/node-bindings';

let stage = new Uint8Array(64 * 1024);

/**
 * The staging buffer shared by the writers, at least `bytes` long (grown on demand, never shrunk).
 * Valid until the next call: each writer uses it and copies it into DuckDB before returning.
 */
export function staging(bytes: number): Uint8Array {
  if (stage.length < bytes) stage = new Uint8Array(Math.max(bytes, stage.length * 2));
  return stage;
}

/** Copies the validity bits of rows `[start, start + n)`; rows are valid unless Arrow says otherwise. */
export function writeValidity(vector: duckdb.Vector, data: arrow.Data, start: number, n: number): void {
  if (data.nullCount === 0 || n === 0) return;
  const bitmap = data.nullBitmap;
  if (!bitmap || bitmap.length === 0) return;
  duckdb.vector_ensure_validity_writable(vector);
  const bit = data.offset + start;
  const bytes = (n + 7) >> 3;
  if ((bit & 7) === 0) {
    const from = bit >> 3;
    duckdb.copy_data_to_vector_validity(vector, 0, bitmap.buffer as ArrayBuffer, bitmap.byteOffset + from, Math.min(bytes, bitmap.length - from));
    return;
  }
  const out = staging(bytes).subarray(0, bytes).fill(0);
  for (let i = 0; i < n; i++) {
    const b = bit + i;
    if (bitmap[b >> 3]! & (1 << (b & 7))) out[i >> 3]! |= 1 << (i & 7);
  }
  duckdb.copy_data_to_vector_validity(vector, 0, out.buffer as ArrayBuffer, out.byteOffset, bytes);
}

/** Value boundaries: value `i` is `bytes[starts[sBase + i] .. ends[eBase + i])`. */
export type Bounds = Int32Array | Float64Array;

/**
 * Strings and binaries. Values of up to 12 bytes are written as inlined `duckdb_string_t` (length, then
 * the bytes, zero padded) in one copy for the whole vector; longer ones by one native call each.
 */
export function writeStrings(vector: duckdb.Vector, n: number, starts: Bounds, sBase: number, ends: Bounds, eBase: number, bytes: Uint8Array): void {
  const buf = staging(n * 20).fill(0, 0, n * 16);
  const words = new Uint32Array(buf.buffer, buf.byteOffset, n * 4);
  const long = new Int32Array(buf.buffer, buf.byteOffset + n * 16, n);
  let longCount = 0;
  for (let i = 0; i < n; i++) {
    const a = starts[sBase + i]!;
    const b = ends[eBase + i]!;
    const len = b - a;
    words[i * 4] = len;
    if (len <= 12) {
      let o = i * 16 + 4;
      for (let k = a; k < b; k++) buf[o++] = bytes[k]!;
    } else {
      long[longCount++] = i;
    }
  }
  duckdb.copy_data_to_vector(vector, 0, buf.buffer as ArrayBuffer, buf.byteOffset, n * 16);
  for (let j = 0; j < longCount; j++) {
    const i = long[j]!;
    duckdb.vector_assign_string_element_len(vector, i, bytes.subarray(starts[sBase + i]!, ends[eBase + i]!));
  }
}

/** Int32 offsets as they are; 64-bit (Large*) offsets of rows `[start, start + n]` as doubles. */
export function boundsOf(offsets: Int32Array | BigInt64Array, start: number, n: number): [Bounds, number] {
  if (!(offsets instanceof BigInt64Array)) return [offsets, start];
  const out = new Float64Array(n + 1);
  for (let i = 0; i <= n; i++) out[i] = Number(offsets[start + i]!);
  return [out, 0];
}

/** Marks rows `0..n-1` of `vector` null. */
export function writeAllNull(vector: duckdb.Vector, n: number): void {
  duckdb.vector_ensure_validity_writable(vector);
  const bytes = (n + 7) >> 3;
  const zeros = staging(bytes).fill(0, 0, bytes);
  duckdb.copy_data_to_vector_validity(vector, 0, zeros.buffer as ArrayBuffer, zeros.byteOffset, bytes);
}

/** Whether rows `[start, start + n)` of `data` lie inside its buffers (the copies are raw memcpy). */
export function inBounds(data: arrow.Data, start: number, n: number): boolean {
  const t = data.type as arrow.DataType;
  const end = start + n;
  const bm = data.nullBitmap;
  if (data.nullCount > 0 && bm && bm.length > 0 && bm.length * 8 < data.offset + end) return false;
  const values = data.values as ArrayLike<unknown> | undefined;
  switch (t.typeId) {
    case arrow.Type.Bool: return !!values && values.length * 8 >= data.offset + end;
    case arrow.Type.Utf8:
    case arrow.Type.Binary:
    case arrow.Type.LargeUtf8:
    case arrow.Type.LargeBinary: {
      const o = data.valueOffsets as ArrayLike<number | bigint> | undefined;
      return !!o && !!values && o.length > end && values.length >= Number(o[end]!);
    }
    case arrow.Type.List:
    case arrow.Type.LargeList: {
      const o = data.valueOffsets as ArrayLike<number | bigint> | undefined;
      return !!o && o.length > end && data.children.length === 1 && data.children[0]!.length >= Number(o[end]!);
    }
    case arrow.Type.FixedSizeList: return data.children.length === 1 && data.children[0]!.length >= end * (t as arrow.FixedSizeList).listSize;
    case arrow.Type.Struct: return data.children.every((c) => c.length >= end);
    case arrow.Type.Dictionary: return !!values && values.length >= end && !!data.dictionary;
    default: return !!values && values.length >= end * data.stride;
  }
}
