/**
 * Arrow → records: encode an apache-arrow RecordBatch or Table into packed fixed-width records
 * with one native call. TypeScript looks at each column once and hands the native side a plan
 * (each chunk's type, length, bit offset) plus the raw buffers (values, validity bitmaps,
 * offsets); Rust (`engine-rs/core/src/encode/columns/`) writes every field of every record. No
 * JavaScript code touches a value. Accepted types and rules: docs/decoding.md, "Encoding from Arrow".
 */
import { constants } from 'node:buffer';
import * as arrow from 'apache-arrow';
import { native } from './native';
import type { Schema } from './schema';

/** What to do with a column the schema does not name. */
export type UnknownColumns = 'error' | 'ignore';

/** Options of an encode. */
export interface EncodeArrowOptions {
  /** `'error'` (default): such a column is an `ArrowEncodeError`; `'ignore'`: it is skipped. */
  readonly unknownColumns?: UnknownColumns;
}

/** Why an encode failed: `code` names the kind. */
export type ArrowEncodeErrorCode =
  /** A column the schema does not name, or a column name used twice. */
  | 'ERR_ENCODE_ARROW_COLUMN'
  /** A column whose Arrow type its field does not take. */
  | 'ERR_ENCODE_ARROW_TYPE'
  /** A value its field refuses (out of range, too long, unknown label, ...); `row` says where. */
  | 'ERR_ENCODE_ARROW_VALUE'
  /** Arrow data whose buffers do not hold what its type and length say. */
  | 'ERR_ENCODE_ARROW_SHAPE';

const CODES: ReadonlySet<string> = new Set(['ERR_ENCODE_ARROW_COLUMN', 'ERR_ENCODE_ARROW_TYPE', 'ERR_ENCODE_ARROW_VALUE', 'ERR_ENCODE_ARROW_SHAPE']);

/** The largest Buffer Node allocates: the records of one call must fit in it. */
const MAX_LENGTH = constants.MAX_LENGTH;

/** A batch that cannot be encoded. */
export class ArrowEncodeError extends Error {
  override readonly name = 'ArrowEncodeError';
  /** The kind of failure. */
  readonly code: ArrowEncodeErrorCode;
  /** The column to blame, when one is. */
  readonly column?: string;
  /** The row (0-based, over the whole batch or table) of a refused value. */
  readonly row?: number;

  /** Wraps a failure of kind `code`. */
  constructor(code: ArrowEncodeErrorCode, message: string, column?: string, row?: number) {
    super(message);
    this.code = code;
    if (column !== undefined) this.column = column;
    if (row !== undefined) this.row = row;
  }
}

/** The Arrow type of a chunk as the native plan names it (`plan::TypeDesc` in Rust). */
type TypePlan =
  | { kind: 'null' | 'bool' | 'utf8' | 'largeUtf8' | 'binary' | 'largeBinary' | 'list' | 'largeList' }
  | { kind: 'int' | 'dictionary'; bitWidth: number; signed: boolean }
  | { kind: 'float'; bitWidth: 16 | 32 | 64 }
  | { kind: 'decimal'; bitWidth: number; precision: number; scale: number }
  | { kind: 'fixedSizeBinary'; byteWidth: number }
  | { kind: 'timestamp'; unit: 's' | 'ms' | 'us' | 'ns' }
  | { kind: 'date'; unit: 'day' | 'ms' }
  | { kind: 'fixedSizeList'; listSize: number }
  | { kind: 'other'; name: string };

/** One Arrow Data as the native plan describes it (`plan::ChunkDesc`); numbers index `buffers`. */
interface ChunkPlan {
  type: TypePlan;
  length: number;
  offset?: number;
  validity?: number;
  values?: number;
  offsets?: number;
  child?: ChunkPlan;
  dictionary?: number;
}

const FLOAT_BITS = { [arrow.Precision.HALF]: 16, [arrow.Precision.SINGLE]: 32, [arrow.Precision.DOUBLE]: 64 } as const;
const TIME_UNITS = { [arrow.TimeUnit.SECOND]: 's', [arrow.TimeUnit.MILLISECOND]: 'ms', [arrow.TimeUnit.MICROSECOND]: 'us', [arrow.TimeUnit.NANOSECOND]: 'ns' } as const;

