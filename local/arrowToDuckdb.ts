/**
 * Arrow → DuckDB: the DuckDB column type each Arrow column becomes, and bulk writers that fill a DuckDB
 * vector from a row range of Arrow data. Fixed-width columns are one memory copy per vector
 * (`copy_data_to_vector`); strings of up to 12 bytes are laid out as DuckDB's inlined `string_t` in a
 * staging buffer and copied the same way; only longer strings cost one native call each. No row
 * objects are built. docs/sdk-local.md has the type table.
 */
import * as arrow from 'apache-arrow';
import duckdb from '@duckdb/node-bindings';
import {
  ARRAY, BIGINT, BLOB, BOOLEAN, DATE, DECIMAL, DOUBLE, ENUM, FLOAT, HUGEINT, INTEGER, LIST, SMALLINT, STRUCT,
  TIME, TIME_NS, TIMESTAMP, TIMESTAMP_MS, TIMESTAMP_NS, TIMESTAMP_S, TIMESTAMPTZ, TINYINT, UBIGINT, UHUGEINT,
  UINTEGER, USMALLINT, UTINYINT, VARCHAR, type DuckDBType,
} from '@duckdb/node-api';
import { bignumLoader, isWideIntegerText } from './bignum';
import { boundsOf, inBounds, staging, writeAllNull, writeStrings, writeValidity } from './duckdbVectorWrite';
import { LocalSqlError } from './localSqlError';

/** Writes one Arrow column into DuckDB vectors, a row range at a time. */
export interface ColumnLoader {
  /** The DuckDB column type. */
  readonly type: DuckDBType;
  /** Writes rows `[start, start + n)` of `data` to positions `0..n-1` of `vector`. */
  write(vector: duckdb.Vector, data: arrow.Data, start: number, n: number): void;
}

/** A column whose Arrow values are DuckDB's layout already: one copy. */
function copyLoader(type: DuckDBType, width: number): ColumnLoader {
  return {
    type,
    write(vector, data, start, n) {
      const values = data.values as ArrayBufferView;
      duckdb.copy_data_to_vector(vector, 0, values.buffer as ArrayBuffer, values.byteOffset + start * width, n * width);
      writeValidity(vector, data, start, n);
    },
  };
}

/** Writes `n` computed values through a typed array staged in the shared buffer. */
function computedLoader<T extends Int32Array | Float32Array | Uint32Array | BigInt64Array>(
  type: DuckDBType,
  make: (buf: ArrayBuffer, n: number) => T,
  fill: (out: T, data: arrow.Data, start: number, n: number) => void,
): ColumnLoader {
  return {
    type,
    write(vector, data, start, n) {
      const buf = staging(n * 16 + 16);
      const out = make(buf.buffer as ArrayBuffer, n);
      fill(out, data, start, n);
      duckdb.copy_data_to_vector(vector, 0, out.buffer as ArrayBuffer, out.byteOffset, out.byteLength);
      writeValidity(vector, data, start, n);
    },
  };
}

const boolLoader: ColumnLoader = {
  type: BOOLEAN,
  write(vector, data, start, n) {
    const bits = data.values as Uint8Array;
    const out = staging(n).subarray(0, n);
    const at = data.offset + start;
    for (let i = 0; i < n; i++) {
      const b = at + i;
      out[i] = (bits[b >> 3]! >> (b & 7)) & 1;
    }
    duckdb.copy_data_to_vector(vector, 0, out.buffer as ArrayBuffer, out.byteOffset, n);
    writeValidity(vector, data, start, n);
  },
};

function stringLoader(type: DuckDBType): ColumnLoader {
  return {
    type,
    write(vector, data, start, n) {
      const [b, base] = boundsOf(data.valueOffsets as Int32Array | BigInt64Array, start, n);
      writeStrings(vector, n, b, base, b, base + 1, data.values as Uint8Array);
      writeValidity(vector, data, start, n);
    },
  };
}

