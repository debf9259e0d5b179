/**
 * DuckDB → Arrow: a materialized DuckDB result as an apache-arrow Table, one RecordBatch per DuckDB
 * chunk. Fixed-width vectors are copied out whole and wrapped as typed arrays; strings are read from
 * DuckDB's `string_t` array (inlined ones straight from the copy, longer ones one native call each).
 * Types without an Arrow counterpart here (INTERVAL, UUID, MAP, UNION, ...) become Utf8 text.
 */
import * as arrow from 'apache-arrow';
import duckdb from '@duckdb/node-bindings';
import {
  DuckDBArrayType, DuckDBDecimalType, DuckDBEnumType, DuckDBListType, DuckDBStructType, DuckDBTypeId, DuckDBVector,
  type DuckDBMaterializedResult, type DuckDBResult, type DuckDBType,
} from '@duckdb/node-api';
import { takeData } from './arrowTake';
import { makeAnyData } from './makeAnyData';

/** Reads one DuckDB vector of `n` rows as Arrow data. */
interface ColumnReader {
  readonly arrowType: arrow.DataType;
  read(vector: duckdb.Vector, n: number): arrow.Data;
}

/** The vector's bytes as a fresh, 8-byte aligned copy. */
function bytesOf(vector: duckdb.Vector, byteCount: number): Uint8Array {
  if (byteCount === 0) return new Uint8Array(0);
  const b = duckdb.vector_get_data(vector, byteCount);
  return b.byteOffset % 8 === 0 ? b : b.slice();
}

/** The validity bitmap of `n` rows (DuckDB's u64 words share Arrow's bit order), or undefined if all valid. */
function validityOf(vector: duckdb.Vector, n: number): Uint8Array | undefined {
  const v = duckdb.vector_get_validity(vector, Math.ceil(n / 64) * 8);
  if (!v || v.length === 0) return undefined;
  return v;
}

function fixedReader<T extends arrow.DataType>(arrowType: T, width: number, View: new (b: ArrayBuffer, o: number, len: number) => ArrayBufferView): ColumnReader {
  return {
    arrowType,
    read(vector, n) {
      const b = bytesOf(vector, n * width);
      const data = new View(b.buffer as ArrayBuffer, b.byteOffset, n * (width / (View as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT));
      return makeAnyData({ type: arrowType, length: n, data, nullBitmap: validityOf(vector, n) });
    },
  };
}

const boolReader: ColumnReader = {
  arrowType: new arrow.Bool(),
  read(vector, n) {
    const b = bytesOf(vector, n);
    const bits = new Uint8Array((n + 7) >> 3);
    for (let i = 0; i < n; i++) if (b[i]) bits[i >> 3]! |= 1 << (i & 7);
    return arrow.makeData({ type: new arrow.Bool(), length: n, data: bits, nullBitmap: validityOf(vector, n) });
  },
};

/** 2/4/8/16-byte two's complement integers widened to `words` u32 words each (Arrow decimal storage). */
function widenedReader(arrowType: arrow.Decimal, width: 2 | 4 | 8 | 16, unsigned: boolean): ColumnReader {
  const words = arrowType.bitWidth >> 5;
  return {
    arrowType,
    read(vector, n) {
      const b = bytesOf(vector, n * width);
      const out = new Uint32Array(n * words);
      if (width === 2) {
        const v = new Int16Array(b.buffer, b.byteOffset, n);
        for (let i = 0; i < n; i++) {
          const x = v[i]!;
          out[i * words] = x;
          if (x < 0) out.fill(0xffffffff, i * words + 1, (i + 1) * words);
        }
      } else {
        const w = width >> 2;
        const v = new Uint32Array(b.buffer, b.byteOffset, n * w);
        for (let i = 0; i < n; i++) {
          for (let j = 0; j < w; j++) out[i * words + j] = v[i * w + j]!;
          if (!unsigned && v[i * w + w - 1]! & 0x80000000) out.fill(0xffffffff, i * words + w, (i + 1) * words);
        }
      }
      return arrow.makeData({ type: arrowType, length: n, data: out, nullBitmap: validityOf(vector, n) });
    },
  };
}

function decimalReader(t: DuckDBDecimalType): ColumnReader {
  const width = t.width <= 4 ? 2 : t.width <= 9 ? 4 : t.width <= 18 ? 8 : 16;
  return widenedReader(new arrow.Decimal(t.scale, t.width, 128), width, false);
}

/** VARCHAR / BLOB: offsets and bytes built from the string_t array; only valid rows are read. */
function stringReader(arrowType: arrow.Utf8 | arrow.Binary): ColumnReader {
  return {
    arrowType,
    read(vector, n) {
      const raw = bytesOf(vector, n * 16);
      const words = new Uint32Array(raw.buffer, raw.byteOffset, n * 4);
      const valid = validityOf(vector, n);
      const isValid = (i: number): boolean => !valid || (valid[i >> 3]! & (1 << (i & 7))) !== 0;
      const offsets = new Int32Array(n + 1);
      for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i]! + (isValid(i) ? words[i * 4]! : 0);
      const bytes = new Uint8Array(offsets[n]!);
      for (let i = 0; i < n; i++) {
        const len = offsets[i + 1]! - offsets[i]!;
        if (len === 0) continue;
        const at = offsets[i]!;
        if (len <= 12) {
          const from = i * 16 + 4;
          for (let k = 0; k < len; k++) bytes[at + k] = raw[from + k]!;
        } else {
          bytes.set(duckdb.get_data_from_pointer(raw.buffer as ArrayBuffer, raw.byteOffset + i * 16 + 8, len), at);
        }
      }
      return makeAnyData({ type: arrowType, length: n, valueOffsets: offsets, data: bytes, nullBitmap: valid });
    },
  };
}

