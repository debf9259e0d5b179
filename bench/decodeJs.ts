/**
 * The JavaScript peer of the native decoder for bench/decode.bench.ts: a DataView decoder that
 * builds the same Arrow columns field by field (one loop per column over the records), written
 * the fast way a careful JS author would (typed arrays, lookup tables, no per-value objects).
 * It covers the types the bench's schema uses. It does not validate UTF-8 (copies bytes), which
 * favours it.
 */
import * as arrow from 'apache-arrow';

/** A field as the bench's schema JSON spells it. */
export interface JsField {
  readonly name: string;
  readonly offset: number;
  readonly size: number;
  readonly type: string;
  readonly enum?: string;
  readonly precision?: number;
  readonly scale?: number;
  readonly time_reference?: { readonly field: string; readonly unit: 's' | 'ms' | 'us' | 'ns' };
  readonly array?: { readonly element: string; readonly count: number; readonly enum?: string };
}

/** The bench's schema JSON (little-endian only). */
export interface JsSchema {
  readonly record_size: number;
  readonly enums: Record<string, { readonly values: Record<string, number>; readonly default_label: string }>;
  readonly fields: readonly JsField[];
}


/** Growable byte buffer + offsets for Utf8 columns. */
class Text {
  data: Uint8Array;
  len = 0;
  readonly offsets: Int32Array;
  constructor(n: number, avg: number) {
    this.data = new Uint8Array(Math.max(16, n * avg));
    this.offsets = new Int32Array(n + 1);
  }
  reserve(k: number): void {
    if (this.len + k <= this.data.length) return;
    const d = new Uint8Array(Math.max(this.data.length * 2, this.len + k));
    d.set(this.data.subarray(0, this.len));
    this.data = d;
  }
  ascii(s: string): void {
    this.reserve(s.length);
    for (let i = 0; i < s.length; i++) this.data[this.len++] = s.charCodeAt(i);
  }
  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.data.set(b, this.len);
    this.len += b.length;
  }
  end(i: number): void {
    this.offsets[i + 1] = this.len;
  }
  make(n: number): arrow.Data {
    return arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: 0, valueOffsets: this.offsets, data: this.data.subarray(0, this.len) });
  }
}

