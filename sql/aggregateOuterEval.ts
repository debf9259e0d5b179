/**
 * The outer statement of an aggregate plan answered by hd_sql itself (issue #17; the shapes are
 * sql/aggregateOuterShape.ts): the merged groups' keys and values, cast as the outer statement casts
 * them, sorted, cut by OFFSET / LIMIT, as the Arrow table DuckDB's outer statement gives — its
 * schema is the statement's own (names, Arrow types, field metadata), and every value is exact:
 * integers and HUGEINT / DECIMAL sums from the merge's BigInts, averages as DuckDB finalises them
 * (sql/aggregateMerge.ts `avgOf`). Where a value would not be exactly DuckDB's (a type or range it
 * does not expect), it says so and the caller runs the outer statement in DuckDB instead.
 */
import * as arrow from 'apache-arrow';
import { AggregateMergeError, avgOf, type MergedGroup } from './aggregateMerge';
import type { AggregateOutput, AggregatePlan } from './aggregatePushdown';
import type { OuterInDuckDb, OuterShape, OuterValue } from './aggregateOuterShape';

/** A value as compared and written: an integer (enum keys: dictionary index), a double, or null. */
type Cell = bigint | number | null;

/** What the evaluation needs beside the shape. */
export interface OuterInput {
  readonly plan: AggregatePlan;
  readonly groups: readonly MergedGroup[];
  /** The statement's result schema (over the empty dataset table): the answer's fields. */
  readonly expected: arrow.Schema;
  /** The label vector of an enum key, by field name. */
  readonly dictionaryOf: (name: string) => arrow.Vector | undefined;
  /** HD_SQL_MAX_ROWS: at most this many rows plus one (that row says the cap applied), as DuckDB streams them. */
  readonly maxRows?: number;
}

/** The outer statement's answer, or why DuckDB must give it. */
export function evaluateOuter(shape: OuterShape, input: OuterInput): arrow.Table | OuterInDuckDb {
  const { plan, expected } = input;
  if (expected.fields.length !== shape.columns.length) return { reason: `the statement has ${expected.fields.length} columns, the outer statement ${shape.columns.length}` };
  // Enum keys as DuckDB holds them: an ENUM of the labels sorted by their bytes (local/arrowToDuckdb.ts).
  const enums = plan.keys.map((f) => {
    const dict = f.enum ? input.dictionaryOf(f.name) : undefined;
    return dict ? sortedEnum(dict) : undefined;
  });
  if (plan.keys.some((f, i) => f.enum && !enums[i])) return { reason: 'an enum key whose labels DuckDB loads as text' };
  const writers: ColumnWriter[] = [];
  for (const [i, c] of shape.columns.entries()) {
    const w = writerFor(c, expected.fields[i]!, input, enums);
    if (typeof w === 'string') return { reason: w };
    writers.push(w);
  }
  let cellsOf: (g: MergedGroup, v: OuterValue) => Cell;
  try {
    cellsOf = cellReader(plan, input.groups, enums);
  } catch (err) {
    if (err instanceof AggregateMergeError) return { reason: err.message };
    throw err;
  }
  let rows = [...input.groups];
  if (shape.order.length > 0) {
    const terms = shape.order.map((o) => ({ ...o, cells: new Map(rows.map((g) => [g, cellsOf(g, o.value)])) }));
    rows.sort((a, b) => {
      for (const t of terms) {
        const c = compareCells(t.cells.get(a)!, t.cells.get(b)!, t.desc, t.nullsFirst);
        if (c !== 0) return c;
      }
      return 0;
    });
  }
  const end = shape.limit === undefined ? rows.length : shape.offset + shape.limit;
  rows = rows.slice(shape.offset, end);
  if (input.maxRows !== undefined && input.maxRows > 0 && rows.length > input.maxRows + 1) rows = rows.slice(0, input.maxRows + 1);
  const children: arrow.Data[] = [];
  for (const [i, c] of shape.columns.entries()) {
    const cells = rows.map((g) => cellsOf(g, c));
    const data = writers[i]!(cells);
    if (typeof data === 'string') return { reason: data };
    children.push(data);
  }
  const type = new arrow.Struct(expected.fields);
  const batches = rows.length === 0 ? [] : [new arrow.RecordBatch(expected, arrow.makeData({ type, length: rows.length, nullCount: 0, children }))];
  return new arrow.Table(expected, batches);
}

/** A column's Arrow data from its cells, or why its values would not be DuckDB's. */
type ColumnWriter = (cells: readonly Cell[]) => arrow.Data | string;