function enumReader(t: DuckDBEnumType): ColumnReader {
  const arrowType = new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32());
  const dictionary = arrow.vectorFromArray([...t.values], new arrow.Utf8());
  const width = t.internalTypeId === DuckDBTypeId.UTINYINT ? 1 : t.internalTypeId === DuckDBTypeId.USMALLINT ? 2 : 4;
  return {
    arrowType,
    read(vector, n) {
      const b = bytesOf(vector, n * width);
      const v = width === 1 ? b : width === 2 ? new Uint16Array(b.buffer, b.byteOffset, n) : new Uint32Array(b.buffer, b.byteOffset, n);
      const idx = new Int32Array(n);
      idx.set(v.subarray(0, n));
      return arrow.makeData({ type: arrowType, length: n, data: idx, dictionary, nullBitmap: validityOf(vector, n) });
    },
  };
}

function listReader(t: DuckDBListType): ColumnReader {
  const child = readerFor(t.valueType);
  const arrowType = new arrow.List(new arrow.Field('item', child.arrowType, true));
  return {
    arrowType,
    read(vector, n) {
      const entries = new Uint32Array(bytesOf(vector, n * 16).buffer, 0, n * 4);
      const valid = validityOf(vector, n);
      const offsets = new Int32Array(n + 1);
      let first = -1;
      let contiguous = true;
      for (let i = 0; i < n; i++) {
        const ok = !valid || (valid[i >> 3]! & (1 << (i & 7))) !== 0;
        const off = entries[i * 4]!;
        const len = ok ? entries[i * 4 + 2]! : 0;
        if (first < 0 && len > 0) first = off;
        if (len > 0 && off - first !== offsets[i]!) contiguous = false;
        offsets[i + 1] = offsets[i]! + len;
      }
      const childData = child.read(duckdb.list_vector_get_child(vector), duckdb.list_vector_get_size(vector));
      let items: arrow.Data;
      if (contiguous) {
        items = first > 0 ? childData.slice(first, offsets[n]!) : childData;
      } else {
        // Entries out of order (DuckDB may share or reorder child rows): gather them in row order.
        const idx = new Int32Array(offsets[n]!);
        for (let i = 0; i < n; i++) {
          const off = entries[i * 4]!;
          for (let k = offsets[i]!; k < offsets[i + 1]!; k++) idx[k] = off + k - offsets[i]!;
        }
        items = takeData(childData, idx);
      }
      return arrow.makeData({ type: arrowType, length: n, valueOffsets: offsets, child: items, nullBitmap: valid });
    },
  };
}

function arrayReader(t: DuckDBArrayType): ColumnReader {
  const child = readerFor(t.valueType);
  const arrowType = new arrow.FixedSizeList(t.length, new arrow.Field('item', child.arrowType, true));
  return {
    arrowType,
    read(vector, n) {
      const childData = child.read(duckdb.array_vector_get_child(vector), n * t.length);
      return arrow.makeData({ type: arrowType, length: n, child: childData, nullBitmap: validityOf(vector, n) });
    },
  };
}