function fixedBinaryLoader(width: number): ColumnLoader {
  return {
    type: BLOB,
    write(vector, data, start, n) {
      const b = new Float64Array(n + 1);
      for (let i = 0; i <= n; i++) b[i] = (start + i) * width;
      writeStrings(vector, n, b, 0, b, 1, data.values as Uint8Array);
      writeValidity(vector, data, start, n);
    },
  };
}

/** UTF-8 bytes of every label of a dictionary vector, back to back, with offsets. */
function labelBytes(dictionary: arrow.Vector): { offsets: Int32Array; bytes: Uint8Array; labels: string[] } {
  const labels = [...dictionary].map((v) => String(v));
  const enc = labels.map((l) => Buffer.from(l, 'utf8'));
  const offsets = new Int32Array(labels.length + 1);
  for (let i = 0; i < enc.length; i++) offsets[i + 1] = offsets[i]! + enc[i]!.length;
  return { offsets, bytes: Buffer.concat(enc), labels };
}

/**
 * A dictionary column as a DuckDB ENUM whose labels are sorted by their bytes, so that ORDER BY and
 * comparisons order labels (the reference's rule), not codes. Each batch's dictionary indices are
 * mapped through a permutation built once per dictionary vector.
 */
function enumLoader(column: string, firstDictionary: arrow.Vector): ColumnLoader | undefined {
  const labels = [...firstDictionary].map((v) => String(v));
  const sorted = [...new Set(labels)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  if (sorted.length !== labels.length || sorted.length === 0 || sorted.length > 0xffffffff) return undefined;
  const position = new Map(sorted.map((l, i) => [l, i]));
  const perms = new WeakMap<arrow.Vector, Uint32Array>();
  const permFor = (dictionary: arrow.Vector): Uint32Array => {
    let perm = perms.get(dictionary);
    if (!perm) {
      const own = [...dictionary].map((v) => String(v));
      perm = new Uint32Array(own.length);
      own.forEach((l, i) => {
        const p = position.get(l);
        if (p === undefined) {
          throw new LocalSqlError('ERR_SQL_LOAD', `column "${column}": label "${l}" is not in the enum built from the first batch (${sorted.length} labels)`);
        }
        perm![i] = p;
      });
      perms.set(dictionary, perm);
    }
    return perm;
  };
  const width = sorted.length <= 256 ? 1 : sorted.length <= 65536 ? 2 : 4;
  return {
    type: ENUM(sorted),
    write(vector, data, start, n) {
      const perm = permFor(data.dictionary!);
      const idx = data.values as Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;
      const buf = staging(n * width);
      const out = width === 1 ? buf.subarray(0, n) : width === 2 ? new Uint16Array(buf.buffer, buf.byteOffset, n) : new Uint32Array(buf.buffer, buf.byteOffset, n);
      const size = perm.length;
      for (let i = 0; i < n; i++) {
        const k = idx[start + i]!;
        out[i] = k >= 0 && k < size ? perm[k]! : 0;
      }
      duckdb.copy_data_to_vector(vector, 0, out.buffer as ArrayBuffer, out.byteOffset, n * width);
      writeValidity(vector, data, start, n);
    },
  };
}

/** A dictionary column as VARCHAR (no sample dictionary yet, or labels that repeat). */
function dictionaryTextLoader(): ColumnLoader {
  const cache = new WeakMap<arrow.Vector, ReturnType<typeof labelBytes>>();
  return {
    type: VARCHAR,
    write(vector, data, start, n) {
      const dict = data.dictionary!;
      let lb = cache.get(dict);
      if (!lb) cache.set(dict, (lb = labelBytes(dict)));
      const { offsets, bytes } = lb;
      const idx = data.values as Int32Array;
      const starts = new Int32Array(n);
      const ends = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        const k = idx[start + i]!;
        if (k >= 0 && k < offsets.length - 1) {
          starts[i] = offsets[k]!;
          ends[i] = offsets[k + 1]!;
        }
      }
      writeStrings(vector, n, starts, 0, ends, 0, bytes);
      writeValidity(vector, data, start, n);
    },
  };
}