function typePlan(t: arrow.DataType): TypePlan {
  if (arrow.DataType.isNull(t)) return { kind: 'null' };
  if (arrow.DataType.isInt(t)) return { kind: 'int', bitWidth: t.bitWidth, signed: t.isSigned };
  if (arrow.DataType.isFloat(t)) return { kind: 'float', bitWidth: FLOAT_BITS[t.precision] };
  if (arrow.DataType.isBool(t)) return { kind: 'bool' };
  if (arrow.DataType.isDecimal(t)) return { kind: 'decimal', bitWidth: t.bitWidth, precision: t.precision, scale: t.scale };
  if (arrow.DataType.isUtf8(t)) return { kind: 'utf8' };
  if (arrow.DataType.isLargeUtf8(t)) return { kind: 'largeUtf8' };
  if (arrow.DataType.isBinary(t)) return { kind: 'binary' };
  if (arrow.DataType.isLargeBinary(t)) return { kind: 'largeBinary' };
  if (arrow.DataType.isFixedSizeBinary(t)) return { kind: 'fixedSizeBinary', byteWidth: t.byteWidth };
  if (arrow.DataType.isTimestamp(t)) return { kind: 'timestamp', unit: TIME_UNITS[t.unit] };
  if (arrow.DataType.isDate(t)) return { kind: 'date', unit: t.unit === arrow.DateUnit.DAY ? 'day' : 'ms' };
  if (arrow.DataType.isDictionary(t)) return { kind: 'dictionary', bitWidth: t.indices.bitWidth, signed: t.indices.isSigned };
  if (arrow.DataType.isList(t)) return { kind: 'list' };
  if (arrow.DataType.isLargeList(t)) return { kind: 'largeList' };
  if (arrow.DataType.isFixedSizeList(t)) return { kind: 'fixedSizeList', listSize: t.listSize };
  return { kind: 'other', name: String(t) };
}

/** Collects the plan of one batch or table and the buffers it names. */
class PlanBuilder {
  readonly buffers: Uint8Array[] = [];
  readonly dictionaries: ChunkPlan[][] = [];
  readonly #dictionaryIds = new Map<arrow.Vector, number>();

  #buffer(view: ArrayBufferView | null | undefined): number | undefined {
    if (!view) return undefined;
    this.buffers.push(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    return this.buffers.length - 1;
  }

  /** A dictionary vector, described once however many chunks share it. */
  #dictionary(v: arrow.Vector): number {
    let id = this.#dictionaryIds.get(v);
    if (id === undefined) {
      id = this.dictionaries.length;
      this.#dictionaryIds.set(v, id);
      this.dictionaries.push([]);
      this.dictionaries[id] = v.data.map((d) => this.chunk(d));
    }
    return id;
  }

  /**
   * One Data in apache-arrow's conventions: fixed-width values and offsets start at the chunk's
   * first row, bitmaps (validity, Bool values) at bit `data.offset`; a List's children are not
   * sliced (its offsets index them), a FixedSizeList's are.
   */
  chunk(data: arrow.Data): ChunkPlan {
    const type = typePlan(data.type);
    const c: ChunkPlan = { type, length: data.length };
    if (data.offset) c.offset = data.offset;
    if (type.kind !== 'null' && data.nullCount > 0) c.validity = this.#buffer(data.nullBitmap);
    switch (type.kind) {
      case 'null':
      case 'other':
        break;
      case 'utf8':
      case 'largeUtf8':
      case 'binary':
      case 'largeBinary':
        c.offsets = this.#buffer(data.valueOffsets);
        c.values = this.#buffer(data.values as ArrayBufferView | undefined);
        break;
      case 'list':
      case 'largeList':
      case 'fixedSizeList': {
        if (type.kind !== 'fixedSizeList') c.offsets = this.#buffer(data.valueOffsets);
        const child = data.children[0];
        if (child) c.child = this.chunk(child);
        break;
      }
      case 'dictionary':
        c.values = this.#buffer(data.values as ArrayBufferView | undefined);
        if (data.dictionary) c.dictionary = this.#dictionary(data.dictionary);
        break;
      default:
        c.values = this.#buffer(data.values as ArrayBufferView | undefined);
    }
    return c;
  }
}

