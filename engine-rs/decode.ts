/**
 * Records → Arrow: decode a buffer of fixed-width records into an apache-arrow RecordBatch with one
 * native call. Presentation follows the reference's type mapping and column rules; the full
 * table is in docs/schema.md, "Decoding and presentation".
 */
import { BoundedMap } from '../lib/boundedMap';
import * as arrow from 'apache-arrow';
import type { NativeColumns, PlanColumn } from './arrowNative';
import { columnData, compileField, compileType, type CompiledType } from './arrowColumns';
import { native } from './native';
import type { Schema } from './schema';

/** How ipv4 / ipv6 columns are presented. */
export type AddressPresentation = 'text' | 'raw';

/** Options of a decode. */
export interface DecodeOptions {
  /**
   * `'text'` (default): inet text (`192.0.2.1`, RFC 5952 `2001:db8::1`). `'raw'`: ipv4 as
   * Uint32, ipv6 as FixedSizeBinary(16) in network order, for comparisons on the integer.
   */
  readonly addresses?: AddressPresentation;
  /**
   * Decode only these fields (schema field names, exact spelling), as columns **in the order
   * given**; the others are not read at all (no cost). Absent: every field, in schema order. An
   * empty list gives a batch of the records' row count and no columns. A name the schema lacks,
   * or one given twice, throws RecordDecodeError `ERR_DECODE_SCHEMA`.
   */
  readonly fields?: readonly string[];
}

/** Why a decode failed: `code` names the kind. */
export type DecodeErrorCode = 'ERR_DECODE_LENGTH' | 'ERR_DECODE_SCHEMA' | 'ERR_DECODE_TOO_LARGE';

/** A buffer of records that cannot be decoded (wrong length, unusable field, column over 2 GiB). */
export class RecordDecodeError extends Error {
  override readonly name = 'RecordDecodeError';
  /** The kind of failure. */
  readonly code: DecodeErrorCode;