/** Arrow decimal words (4 or 8 little-endian u32 per value) narrowed to DuckDB's decimal storage. */
function decimalLoader(type: DuckDBType, column: string, stride: number, width: 2 | 4 | 8 | 16, signedCheck: 'signed' | 'unsigned' | 'none'): ColumnLoader {
  return {
    type,
    write(vector, data, start, n) {
      const words = data.values as Uint32Array;
      const buf = staging(n * width);
      if (width === 2) {
        const out = new Int16Array(buf.buffer, buf.byteOffset, n);
        for (let i = 0; i < n; i++) out[i] = words[(start + i) * stride]! | 0;
      } else {
        const w = width >> 2;
        const out = new Uint32Array(buf.buffer, buf.byteOffset, n * w);
        for (let i = 0; i < n; i++) {
          const s = (start + i) * stride;
          for (let j = 0; j < w; j++) out[i * w + j] = words[s + j]!;
          if (signedCheck !== 'none' && stride > w) {
            // The words above the kept ones must only extend the kept value's sign (or be zero).
            const fill = signedCheck === 'signed' && words[s + w - 1]! & 0x80000000 ? 0xffffffff : 0;
            for (let j = w; j < stride; j++) {
              if (words[s + j] !== fill && data.getValid(start + i)) {
                throw new LocalSqlError('ERR_SQL_LOAD', `column "${column}" row ${start + i}: value does not fit ${type.toString()}`);
              }
            }
          }
        }
      }
      duckdb.copy_data_to_vector(vector, 0, buf.buffer as ArrayBuffer, buf.byteOffset, n * width);
      writeValidity(vector, data, start, n);
    },
  };
}

function decimalFor(field: arrow.Field<arrow.Decimal>): ColumnLoader {
  const { precision, scale, bitWidth } = field.type;
  const stride = bitWidth >> 5;
  if (precision <= 38) {
    const width = precision <= 4 ? 2 : precision <= 9 ? 4 : precision <= 18 ? 8 : 16;
    return decimalLoader(DECIMAL(precision, scale), field.name, stride, width, 'none');
  }
  if (scale !== 0) {
    throw new LocalSqlError('ERR_SQL_TYPE', `column "${field.name}": decimal(${precision},${scale}) is wider than DuckDB's 38 digits`);
  }
  // Decimal256(39, 0) holds HD's 128-bit integers: HUGEINT, or UHUGEINT for uint128.
  const unsigned = field.metadata.get('hd.type') === 'uint128';
  return decimalLoader(unsigned ? UHUGEINT : HUGEINT, field.name, stride, 16, unsigned ? 'unsigned' : 'signed');
}

function listLoader(child: ColumnLoader): ColumnLoader {
  return {
    type: LIST(child.type),
    write(vector, data, start, n) {
      const [b, base] = boundsOf(data.valueOffsets as Int32Array | BigInt64Array, start, n);
      const at = (r: number): number => b[base + r - start]!;
      const first = at(start);
      const total = at(start + n) - first;
      // duckdb_list_entry: { uint64 offset, uint64 length }, written as u32 words (values < 2^32).
      const buf = staging(n * 16).fill(0, 0, n * 16);
      const words = new Uint32Array(buf.buffer, buf.byteOffset, n * 4);
      for (let i = 0; i < n; i++) {
        const a = at(start + i);
        words[i * 4] = a - first;
        words[i * 4 + 2] = at(start + i + 1) - a;
      }
      duckdb.copy_data_to_vector(vector, 0, buf.buffer as ArrayBuffer, buf.byteOffset, n * 16);
      duckdb.list_vector_reserve(vector, total);
      if (total > 0) child.write(duckdb.list_vector_get_child(vector), data.children[0]!, first, total);
      duckdb.list_vector_set_size(vector, total);
      writeValidity(vector, data, start, n);
    },
  };
}