/**
 * Reads a group's value of a key or output: keys as merged, count / sum / min / max as their exact
 * integer (numeric: scaled), avg finalised. Averages are computed up front, once per group, so a
 * value the merge cannot reproduce fails here (AggregateMergeError), before anything is built.
 */
function cellReader(plan: AggregatePlan, groups: readonly MergedGroup[], enums: readonly (SortedEnum | undefined)[]): (g: MergedGroup, v: OuterValue) => Cell {
  const avgs = new Map<number, Map<MergedGroup, number | null>>();
  plan.outputs.forEach((o, i) => {
    if (o.fn === 'avg') avgs.set(i, new Map(groups.map((g) => [g, avgOf(g.m[o.measures[0]!], g.m[o.measures[1]!] ?? 0n, o)])));
  });
  return (g, v) => {
    if ('key' in v) {
      const k = g.key[v.key] ?? null;
      const e = enums[v.key];
      return e && k !== null ? (e.position[Number(k)] ?? null) : k;
    }
    const avg = avgs.get(v.output);
    if (avg) return avg.get(g) ?? null;
    return g.m[plan.outputs[v.output]!.measures[0]!] ?? null;
  };
}

/** DuckDB's ORDER BY on one term: nulls where asked, then by value (integers exactly, doubles numerically). */
function compareCells(a: Cell, b: Cell, desc: boolean, nullsFirst: boolean): number {
  if (a === null || b === null) {
    if (a === b) return 0;
    return (a === null) === nullsFirst ? -1 : 1;
  }
  const c = a < b ? -1 : a > b ? 1 : 0;
  return desc ? -c : c;
}

const INT_BOUNDS: Record<string, readonly [bigint, bigint]> = {
  Int8: [-128n, 127n], Int16: [-32768n, 32767n], Int32: [-(2n ** 31n), 2n ** 31n - 1n], Int64: [-(2n ** 63n), 2n ** 63n - 1n],
  Uint8: [0n, 255n], Uint16: [0n, 65535n], Uint32: [0n, 2n ** 32n - 1n], Uint64: [0n, 2n ** 64n - 1n],
};

/** The type DuckDB's outer statement gives an output (`CAST(... AS sqlType)`), as duckdbToArrow maps it. */
function outputType(o: AggregateOutput): arrow.DataType | undefined {
  switch (o.sqlType) {
    case 'SMALLINT': return new arrow.Int16();
    case 'INTEGER': return new arrow.Int32();
    case 'BIGINT': return new arrow.Int64();
    case 'UBIGINT': return new arrow.Uint64();
    case 'HUGEINT': return new arrow.Decimal(0, 39, 256);
    case 'DOUBLE': return new arrow.Float64();
  }
  const d = /^DECIMAL\((\d+),(\d+)\)$/.exec(o.sqlType);
  return d ? new arrow.Decimal(Number(d[2]), Number(d[1]), 128) : undefined;
}

function sameType(a: arrow.DataType, b: arrow.DataType): boolean {
  if (String(a) !== String(b) || a.typeId !== b.typeId) return false;
  if (arrow.DataType.isDecimal(a) && arrow.DataType.isDecimal(b)) return a.bitWidth === b.bitWidth && a.scale === b.scale && a.precision === b.precision;
  return true;
}

/** The writer of one answer column, or why it cannot be written as DuckDB would. */
function writerFor(c: OuterValue, field: arrow.Field, input: OuterInput, enums: readonly (SortedEnum | undefined)[]): ColumnWriter | string {
  const t = field.type as arrow.DataType;
  if ('key' in c) {
    const f = input.plan.keys[c.key]!;
    const e = enums[c.key];
    if (e) {
      const dict = e.labels;
      if (!arrow.DataType.isDictionary(t) || !arrow.DataType.isUtf8(t.dictionary) || !arrow.DataType.isInt(t.indices) || t.indices.bitWidth !== 32 || !t.indices.isSigned) return `enum key ${f.name} answers ${String(t)}`;
      return (cells) => arrow.makeData({ type: t, length: cells.length, nullCount: 0, data: Int32Array.from(cells, (x) => Number(x)), dictionary: dict as arrow.Vector<arrow.Utf8> }) as arrow.Data;
    }
    if (f.type === 'boolean') return arrow.DataType.isBool(t) ? boolWriter(t) : `boolean key ${f.name} answers ${String(t)}`;
    return arrow.DataType.isInt(t) ? intWriter(t) : `key ${f.name} answers ${String(t)}`;
  }
  const o = input.plan.outputs[c.output]!;
  const want = outputType(o);
  if (!want || !sameType(want, t)) return `${o.fn} as ${o.sqlType} answers ${String(t)}`;
  if (arrow.DataType.isFloat(t)) return (cells) => arrow.makeData({ type: t, length: cells.length, data: Float64Array.from(cells, (x) => (x === null ? 0 : Number(x))), nullBitmap: validity(cells) });
  if (arrow.DataType.isDecimal(t)) return decimalWriter(t);
  if (arrow.DataType.isInt(t)) return intWriter(t);
  return `${o.fn} answers ${String(t)}`;
}