function ipv6(b: Uint8Array, o: number): string {
  const g: number[] = [];
  for (let k = 0; k < 8; k++) g.push((b[o + 2 * k]! << 8) | b[o + 2 * k + 1]!);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${b[o + 12]}.${b[o + 13]}.${b[o + 14]}.${b[o + 15]}`;
  }
  let best = -1, bestLen = 0, run = -1, runLen = 0;
  for (let k = 0; k < 8; k++) {
    if (g[k] === 0) {
      if (runLen === 0) run = k;
      runLen++;
      if (runLen > bestLen) [best, bestLen] = [run, runLen];
    } else runLen = 0;
  }
  if (bestLen < 2) best = -1;
  let s = '';
  for (let k = 0; k < 8; k++) {
    if (k === best) {
      s += '::';
      k += bestLen - 1;
      continue;
    }
    if (k > 0 && k !== best + bestLen) s += ':';
    s += g[k]!.toString(16);
  }
  return s;
}

function dictionary(e: JsSchema['enums'][string]): { labels: string[]; table: Int32Array; def: number } {
  const pairs = Object.entries(e.values).sort((a, b) => a[1] - b[1]);
  const labels: string[] = [];
  const max = pairs.reduce((m, p) => Math.max(m, p[1]), 0);
  const table = new Int32Array(Math.max(256, max + 1));
  for (const [label, code] of pairs) {
    let i = labels.indexOf(label);
    if (i < 0) i = labels.push(label) - 1;
    table[code] = i;
  }
  let def = labels.indexOf(e.default_label);
  if (def < 0) def = labels.push(e.default_label) - 1;
  const known = new Set(pairs.map((p) => p[1]));
  for (let c = 0; c < table.length; c++) if (!known.has(c)) table[c] = def;
  return { labels, table, def };
}

const FACTOR = { s: 1, ms: 1000, us: 1e6, ns: 1e9 } as const;

/** Decodes `records` into the same columns as the native decoder, in JavaScript. */
export function decodeJs(schema: JsSchema, arrowSchema: arrow.Schema, records: Buffer): arrow.RecordBatch {
  const rs = schema.record_size;
  if (records.length % rs !== 0) throw new Error('records length is not a multiple of the record size');
  const n = records.length / rs;
  const dv = new DataView(records.buffer, records.byteOffset, records.byteLength);
  const byName = new Map(schema.fields.map((f) => [f.name, f]));
  const dicts = new Map(Object.entries(schema.enums).map(([k, e]) => [k, dictionary(e)]));
  const children = schema.fields.map((f, fi): arrow.Data => {
    const type = arrowSchema.fields[fi]!.type as arrow.DataType;
    const o = f.offset;
    if (f.array) {
      const count = f.array.count;
      const total = n * count;
      const offsets = new Int32Array(n + 1);
      for (let i = 0; i <= n; i++) offsets[i] = i * count;
      const elType = (type as arrow.List).valueType;
      let child: arrow.Data;
      if (f.array.enum) {
        const d = dicts.get(f.array.enum)!;
        const idx = new Int32Array(total);
        for (let i = 0, k = 0; i < n; i++) for (let j = 0; j < count; j++) idx[k++] = d.table[records[i * rs + o + j]!]!;
        child = arrow.makeData({ type: elType as arrow.Dictionary, length: total, nullCount: 0, data: idx, dictionary: arrow.vectorFromArray(d.labels, new arrow.Utf8()) });
      } else {
        const v = new Int32Array(total);
        for (let i = 0, k = 0; i < n; i++) for (let j = 0; j < count; j++) v[k++] = dv.getUint16(i * rs + o + 2 * j, true);
        child = arrow.makeData({ type: elType as arrow.Int32, length: total, nullCount: 0, data: v });
      }
      return arrow.makeData({ type: type as arrow.List, length: n, nullCount: 0, valueOffsets: offsets, child });
    }
    if (f.time_reference) {
      const src = byName.get(f.time_reference.field)!;
      const factor = BigInt(FACTOR[f.time_reference.unit]);
      const v = new BigInt64Array(n);
      for (let i = 0; i < n; i++) v[i] = dv.getBigInt64(i * rs + src.offset, true) * factor + BigInt(dv.getUint32(i * rs + o, true));
      return arrow.makeData({ type: type as arrow.Int64, length: n, nullCount: 0, data: v });
    }
    if (f.enum) {
      const d = dicts.get(f.enum)!;
      const idx = new Int32Array(n);
      for (let i = 0; i < n; i++) idx[i] = d.table[records[i * rs + o]!]!;
      return arrow.makeData({ type: type as arrow.Dictionary, length: n, nullCount: 0, data: idx, dictionary: arrow.vectorFromArray(d.labels, new arrow.Utf8()) });
    }
    switch (f.type) {
      case 'uint8': {
        const v = new Int16Array(n);
        for (let i = 0; i < n; i++) v[i] = records[i * rs + o]!;
        return arrow.makeData({ type: type as arrow.Int16, length: n, nullCount: 0, data: v });
      }
      case 'int16': {
        const v = new Int16Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getInt16(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Int16, length: n, nullCount: 0, data: v });
      }
      case 'uint16': {
        const v = new Int32Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getUint16(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Int32, length: n, nullCount: 0, data: v });
      }
      case 'int32': {
        const v = new Int32Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getInt32(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Int32, length: n, nullCount: 0, data: v });
      }
      case 'uint32': {
        const v = new BigInt64Array(n);
        for (let i = 0; i < n; i++) v[i] = BigInt(dv.getUint32(i * rs + o, true));
        return arrow.makeData({ type: type as arrow.Int64, length: n, nullCount: 0, data: v });
      }
      case 'timestamp':
      case 'int64': {
        const v = new BigInt64Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getBigInt64(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Int64, length: n, nullCount: 0, data: v });
      }
      case 'uint64': {
        const v = new BigUint64Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getBigUint64(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Uint64, length: n, nullCount: 0, data: v });
      }
      case 'float': {
        const v = new Float32Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getFloat32(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Float32, length: n, nullCount: 0, data: v });
      }
      case 'double': {
        const v = new Float64Array(n);
        for (let i = 0; i < n; i++) v[i] = dv.getFloat64(i * rs + o, true);
        return arrow.makeData({ type: type as arrow.Float64, length: n, nullCount: 0, data: v });
      }
      case 'boolean': {
        const v = new Uint8Array((n + 7) >> 3);
        for (let i = 0; i < n; i++) if (records[i * rs + o]) v[i >> 3]! |= 1 << (i & 7);
        return arrow.makeData({ type: type as arrow.Bool, length: n, nullCount: 0, data: v });
      }
      case 'numeric': {
        // numeric(18,4) in 8 bytes → Decimal128 words; every bench value is within precision.
        const v = new Uint32Array(n * 4);
        for (let i = 0; i < n; i++) {
          const lo = dv.getUint32(i * rs + o, true);
          const hi = dv.getInt32(i * rs + o + 4, true);
          const ext = hi < 0 ? 0xffffffff : 0;
          v[4 * i] = lo;
          v[4 * i + 1] = hi >>> 0;
          v[4 * i + 2] = ext;
          v[4 * i + 3] = ext;
        }
        return arrow.makeData({ type: type as arrow.Decimal, length: n, nullCount: 0, data: v });
      }
      case 'ipv4': {
        const t = new Text(n, 15);
        for (let i = 0; i < n; i++) {
          const x = dv.getUint32(i * rs + o, true);
          t.ascii(`${x >>> 24}.${(x >>> 16) & 255}.${(x >>> 8) & 255}.${x & 255}`);
          t.end(i);
        }
        return t.make(n);
      }
      case 'ipv6': {
        const t = new Text(n, 24);
        for (let i = 0; i < n; i++) {
          t.ascii(ipv6(records, i * rs + o));
          t.end(i);
        }
        return t.make(n);
      }
      case 'string': {
        const t = new Text(n, f.size);
        for (let i = 0; i < n; i++) {
          let end = i * rs + o + f.size;
          while (end > i * rs + o && records[end - 1] === 0) end--;
          t.bytes(records.subarray(i * rs + o, end));
          t.end(i);
        }
        return t.make(n);
      }
      default:
        throw new Error(`bench JS decoder does not handle ${f.type}`);
    }
  });
  const data = arrow.makeData({ type: new arrow.Struct(arrowSchema.fields), length: n, nullCount: 0, children });
  return new arrow.RecordBatch(arrowSchema, data);
}