function arrayLoader(size: number, child: ColumnLoader): ColumnLoader {
  return {
    type: ARRAY(child.type, size),
    write(vector, data, start, n) {
      if (size > 0) child.write(duckdb.array_vector_get_child(vector), data.children[0]!, start * size, n * size);
      writeValidity(vector, data, start, n);
    },
  };
}

function structLoader(children: readonly { name: string; loader: ColumnLoader }[]): ColumnLoader {
  return {
    type: STRUCT(Object.fromEntries(children.map((c) => [c.name, c.loader.type]))),
    write(vector, data, start, n) {
      children.forEach((c, k) => c.loader.write(duckdb.struct_vector_get_child(vector, k), data.children[k]!, start, n));
      writeValidity(vector, data, start, n);
    },
  };
}

const BIG_FACTOR = { [arrow.TimeUnit.SECOND]: 1_000_000n, [arrow.TimeUnit.MILLISECOND]: 1000n, [arrow.TimeUnit.MICROSECOND]: 1n, [arrow.TimeUnit.NANOSECOND]: 1n } as const;

function timestampLoader(t: arrow.Timestamp): ColumnLoader {
  if (t.timezone == null) {
    const type = { [arrow.TimeUnit.SECOND]: TIMESTAMP_S, [arrow.TimeUnit.MILLISECOND]: TIMESTAMP_MS, [arrow.TimeUnit.MICROSECOND]: TIMESTAMP, [arrow.TimeUnit.NANOSECOND]: TIMESTAMP_NS }[t.unit];
    return copyLoader(type, 8);
  }
  if (t.unit === arrow.TimeUnit.MICROSECOND) return copyLoader(TIMESTAMPTZ, 8);
  const f = BIG_FACTOR[t.unit];
  const div = t.unit === arrow.TimeUnit.NANOSECOND ? 1000n : 1n;
  return computedLoader(TIMESTAMPTZ, (b, n) => new BigInt64Array(b, 0, n), (out, data, start, n) => {
    const v = data.values as BigInt64Array;
    for (let i = 0; i < n; i++) out[i] = (v[start + i]! * f) / div;
  });
}

function timeLoader(t: arrow.Time): ColumnLoader {
  if (t.unit === arrow.TimeUnit.MICROSECOND) return copyLoader(TIME, 8);
  if (t.unit === arrow.TimeUnit.NANOSECOND) return copyLoader(TIME_NS, 8);
  const f = t.unit === arrow.TimeUnit.SECOND ? 1_000_000n : 1000n;
  return computedLoader(TIME, (b, n) => new BigInt64Array(b, 0, n), (out, data, start, n) => {
    const v = data.values as Int32Array;
    for (let i = 0; i < n; i++) out[i] = BigInt(v[start + i]!) * f;
  });
}

/**
 * Every loader goes through this: data that is all null is written as nulls (values unread), and data
 * whose buffers are shorter than its rows is refused before any raw copy could read past them.
 */
function guarded(loader: ColumnLoader, path: string): ColumnLoader {
  return {
    type: loader.type,
    write(vector, data, start, n) {
      if (n === 0) return;
      // All-null data may come without values (apache-arrow fills missing columns that way).
      if (data.nullCount === data.length) return writeAllNull(vector, n);
      if (!inBounds(data, start, n)) {
        throw new LocalSqlError('ERR_SQL_LOAD', `column "${path}": its Arrow buffers are shorter than its ${data.length} rows (malformed data)`);
      }
      loader.write(vector, data, start, n);
    },
  };
}

/**
 * The loader of one Arrow field. `dictionary` is a sample dictionary vector for a Dictionary column
 * (from the first batch); without one, or when its labels repeat, the column is VARCHAR.
 * @throws LocalSqlError `ERR_SQL_TYPE` for an Arrow type DuckDB cannot hold here, naming the column.
 */
export function loaderFor(field: arrow.Field, dictionaries: ReadonlyMap<string, arrow.Vector> = new Map(), path = field.name): ColumnLoader {
  return guarded(unguardedLoader(field, dictionaries, path), path);
}

