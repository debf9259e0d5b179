/**
 * Take: the rows of Arrow data at given indices, in that order, in the same type (dictionaries kept,
 * lists and structs recursively), gathered from one or several batches. Used to return the top rows
 * of a vector search, the node column of a graph result, and list entries DuckDB hands back out of
 * order. Copies go through typed arrays; the cost is proportional to the rows taken.
 */
import * as arrow from 'apache-arrow';
import { LocalSqlError } from './localSqlError';
import { makeAnyData } from './makeAnyData';

/** Output row `i` is row `row[i]` of `parts[part[i]]` (rows relative to each part's first row). */
interface Picks {
  readonly parts: readonly arrow.Data[];
  readonly part: Int32Array;
  readonly row: Int32Array;
}

function isValid(data: arrow.Data, i: number): boolean {
  const bm = data.nullBitmap;
  if (data.nullCount === 0 || !bm || bm.length === 0) return true;
  const b = data.offset + i;
  return (bm[b >> 3]! & (1 << (b & 7))) !== 0;
}

function takeValidity(p: Picks): Uint8Array | undefined {
  if (p.parts.every((d) => d.nullCount === 0)) return undefined;
  const out = new Uint8Array((p.row.length + 7) >> 3);
  for (let i = 0; i < p.row.length; i++) if (isValid(p.parts[p.part[i]!]!, p.row[i]!)) out[i >> 3]! |= 1 << (i & 7);
  return out;
}

type Typed = Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

function takeFixed(p: Picks, stride: number): Typed {
  const first = p.parts[0]!.values as Typed;
  const Ctor = first.constructor as new (n: number) => Typed;
  const out = new Ctor(p.row.length * stride) as Float64Array;
  for (let i = 0; i < p.row.length; i++) {
    const values = p.parts[p.part[i]!]!.values as Float64Array;
    const from = p.row[i]! * stride;
    for (let k = 0; k < stride; k++) out[i * stride + k] = values[from + k]!;
  }
  return out as unknown as Typed;
}

function offsetAt(data: arrow.Data, i: number): number {
  const o = data.valueOffsets as Int32Array | BigInt64Array;
  return Number(o[i]!);
}

/** Dictionary indices of the picks, against one dictionary (the shared one, or the labels' union). */
function takeDictionary(p: Picks, type: arrow.Dictionary): arrow.Data {
  const dicts = [...new Set(p.parts.map((d) => d.dictionary!))];
  const nullBitmap = takeValidity(p);
  const idx = new Int32Array(p.row.length);
  if (dicts.length === 1) {
    for (let i = 0; i < idx.length; i++) idx[i] = Number((p.parts[p.part[i]!]!.values as Int32Array)[p.row[i]!]!);
    return arrow.makeData({ type, length: idx.length, data: idx, dictionary: dicts[0]!, nullBitmap });
  }
  const labels: unknown[] = [];
  const pos = new Map<unknown, number>();
  const maps = new Map(dicts.map((d) => [d, [...d].map((v) => {
    if (!pos.has(v)) pos.set(v, labels.push(v) - 1);
    return pos.get(v)!;
  })]));
  for (let i = 0; i < idx.length; i++) {
    const part = p.parts[p.part[i]!]!;
    idx[i] = maps.get(part.dictionary!)![Number((part.values as Int32Array)[p.row[i]!]!)] ?? 0;
  }
  const dictionary = arrow.vectorFromArray(labels, type.dictionary);
  return arrow.makeData({ type, length: idx.length, data: idx, dictionary, nullBitmap });
}