function structReader(t: DuckDBStructType): ColumnReader {
  const kids = t.entryTypes.map((et) => readerFor(et));
  const arrowType = new arrow.Struct(kids.map((k, i) => new arrow.Field(t.entryNames[i]!, k.arrowType, true)));
  return {
    arrowType,
    read(vector, n) {
      const children = kids.map((k, i) => k.read(duckdb.struct_vector_get_child(vector, i), n));
      return arrow.makeData({ type: arrowType, length: n, children, nullBitmap: validityOf(vector, n) });
    },
  };
}

/** Anything else: each value's DuckDB text form (slow path, for the rare types). */
function textReader(t: DuckDBType): ColumnReader {
  return {
    arrowType: new arrow.Utf8(),
    read(vector, n) {
      const v = DuckDBVector.create(vector, n, t);
      const values: (string | null)[] = [];
      for (let i = 0; i < n; i++) {
        const x = v.getItem(i);
        values.push(x === null ? null : String(x));
      }
      return arrow.vectorFromArray(values, new arrow.Utf8()).data[0]!;
    },
  };
}

const NULL_READER: ColumnReader = {
  arrowType: new arrow.Null(),
  read: (_v, n) => arrow.makeData({ type: new arrow.Null(), length: n }),
};

/** The reader of one DuckDB column type. */
function readerFor(t: DuckDBType): ColumnReader {
  const T = arrow.TimeUnit;
  switch (t.typeId) {
    case DuckDBTypeId.BOOLEAN: return boolReader;
    case DuckDBTypeId.TINYINT: return fixedReader(new arrow.Int8(), 1, Int8Array);
    case DuckDBTypeId.SMALLINT: return fixedReader(new arrow.Int16(), 2, Int16Array);
    case DuckDBTypeId.INTEGER: return fixedReader(new arrow.Int32(), 4, Int32Array);
    case DuckDBTypeId.BIGINT: return fixedReader(new arrow.Int64(), 8, BigInt64Array);
    case DuckDBTypeId.UTINYINT: return fixedReader(new arrow.Uint8(), 1, Uint8Array);
    case DuckDBTypeId.USMALLINT: return fixedReader(new arrow.Uint16(), 2, Uint16Array);
    case DuckDBTypeId.UINTEGER: return fixedReader(new arrow.Uint32(), 4, Uint32Array);
    case DuckDBTypeId.UBIGINT: return fixedReader(new arrow.Uint64(), 8, BigUint64Array);
    case DuckDBTypeId.FLOAT: return fixedReader(new arrow.Float32(), 4, Float32Array);
    case DuckDBTypeId.DOUBLE: return fixedReader(new arrow.Float64(), 8, Float64Array);
    case DuckDBTypeId.HUGEINT: return widenedReader(new arrow.Decimal(0, 39, 256), 16, false);
    case DuckDBTypeId.UHUGEINT: return widenedReader(new arrow.Decimal(0, 39, 256), 16, true);
    case DuckDBTypeId.DECIMAL: return decimalReader(t as DuckDBDecimalType);
    case DuckDBTypeId.VARCHAR: return stringReader(new arrow.Utf8());
    case DuckDBTypeId.BLOB: return stringReader(new arrow.Binary());
    case DuckDBTypeId.ENUM: return enumReader(t as DuckDBEnumType);
    case DuckDBTypeId.DATE: return fixedReader(new arrow.DateDay(), 4, Int32Array);
    case DuckDBTypeId.TIMESTAMP: return fixedReader(new arrow.Timestamp(T.MICROSECOND), 8, BigInt64Array);
    case DuckDBTypeId.TIMESTAMP_S: return fixedReader(new arrow.Timestamp(T.SECOND), 8, BigInt64Array);
    case DuckDBTypeId.TIMESTAMP_MS: return fixedReader(new arrow.Timestamp(T.MILLISECOND), 8, BigInt64Array);
    case DuckDBTypeId.TIMESTAMP_NS: return fixedReader(new arrow.Timestamp(T.NANOSECOND), 8, BigInt64Array);
    case DuckDBTypeId.TIMESTAMP_TZ: return fixedReader(new arrow.Timestamp(T.MICROSECOND, 'UTC'), 8, BigInt64Array);
    case DuckDBTypeId.TIME: return fixedReader(new arrow.TimeMicrosecond(), 8, BigInt64Array);
    case DuckDBTypeId.TIME_NS: return fixedReader(new arrow.TimeNanosecond(), 8, BigInt64Array);
    case DuckDBTypeId.LIST: return listReader(t as DuckDBListType);
    case DuckDBTypeId.ARRAY: return arrayReader(t as DuckDBArrayType);
    case DuckDBTypeId.STRUCT: return structReader(t as DuckDBStructType);
    case DuckDBTypeId.SQLNULL: return NULL_READER;
    default: return textReader(t);
  }
}