function unknownColumnsOf(opts?: EncodeArrowOptions): UnknownColumns {
  const u = opts?.unknownColumns ?? 'error';
  if (u !== 'error' && u !== 'ignore') throw new TypeError(`unknownColumns must be 'error' or 'ignore', got ${String(u)}`);
  return u;
}

/** The plan JSON and buffers of `batch` (columns the schema does not name refused or left out). */
function describe(schema: Schema, batch: arrow.RecordBatch | arrow.Table, opts?: EncodeArrowOptions): [string, Uint8Array[]] {
  const unknownColumns = unknownColumnsOf(opts);
  if (!(batch instanceof arrow.RecordBatch) && !(batch instanceof arrow.Table)) {
    throw new TypeError('encodeArrowBatch takes an apache-arrow RecordBatch or Table');
  }
  const names = new Set(schema.fields.map((f) => f.name));
  const unknown = batch.schema.fields.map((f) => f.name).filter((n) => !names.has(n));
  if (unknown.length > 0 && unknownColumns === 'error') {
    const list = unknown.map((n) => `'${n}'`).join(', ');
    const what = unknown.length === 1 ? `column ${list} is not a field` : `columns ${list} are not fields`;
    const message = `${what} of dataset '${schema.id}' (pass { unknownColumns: 'ignore' } to skip them)`;
    throw new ArrowEncodeError('ERR_ENCODE_ARROW_COLUMN', message, unknown[0]);
  }
  if (batch.numRows * schema.recordSize > MAX_LENGTH) {
    throw new RangeError(`${batch.numRows} records of ${schema.recordSize} bytes exceed the largest Buffer (${MAX_LENGTH} bytes): encode fewer rows at a time`);
  }
  const b = new PlanBuilder();
  const columns: { name: string; chunks: ChunkPlan[] }[] = [];
  batch.schema.fields.forEach((f, i) => {
    const vector = batch.getChildAt(i);
    if (!names.has(f.name) || !vector) return;
    columns.push({ name: f.name, chunks: vector.data.map((d) => b.chunk(d)) });
  });
  const plan = { rows: batch.numRows, columns, dictionaries: b.dictionaries };
  return [JSON.stringify(plan), b.buffers];
}

function rethrow(err: unknown): never {
  if (err instanceof Error) {
    const e = err as Error & { code?: unknown; column?: unknown; row?: unknown };
    if (typeof e.code === 'string' && CODES.has(e.code)) {
      const column = typeof e.column === 'string' ? e.column : undefined;
      const row = typeof e.row === 'number' ? e.row : undefined;
      throw new ArrowEncodeError(e.code as ArrowEncodeErrorCode, e.message, column, row);
    }
  }
  throw err;
}

/** Below this many output bytes `encodeArrowBatchAsync` encodes on the calling thread. */
const SYNC_BYTES = 64 * 1024;

/**
 * Encodes every row of `batch` into `batch.numRows` records of `schema` (one Buffer, records back
 * to back) on the calling thread. Each column fills the field of its name; fields without a
 * column are zero; a null is zero bytes.
 * @throws ArrowEncodeError naming the column (and the row, for a refused value).
 * @example
 * const batch = await decodeRecords(schema, records);
 * encodeArrowBatch(schema, batch).equals(records); // true
 */
export function encodeArrowBatch(schema: Schema, batch: arrow.RecordBatch | arrow.Table, opts?: EncodeArrowOptions): Buffer {
  const [plan, buffers] = describe(schema, batch, opts);
  try {
    return native.encodeArrowColumns(schema.handle, plan, buffers);
  } catch (err) {
    rethrow(err);
  }
}

/**
 * `encodeArrowBatch` off the event loop: batches of 64 KiB of records or more are encoded by a
 * native task (the column buffers are copied once for it); smaller ones on the calling thread.
 */
export async function encodeArrowBatchAsync(schema: Schema, batch: arrow.RecordBatch | arrow.Table, opts?: EncodeArrowOptions): Promise<Buffer> {
  if (batch.numRows * schema.recordSize < SYNC_BYTES) return encodeArrowBatch(schema, batch, opts);
  const [plan, buffers] = describe(schema, batch, opts);
  try {
    return await native.encodeArrowColumnsAsync(schema.handle, plan, buffers);
  } catch (err) {
    rethrow(err);
  }
}
