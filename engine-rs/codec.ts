/**
 * The record codec: values → packed fixed-width records, by the dataset schema. Single records go
 * through `convertRecordToBinary` (the reference SDK call); bulk ingest goes through
 * `parseNdjson` / `parseCsv`, one native call per block.
 */
import { native, type NativeParsed } from './native';
import { Schema, type SchemaJson } from './schema';

/** A value a field refused. */
export interface FieldError {
  readonly field: string;
  readonly reason: string;
}

/** A rejected line (NDJSON) or row (CSV): left out of the records, the lines around it kept. */
export interface LineError {
  readonly line: number;
  /** The field to blame, when one is. */
  readonly field?: string;
  readonly reason: string;
}

/** One parsed block: `count` records back to back in `records`, plus the lines left out. */
export interface ParsedBlock {
  readonly records: Buffer;
  readonly count: number;
  readonly errors: readonly LineError[];
  /** Lines the block held (blank and rejected ones included): the next block starts at `firstLine + lines`. */
  readonly lines: number;
  /** CSV only: the column names, when the block's first row was read as the header. */
  readonly header?: readonly string[];
}

/** Records of one time window. */
export interface TimeWindow {
  /** Window start, Unix seconds (a multiple of the interval). */
  readonly start: number;
  readonly count: number;
  /** A copy of the window's records, in their original order. */
  readonly records: Buffer;
}

/** How to read a CSV block. */
export interface CsvOptions {
  /** Column names; when absent, the block's first row is the header. */
  header?: readonly string[];
  /** One ASCII character; default ','. */
  delimiter?: string;
  /** Number of the block's first line; default 1. */
  firstLine?: number;
}

/** Blocks smaller than this are parsed on the calling thread: a task costs more than it saves. */
const SYNC_LIMIT = 64 * 1024;

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

function checkLine(firstLine: number): number {
  if (!Number.isSafeInteger(firstLine) || firstLine < 0) throw new RangeError(`firstLine must be a non-negative integer, got ${firstLine}`);
  return firstLine;
}

function csvArgs(opts: CsvOptions): [number, string | null, string] {
  const delimiter = opts.delimiter ?? ',';
  if (opts.header?.some((h) => h.includes('\n'))) throw new RangeError('CSV header names cannot contain line breaks');
  return [checkLine(opts.firstLine ?? 1), opts.header ? opts.header.join('\n') : null, delimiter];
}

function block(p: NativeParsed): ParsedBlock {
  return p;
}

/**
 * Encodes values into records of one dataset schema. Without a schema (like the reference's
 * client before `load_dataset_schema`) `convertRecordToBinary` returns an empty buffer.
 */
export class RecordCodec {
  #schema: Schema | null;
  #lastErrors: readonly FieldError[] = [];

  /** A codec for `schema` (a `Schema`, or schema JSON to validate), or none yet. */
  constructor(schema: Schema | SchemaJson | string | null = null) {
    this.#schema = schema === null || schema instanceof Schema ? schema : Schema.parse(schema);
  }

  /** The loaded schema, or null. */
  get schema(): Schema | null {
    return this.#schema;
  }

  /** Loads (replaces) the dataset schema; required before encoding. */
  loadDatasetSchema(schema: Schema | SchemaJson | string): void {
    this.#schema = schema instanceof Schema ? schema : Schema.parse(schema);
  }

  /** Values refused by the last `convertRecordToBinary` call (their fields were left zero). */
  get lastErrors(): readonly FieldError[] {
    return this.#lastErrors;
  }

  #need(): Schema {
    if (!this.#schema) throw Object.assign(new Error('no dataset schema loaded: call loadDatasetSchema first'), { code: 'ERR_NO_SCHEMA' });
    return this.#schema;
  }

  /**
   * One record and the values it refused. Each value (a string, interpreted by the schema) is
   * written into its field; keys the schema does not name are skipped; a refused value leaves its
   * field zero.
   */
  encodeRecord(map: Readonly<Record<string, string>> | ReadonlyMap<string, string>): { record: Buffer; errors: readonly FieldError[] } {
    if (!this.#schema) return { record: Buffer.alloc(0), errors: [] };
    const obj = map instanceof Map ? Object.fromEntries(map) : (map as Record<string, string>);
    return native.codecConvertRecord(this.#schema.handle, obj);
  }

  /**
   * The reference `convert_record_to_binary`: a fresh Buffer per call (the reference reuses one
   * thread-local buffer), empty when no schema is loaded. Refused values are listed in
   * `lastErrors`.
   */
  convertRecordToBinary(map: Readonly<Record<string, string>> | ReadonlyMap<string, string>): Buffer {
    const { record, errors } = this.encodeRecord(map);
    this.#lastErrors = errors;
    return record;
  }

  /**
   * NDJSON block → records, off the event loop for blocks of 64 KiB and more. The block must end
   * on a line boundary (carry the unfinished tail to the next block); lines are numbered from
   * `firstLine`.
   */
  async parseNdjson(buf: Uint8Array, firstLine = 1): Promise<ParsedBlock> {
    const s = this.#need();
    const b = asBuffer(buf);
    if (b.length < SYNC_LIMIT) return block(native.codecParseNdjson(s.handle, b, checkLine(firstLine)));
    return block(await native.codecParseNdjsonAsync(s.handle, b, checkLine(firstLine)));
  }

  /** `parseNdjson` on the calling thread. */
  parseNdjsonSync(buf: Uint8Array, firstLine = 1): ParsedBlock {
    return block(native.codecParseNdjson(this.#need().handle, asBuffer(buf), checkLine(firstLine)));
  }

  /** CSV block (RFC 4180) → records, off the event loop for blocks of 64 KiB and more. */
  async parseCsv(buf: Uint8Array, opts: CsvOptions = {}): Promise<ParsedBlock> {
    const s = this.#need();
    const b = asBuffer(buf);
    const [first, header, delimiter] = csvArgs(opts);
    if (b.length < SYNC_LIMIT) return block(native.codecParseCsv(s.handle, b, first, header, delimiter));
    return block(await native.codecParseCsvAsync(s.handle, b, first, header, delimiter));
  }

  /** `parseCsv` on the calling thread. */
  parseCsvSync(buf: Uint8Array, opts: CsvOptions = {}): ParsedBlock {
    const [first, header, delimiter] = csvArgs(opts);
    return block(native.codecParseCsv(this.#need().handle, asBuffer(buf), first, header, delimiter));
  }

  /**
   * Splits records into time windows of `interval` seconds (default: the schema's
   * time_index_interval) by the schema's time field, windows in order of first appearance.
   */
  timeWindows(records: Uint8Array, interval = 0): TimeWindow[] {
    return native.codecTimeWindows(this.#need().handle, asBuffer(records), interval);
  }
}