/** An enum key's labels as DuckDB's ENUM holds them, and each dictionary index's position among them. */
interface SortedEnum {
  readonly labels: arrow.Vector;
  readonly position: Int32Array;
}

const sortedEnums = new WeakMap<arrow.Vector, SortedEnum | null>();

/**
 * `dict`'s labels sorted by their UTF-8 bytes, as local/arrowToDuckdb.ts makes the ENUM (so ORDER BY
 * orders labels); null when they repeat or are none (loaded as VARCHAR then).
 */
function sortedEnum(dict: arrow.Vector): SortedEnum | undefined {
  let e = sortedEnums.get(dict);
  if (e === undefined) {
    const labels = [...dict].map((v) => String(v));
    const sorted = [...new Set(labels)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const at = new Map(sorted.map((l, i) => [l, i]));
    e = sorted.length !== labels.length || sorted.length === 0 ? null : { labels: arrow.vectorFromArray(sorted, new arrow.Utf8()), position: Int32Array.from(labels, (l) => at.get(l)!) };
    sortedEnums.set(dict, e);
  }
  return e ?? undefined;
}

/** A validity bitmap when some cell is null (none: all valid). */
function validity(cells: readonly Cell[]): Uint8Array | undefined {
  if (!cells.includes(null)) return undefined;
  const bits = new Uint8Array((cells.length + 7) >> 3);
  cells.forEach((x, i) => {
    if (x !== null) bits[i >> 3]! |= 1 << (i & 7);
  });
  return bits;
}

function intWriter(t: arrow.Int): ColumnWriter {
  const name = String(t);
  const bounds = INT_BOUNDS[name];
  return (cells) => {
    if (!bounds) return `an integer column of ${name}`;
    for (const x of cells) if (x !== null && (typeof x !== 'bigint' || x < bounds[0] || x > bounds[1])) return `${String(x)} is not a value of ${name}`;
    const n = cells.length;
    const big = (x: Cell): bigint => (x === null ? 0n : (x as bigint));
    const small = (x: Cell): number => (x === null ? 0 : Number(x));
    const data = t.bitWidth === 64 ? (t.isSigned ? BigInt64Array.from(cells, big) : BigUint64Array.from(cells, big)) : t.bitWidth === 32 ? (t.isSigned ? Int32Array.from(cells, small) : Uint32Array.from(cells, small)) : t.bitWidth === 16 ? (t.isSigned ? Int16Array.from(cells, small) : Uint16Array.from(cells, small)) : t.isSigned ? Int8Array.from(cells, small) : Uint8Array.from(cells, small);
    return arrow.makeData({ type: t, length: n, data: data as never, nullBitmap: validity(cells) });
  };
}

function boolWriter(t: arrow.Bool): ColumnWriter {
  return (cells) => {
    const bits = new Uint8Array((cells.length + 7) >> 3);
    for (const [i, x] of cells.entries()) {
      if (x !== null && x !== 0n && x !== 1n) return `${String(x)} is not a boolean`;
      if (x === 1n) bits[i >> 3]! |= 1 << (i & 7);
    }
    return arrow.makeData({ type: t, length: cells.length, data: bits, nullBitmap: validity(cells) });
  };
}

/** Decimal cells (scaled integers) as two's complement words, as DuckDB's DECIMAL / HUGEINT reach Arrow. */
function decimalWriter(t: arrow.Decimal): ColumnWriter {
  const words = t.bitWidth >> 5;
  // DuckDB's DECIMAL(p, s) holds |v| < 10^p; HUGEINT (precision 39 here) holds what 128 bits hold.
  const limit = t.precision >= 39 ? 2n ** 127n : 10n ** BigInt(t.precision);
  return (cells) => {
    const out = new Uint32Array(cells.length * words);
    for (const [i, x] of cells.entries()) {
      if (x === null) continue;
      if (typeof x !== 'bigint' || x >= limit || x <= -limit) return `${String(x)} does not fit ${String(t)}`;
      let v = BigInt.asUintN(words * 32, x);
      for (let w = 0; w < words; w++, v >>= 32n) out[i * words + w] = Number(v & 0xffffffffn);
    }
    return arrow.makeData({ type: t, length: cells.length, data: out, nullBitmap: validity(cells) });
  };
}