/** Chunks converted between two yields to the event loop (~65k rows). */
const CHUNKS_PER_YIELD = 32;

/**
 * The result as an Arrow Table (one RecordBatch per DuckDB chunk). A column whose name and Arrow type
 * equal a field of `hints` (the input table's schema) keeps that field's metadata (`hd.type`, ...).
 * Large results yield to the event loop every 32 chunks, and `stop()` is asked there whether to go on
 * (it throws to abandon the conversion: a cancelled query, a closed session).
 */
export async function resultToArrow(result: DuckDBMaterializedResult, hints?: arrow.Schema, stop?: () => void): Promise<arrow.Table> {
  const { schema, type, readers } = resultShape(result, hints);
  const batches: arrow.RecordBatch[] = [];
  for (let c = 0; c < result.chunkCount; c++) {
    if (c > 0 && c % CHUNKS_PER_YIELD === 0) {
      // Converting strings is synchronous work: let timers and sockets run between slices.
      await new Promise<void>((resolve) => setImmediate(resolve));
      stop?.();
    }
    const chunk = result.getChunk(c).chunk;
    const n = duckdb.data_chunk_get_size(chunk);
    if (n === 0) continue;
    const children = readers.map((r, i) => r.read(duckdb.data_chunk_get_vector(chunk, i), n));
    batches.push(new arrow.RecordBatch(schema, arrow.makeData({ type, length: n, nullCount: 0, children })));
  }
  return new arrow.Table(schema, batches);
}

/**
 * A streaming result as an Arrow Table, fetching chunk by chunk and stopping once it holds more
 * than `maxRows` rows: DuckDB produces no chunk past that (a row cap enforced while the rows are
 * produced, not after). The table then holds `maxRows + 1` rows, so the caller can tell the cap
 * applied; `stop` as in {@link resultToArrow}.
 */
export async function streamToArrow(result: DuckDBResult, maxRows: number, hints?: arrow.Schema, stop?: () => void): Promise<arrow.Table> {
  const { schema, type, readers } = resultShape(result, hints);
  const batches: arrow.RecordBatch[] = [];
  let rows = 0;
  for (let c = 0; rows <= maxRows; c++) {
    if (c > 0 && c % CHUNKS_PER_YIELD === 0) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      stop?.();
    }
    const fetched = await result.fetchChunk();
    if (!fetched) break;
    const n = duckdb.data_chunk_get_size(fetched.chunk);
    if (n === 0) break;
    const children = readers.map((r, i) => r.read(duckdb.data_chunk_get_vector(fetched.chunk, i), n));
    let batch = new arrow.RecordBatch(schema, arrow.makeData({ type, length: n, nullCount: 0, children }));
    if (rows + n > maxRows + 1) batch = batch.slice(0, maxRows + 1 - rows);
    batches.push(batch);
    rows += batch.numRows;
  }
  return new arrow.Table(schema, batches);
}

/** The Arrow schema and column readers of a result. */
function resultShape(result: DuckDBResult, hints?: arrow.Schema): { schema: arrow.Schema; type: arrow.Struct; readers: ColumnReader[] } {
  const names: string[] = [];
  const readers: ColumnReader[] = [];
  for (let i = 0; i < result.columnCount; i++) {
    names.push(result.columnName(i));
    readers.push(readerFor(result.columnType(i)));
  }
  const fields = readers.map((r, i) => {
    const hint = hints?.fields.find((f) => f.name === names[i]);
    const keep = hint && String(hint.type) === String(r.arrowType) ? hint.metadata : undefined;
    return new arrow.Field(names[i]!, r.arrowType, true, keep);
  });
  const schema = new arrow.Schema(fields);
  return { schema, type: new arrow.Struct(fields), readers };
}