function take(p: Picks): arrow.Data {
  const type = p.parts[0]!.type as arrow.DataType;
  const length = p.row.length;
  const nullBitmap = takeValidity(p);
  const src = (i: number): arrow.Data => p.parts[p.part[i]!]!;
  switch (type.typeId) {
    case arrow.Type.Null:
      return arrow.makeData({ type: type as arrow.Null, length });
    case arrow.Type.Bool: {
      const out = new Uint8Array((length + 7) >> 3);
      for (let i = 0; i < length; i++) {
        const d = src(i);
        const b = d.offset + p.row[i]!;
        if ((d.values as Uint8Array)[b >> 3]! & (1 << (b & 7))) out[i >> 3]! |= 1 << (i & 7);
      }
      return arrow.makeData({ type: type as arrow.Bool, length, data: out, nullBitmap });
    }
    case arrow.Type.Int:
    case arrow.Type.Float:
    case arrow.Type.Decimal:
    case arrow.Type.Date:
    case arrow.Type.Time:
    case arrow.Type.Timestamp:
    case arrow.Type.Interval:
    case arrow.Type.Duration:
    case arrow.Type.FixedSizeBinary:
      return makeAnyData({ type, length, data: takeFixed(p, p.parts[0]!.stride), nullBitmap });
    case arrow.Type.Dictionary:
      return takeDictionary(p, type as arrow.Dictionary);
    case arrow.Type.Utf8:
    case arrow.Type.Binary:
    case arrow.Type.LargeUtf8:
    case arrow.Type.LargeBinary: {
      const offsets = new Int32Array(length + 1);
      for (let i = 0; i < length; i++) offsets[i + 1] = offsets[i]! + offsetAt(src(i), p.row[i]! + 1) - offsetAt(src(i), p.row[i]!);
      const bytes = new Uint8Array(offsets[length]!);
      for (let i = 0; i < length; i++) {
        const d = src(i);
        bytes.set((d.values as Uint8Array).subarray(offsetAt(d, p.row[i]!), offsetAt(d, p.row[i]! + 1)), offsets[i]!);
      }
      const text = type.typeId === arrow.Type.Utf8 || type.typeId === arrow.Type.LargeUtf8;
      return makeAnyData({ type: text ? new arrow.Utf8() : new arrow.Binary(), length, valueOffsets: offsets, data: bytes, nullBitmap });
    }
    case arrow.Type.List:
    case arrow.Type.LargeList: {
      const offsets = new Int32Array(length + 1);
      for (let i = 0; i < length; i++) offsets[i + 1] = offsets[i]! + offsetAt(src(i), p.row[i]! + 1) - offsetAt(src(i), p.row[i]!);
      const part = new Int32Array(offsets[length]!);
      const row = new Int32Array(offsets[length]!);
      for (let i = 0; i < length; i++) {
        const a = offsetAt(src(i), p.row[i]!);
        for (let k = offsets[i]!; k < offsets[i + 1]!; k++) {
          part[k] = p.part[i]!;
          row[k] = a + k - offsets[i]!;
        }
      }
      const child = take({ parts: p.parts.map((d) => d.children[0]!), part, row });
      return arrow.makeData({ type: new arrow.List((type as arrow.List).children[0]!), length, valueOffsets: offsets, child, nullBitmap });
    }
    case arrow.Type.FixedSizeList: {
      const size = (type as arrow.FixedSizeList).listSize;
      const part = new Int32Array(length * size);
      const row = new Int32Array(length * size);
      for (let i = 0; i < length; i++) {
        for (let k = 0; k < size; k++) {
          part[i * size + k] = p.part[i]!;
          row[i * size + k] = p.row[i]! * size + k;
        }
      }
      const child = take({ parts: p.parts.map((d) => d.children[0]!), part, row });
      return arrow.makeData({ type: type as arrow.FixedSizeList, length, child, nullBitmap });
    }
    case arrow.Type.Struct: {
      const children = (type as arrow.Struct).children.map((_f, k) => take({ parts: p.parts.map((d) => d.children[k]!), part: p.part, row: p.row }));
      return arrow.makeData({ type: type as arrow.Struct, length, children, nullBitmap });
    }
    default:
      throw new LocalSqlError('ERR_SQL_TYPE', `cannot copy rows of Arrow type ${String(type)}`);
  }
}

/**
 * Rows gathered from several Data of one type: output row `i` is row `row[i]` of `parts[part[i]]`.
 * @throws LocalSqlError `ERR_SQL_TYPE` for types it does not copy (unions, maps, views).
 */
export function takeFrom(parts: readonly arrow.Data[], part: Int32Array, row: Int32Array): arrow.Data {
  return take({ parts, part, row });
}

/** Rows `idx` of `data` (relative to its first row), in that order, as new Data of the same type. */
export function takeData(data: arrow.Data, idx: ArrayLike<number>): arrow.Data {
  return take({ parts: [data], part: new Int32Array(idx.length), row: Int32Array.from(idx) });
}

/**
 * Rows of `table` at global row numbers `rows`, in that order, as a Table of one RecordBatch with the
 * same schema (field metadata kept).
 * @throws LocalSqlError `ERR_SQL_TYPE` for column types it does not copy (unions, maps, views).
 */
export function takeRows(table: arrow.Table, rows: ArrayLike<number>): arrow.Table {
  const starts: number[] = [];
  let total = 0;
  for (const b of table.batches) {
    starts.push(total);
    total += b.numRows;
  }
  const part = new Int32Array(rows.length);
  const row = new Int32Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (!(r >= 0 && r < total)) throw new RangeError(`row ${r} is outside the table's ${total} rows`);
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= r) lo = mid;
      else hi = mid - 1;
    }
    part[i] = lo;
    row[i] = r - starts[lo]!;
  }
  const fields = table.schema.fields;
  if (table.batches.length === 0) return new arrow.Table(table.schema);
  const children = fields.map((_f, c) => take({ parts: table.batches.map((b) => b.data.children[c]!), part, row }));
  const data = arrow.makeData({ type: new arrow.Struct(fields), length: rows.length, nullCount: 0, children });
  return new arrow.Table(table.schema, [new arrow.RecordBatch(table.schema, data)]);
}
