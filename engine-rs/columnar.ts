/**
 * Columnar query results (docs/hdwp.md "columns", docs/query.md `result_format`): a Storage Node
 * turns a step's matching records into the Arrow-layout columns a client asked for, in engine-rs
 * off the event loop ({@link encodeColumnar}); the client checks the body against the columns it
 * asked for and wraps the buffers in a RecordBatch ({@link readColumnar}) — the same Arrow schema
 * and values `decodeRecords` gives for the same records, with no per-record work on either side.
 */
import type * as arrow from 'apache-arrow';
import type { NativeColumns } from './arrowNative';
import { RecordDecodeError, recordBatchOf, type AddressPresentation } from './decode';
import { native } from './native';
import type { Schema } from './schema';

/** Why a columnar body was refused. */
export type ColumnarErrorCode = 'ERR_COLUMNAR_TRUNCATED' | 'ERR_COLUMNAR_UNSUPPORTED' | 'ERR_COLUMNAR_PROJECTION' | 'ERR_COLUMNAR_SHAPE' | 'ERR_COLUMNAR_TRAILING';

const CODES: readonly ColumnarErrorCode[] = ['ERR_COLUMNAR_TRUNCATED', 'ERR_COLUMNAR_UNSUPPORTED', 'ERR_COLUMNAR_PROJECTION', 'ERR_COLUMNAR_SHAPE', 'ERR_COLUMNAR_TRAILING'];

/** A malformed columnar body (truncated, unknown version, other columns than asked, buffers that do not fit their type). */
export class ColumnarFrameError extends Error {
  override readonly name = 'ColumnarFrameError';
  readonly code: ColumnarErrorCode;

  constructor(code: ColumnarErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Bodies below this size are read on the calling thread. Checking a body costs about 0.2 ms per
 * MiB (824 KB of flows columns: 0.14-0.29 ms), less than a task's hop (about 0.4 ms on a quiet
 * machine, and up to 18 ms on two cores shared with busy Storage Nodes, which held a 400 000-row
 * answer's first row back by tens of ms): every columns frame a Storage Node sends (pieces of
 * 1 MiB of records) is below it, and the event loop is held at most about half a millisecond.
 */
const SYNC_BYTES = 2 * 1024 * 1024;

/** Records below this many bytes are encoded on the calling thread (a Q3-like step's few matches): a task's hop costs more than the encode. */
const SYNC_ENCODE_BYTES = 256 * 1024;

/** What the columns are: field names (in column order) and the address presentation. */
export interface ColumnarOptions {
  /** Schema field names, in column order. */
  readonly fields: readonly string[];
  readonly addresses?: AddressPresentation;
}

function indices(schema: Schema, fields: readonly string[]): number[] {
  const at = new Map(schema.fields.map((f, i) => [f.name, i]));
  return fields.map((name) => {
    const i = at.get(name);
    if (i === undefined) throw new RecordDecodeError('ERR_DECODE_SCHEMA', `field '${name}' cannot be decoded: dataset '${schema.id}' has no such field`);
    return i;
  });
}

function rethrow(err: unknown): never {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && (CODES as readonly string[]).includes(code)) throw new ColumnarFrameError(code as ColumnarErrorCode, (err as Error).message);
  if (code === 'ERR_DECODE_LENGTH' || code === 'ERR_DECODE_SCHEMA' || code === 'ERR_DECODE_TOO_LARGE') throw new RecordDecodeError(code, (err as Error).message);
  throw err;
}

/**
 * The columnar body of `records` (whole records of the schema): the columns of `opts.fields`, after
 * ANDing `mask` (one record long: a field the caller may not see reads as zeros) into a copy. One
 * native task off the event loop, or on this thread for a few records (below 256 KiB).
 */
export async function encodeColumnar(schema: Schema, records: Buffer, opts: ColumnarOptions & { readonly mask?: Uint8Array }): Promise<Buffer> {
  const mask = opts.mask === undefined ? null : Buffer.from(opts.mask.buffer, opts.mask.byteOffset, opts.mask.byteLength);
  const ix = indices(schema, opts.fields);
  const raw = opts.addresses === 'raw';
  try {
    return records.byteLength < SYNC_ENCODE_BYTES ? native.columnarEncode(schema.handle, records, ix, raw, mask) : await native.columnarEncodeAsync(schema.handle, records, ix, raw, mask);
  } catch (err) {
    rethrow(err);
  }
}

/**
 * Checks a columnar body (every length, offset, dictionary index and UTF-8 sequence against the
 * columns of `opts.fields`, and `rows` when given) and returns it as a RecordBatch whose schema is
 * `arrowSchemaFor(schema, { fields })`. Throws {@link ColumnarFrameError} for a malformed body.
 */
export async function readColumnar(schema: Schema, body: Uint8Array, opts: ColumnarOptions & { readonly rows?: number }): Promise<arrow.RecordBatch> {
  const ix = indices(schema, opts.fields);
  const raw = opts.addresses === 'raw';
  let cols: NativeColumns;
  try {
    cols = body.byteLength < SYNC_BYTES ? native.columnarRead(schema.handle, ix, raw, opts.rows ?? -1, body) : await native.columnarReadAsync(schema.handle, ix, raw, opts.rows ?? -1, body);
  } catch (err) {
    rethrow(err);
  }
  return recordBatchOf(schema, cols, { fields: opts.fields, ...(opts.addresses ? { addresses: opts.addresses } : {}) });
}