function unguardedLoader(field: arrow.Field, dictionaries: ReadonlyMap<string, arrow.Vector>, path: string): ColumnLoader {
  const t = field.type as arrow.DataType;
  switch (t.typeId) {
    case arrow.Type.Bool: return boolLoader;
    case arrow.Type.Int: {
      const it = t as arrow.Int;
      const types = it.isSigned ? [TINYINT, SMALLINT, INTEGER, BIGINT] : [UTINYINT, USMALLINT, UINTEGER, UBIGINT];
      const k = Math.log2(it.bitWidth) - 3;
      return copyLoader(types[k]!, it.bitWidth >> 3);
    }
    case arrow.Type.Float: {
      const p = (t as arrow.Float).precision;
      if (p === arrow.Precision.SINGLE) return copyLoader(FLOAT, 4);
      if (p === arrow.Precision.DOUBLE) return copyLoader(DOUBLE, 8);
      return computedLoader(FLOAT, (b, n) => new Float32Array(b, 0, n), (out, data, start, n) => {
        const v = arrow.makeVector(data);
        for (let i = 0; i < n; i++) out[i] = Number(v.get(start + i) ?? 0);
      });
    }
    case arrow.Type.Decimal: return decimalFor(field as arrow.Field<arrow.Decimal>);
    case arrow.Type.Utf8:
    case arrow.Type.LargeUtf8: return isWideIntegerText(field) ? bignumLoader(path) : stringLoader(VARCHAR);
    case arrow.Type.Binary:
    case arrow.Type.LargeBinary: return stringLoader(BLOB);
    case arrow.Type.FixedSizeBinary: return fixedBinaryLoader((t as arrow.FixedSizeBinary).byteWidth);
    case arrow.Type.Dictionary: {
      const sample = dictionaries.get(path);
      return (sample && enumLoader(path, sample)) ?? dictionaryTextLoader();
    }
    case arrow.Type.Date: {
      if ((t as arrow.Date_).unit === arrow.DateUnit.DAY) return copyLoader(DATE, 4);
      return computedLoader(DATE, (b, n) => new Int32Array(b, 0, n), (out, data, start, n) => {
        const v = data.values as BigInt64Array;
        for (let i = 0; i < n; i++) out[i] = Number(v[start + i]! / 86_400_000n);
      });
    }
    case arrow.Type.Timestamp: return timestampLoader(t as arrow.Timestamp);
    case arrow.Type.Time: return timeLoader(t as arrow.Time);
    case arrow.Type.List:
    case arrow.Type.LargeList: {
      const c = (t as arrow.List).children[0]!;
      return listLoader(loaderFor(c, dictionaries, `${path}.${c.name}`));
    }
    case arrow.Type.FixedSizeList: {
      const fl = t as arrow.FixedSizeList;
      const c = fl.children[0]!;
      return arrayLoader(fl.listSize, loaderFor(c, dictionaries, `${path}.${c.name}`));
    }
    case arrow.Type.Struct:
      return structLoader((t as arrow.Struct).children.map((c) => ({ name: c.name, loader: loaderFor(c, dictionaries, `${path}.${c.name}`) })));
    default:
      throw new LocalSqlError('ERR_SQL_TYPE', `column "${path}": Arrow type ${String(t)} has no DuckDB column type here`);
  }
}

/** Sample dictionaries of every Dictionary column (nested ones by dotted path) in `data`. */
export function sampleDictionaries(fields: readonly arrow.Field[], data: readonly arrow.Data[], into = new Map<string, arrow.Vector>(), prefix = ''): Map<string, arrow.Vector> {
  fields.forEach((f, k) => {
    const path = prefix ? `${prefix}.${f.name}` : f.name;
    const d = data[k];
    if (!d) return;
    if (arrow.DataType.isDictionary(f.type) && d.dictionary && !into.has(path)) into.set(path, d.dictionary);
    const kids = (f.type as arrow.DataType).children;
    if (kids && kids.length > 0 && d.children.length > 0) sampleDictionaries(kids, d.children, into, path);
  });
  return into;
}