  /** Wraps a failure of kind `code`. */
  constructor(code: DecodeErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Below this many bytes `decodeRecords` decodes on the calling thread: a task's hop costs more. */
const SYNC_BYTES = 64 * 1024;

/** Per schema and address presentation: the Arrow schema and the types to build columns with. */
interface Compiled {
  readonly schema: arrow.Schema;
  readonly types: readonly CompiledType[];
}

const compiled = new WeakMap<Schema, Map<AddressPresentation, Compiled>>();
/** Projected compilations per schema, by presentation and field list (bounded: callers reuse a few lists). */
const projected = new WeakMap<Schema, Map<string, Compiled>>();
const MAX_PROJECTIONS = 64;

function rethrow(err: unknown): never {
  if (err instanceof Error) {
    const code = (err as Error & { code?: unknown }).code;
    if (code === 'ERR_DECODE_LENGTH' || code === 'ERR_DECODE_SCHEMA' || code === 'ERR_DECODE_TOO_LARGE') {
      throw new RecordDecodeError(code, err.message);
    }
  }
  throw err;
}

function compile(schema: Schema, addresses: AddressPresentation): Compiled {
  let bySchema = compiled.get(schema);
  if (!bySchema) compiled.set(schema, (bySchema = new Map()));
  const hit = bySchema.get(addresses);
  if (hit) return hit;
  let plan: PlanColumn[];
  try {
    plan = JSON.parse(native.decodePlan(schema.handle, addresses === 'raw')) as PlanColumn[];
  } catch (err) {
    rethrow(err);
  }
  const types = plan.map((c) => compileType(c.type));
  const fields = plan.map((c, i) => compileField(c, types[i]!));
  const meta = new Map([
    ['hd.dataset', schema.id],
    ['hd.addresses', addresses],
  ]);
  const out = { schema: new arrow.Schema(fields, meta), types };
  bySchema.set(addresses, out);
  return out;
}

/** The full compilation cut to `fields` (in their order); unknown or repeated names throw. */
function compileProjected(schema: Schema, addresses: AddressPresentation, fields: readonly string[]): Compiled {
  let bySchema = projected.get(schema);
  if (!bySchema) projected.set(schema, (bySchema = new BoundedMap(MAX_PROJECTIONS)));
  const key = `${addresses}\u0000${fields.join('\u0000')}`;
  const hit = bySchema.get(key);
  if (hit) return hit;
  const full = compile(schema, addresses);
  const index = new Map(full.schema.fields.map((f, i) => [f.name, i]));
  const picked: number[] = [];
  for (const name of fields) {
    const i = typeof name === 'string' ? index.get(name) : undefined;
    if (i === undefined) throw new RecordDecodeError('ERR_DECODE_SCHEMA', `field '${String(name)}' cannot be decoded: dataset '${schema.id}' has no such field (its fields: ${full.schema.fields.map((f) => f.name).join(', ')})`);
    if (picked.includes(i)) throw new RecordDecodeError('ERR_DECODE_SCHEMA', `field '${name}' cannot be decoded: named twice in the projection`);
    picked.push(i);
  }
  const out = { schema: new arrow.Schema(picked.map((i) => full.schema.fields[i]!), full.schema.metadata), types: picked.map((i) => full.types[i]!) };
  bySchema.set(key, out);
  return out;
}

function compiledFor(schema: Schema, addresses: AddressPresentation, opts?: DecodeOptions): Compiled {
  const fields = opts?.fields;
  if (fields === undefined) return compile(schema, addresses);
  if (!Array.isArray(fields)) throw new TypeError('fields must be an array of field names');
  return compileProjected(schema, addresses, fields);
}

function addressesOf(opts?: DecodeOptions): AddressPresentation {
  const a = opts?.addresses ?? 'text';
  if (a !== 'text' && a !== 'raw') throw new TypeError(`addresses must be 'text' or 'raw', got ${String(a)}`);
  return a;
}

function toBatch(c: Compiled, cols: NativeColumns): arrow.RecordBatch {
  const children = cols.columns.map((col, i) => columnData(c.types[i]!, col));
  const data = arrow.makeData({ type: new arrow.Struct(c.schema.fields), length: cols.rows, nullCount: 0, children });
  return new arrow.RecordBatch(c.schema, data);
}

/**
 * Native columns (the decoder's, or a checked columnar body's: `engine-rs/columnar.ts`) as a
 * RecordBatch of exactly the Arrow schema `decodeRecords` gives for the same options.
 */
export function recordBatchOf(schema: Schema, cols: NativeColumns, opts?: DecodeOptions): arrow.RecordBatch {
  return toBatch(compiledFor(schema, addressesOf(opts), opts), cols);
}

/**
 * The Arrow schema a dataset decodes to: one field per schema field, in order (with `fields`: those,
 * in their order), each with
 * metadata naming its HD type (`hd.type`, and where they apply `hd.enum`, `hd.time_reference`,
 * `hd.time_unit`, `hd.array.element`, `hd.array.count`, `hd.precision`, `hd.scale`,
 * `hd.addresses`); schema metadata `hd.dataset` holds the dataset id.
 */
export function arrowSchemaFor(schema: Schema, opts?: DecodeOptions): arrow.Schema {
  return compiledFor(schema, addressesOf(opts), opts).schema;
}

/**
 * Decodes `records` (a whole number of `schema.recordSize`-byte records) on the calling thread.
 * Meant for small buffers; `decodeRecords` moves large ones off the event loop.
 * @throws RecordDecodeError when the length is not a multiple of the record size.
 */
export function decodeRecordsSync(schema: Schema, records: Uint8Array, opts?: DecodeOptions): arrow.RecordBatch {
  const addresses = addressesOf(opts);
  const c = compiledFor(schema, addresses, opts);
  let cols: NativeColumns;
  try {
    cols = native.decodeRecords(schema.handle, asBuffer(records), addresses === 'raw', opts?.fields);
  } catch (err) {
    rethrow(err);
  }
  return toBatch(c, cols);
}

/**
 * Decodes `records` into a RecordBatch. Buffers of 64 KiB or more are decoded by a native task
 * off the event loop (the records are copied once for it); smaller ones on the calling thread.
 * @example
 * const batch = await decodeRecords(schema, chunk.buf);
 * batch.getChild('proto')?.get(0); // 'tcp'
 */
export async function decodeRecords(schema: Schema, records: Uint8Array, opts?: DecodeOptions): Promise<arrow.RecordBatch> {
  if (records.byteLength < SYNC_BYTES) return decodeRecordsSync(schema, records, opts);
  const addresses = addressesOf(opts);
  const c = compiledFor(schema, addresses, opts);
  let cols: NativeColumns;
  try {
    cols = await native.decodeRecordsAsync(schema.handle, asBuffer(records), addresses === 'raw', opts?.fields);
  } catch (err) {
    rethrow(err);
  }
  return toBatch(c, cols);
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}
