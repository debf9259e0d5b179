/**
 * Dataset schemas: the fixed-width record layout of one dataset, validated natively. The JSON
 * format is described in docs/schema.md and published as docs/dataset-schema.schema.json.
 */
import { native, type SchemaHandle } from './native';

/** Every HD type a field can have. */
export type FieldTypeName =
  | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'uint128' | 'uint256'
  | 'int8' | 'int16' | 'int32' | 'int64' | 'int128' | 'int256'
  | 'numeric' | 'float' | 'double' | 'boolean' | 'bytes' | 'string' | 'timestamp'
  | 'ipv4' | 'ipv6' | 'blob' | 'chess_move' | 'chess_fen';

/** Unit of a delta-compressed time field. */
export type TimeUnitName = 's' | 'ms' | 'us' | 'ns';

/** One field of the record layout, as validated. */
export interface FieldInfo {
  readonly name: string;
  readonly offset: number;
  readonly size: number;
  readonly type: FieldTypeName;
  /** Enumeration the (unsigned integer) field carries. */
  readonly enum?: string;
  readonly precision?: number;
  readonly scale?: number;
  /** The stored integer is a delta from this timestamp field, in `unit`. */
  readonly timeReference?: { readonly field: string; readonly unit: TimeUnitName };
  /** Array declared on a bytes field. */
  readonly array?: { readonly element: FieldTypeName; readonly count: number; readonly enum?: string };
  /** True when the field shares bytes with another field (declared `"overlay": true`). */
  readonly overlay?: boolean;
  /** The schema's `description` of the field (the SQL catalog's column comment). */
  readonly description?: string;
}

/** An enumeration: label → code (bigint only where a code exceeds 2^53 - 1). */
export interface EnumInfo {
  readonly values: Readonly<Record<string, number | bigint>>;
  /** Label shown for a code the enumeration does not define. */
  readonly defaultLabel: string;
}

/** The schema JSON document (docs/schema.md). Codes past 2^53 may be bigints or digit strings. */
export interface SchemaJson {
  $schema?: string;
  id: string;
  name?: string;
  description?: string;
  record_size: number;
  byte_order?: 'little' | 'big';
  time_field: string;
  time_index_interval?: number;
  enums?: Record<string, { values: Record<string, number | bigint | string>; default_label?: string; description?: string }>;
  fields: {
    name: string;
    offset: number;
    size: number;
    type: FieldTypeName;
    enum?: string;
    precision?: number;
    scale?: number;
    time_reference?: { field: string; unit: TimeUnitName };
    array?: { element: FieldTypeName; count: number; enum?: string };
    overlay?: boolean;
    description?: string;
  }[];
}

/** One schema problem: where (`fields[3].size`, `enums.proto.values.tcp`) and what. */
export interface SchemaIssue {
  readonly path: string;
  readonly message: string;
}

/** A schema was refused; `issues` lists every problem found, each naming its field. */
export class SchemaError extends Error {
  /** Stable error code. */
  readonly code = 'ERR_SCHEMA';
  readonly issues: readonly SchemaIssue[];

  constructor(issues: readonly SchemaIssue[]) {
    const lines = issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message));
    super(`invalid dataset schema (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n  ${lines.join('\n  ')}`);
    this.name = 'SchemaError';
    this.issues = issues;
  }
}

/** JSON text of a schema object; bigint codes become exact JSON integers. */
function stringify(json: object): string {
  const tag = '\u0000bigint:';
  return JSON.stringify(json, (_k, v: unknown) => (typeof v === 'bigint' ? `${tag}${v}` : v)).replace(
    /"\\u0000bigint:(-?\d+)"/g,
    '$1',
  );
}

function isIssueList(v: unknown): v is SchemaIssue[] {
  return Array.isArray(v) && v.every((i) => typeof i === 'object' && i !== null && 'path' in i && 'message' in i);
}

/** The `description` texts of a schema document: the dataset's and each field's by name. */
interface Descriptions {
  readonly dataset?: string;
  readonly fields: ReadonlyMap<string, string>;
}

function descriptionsOf(doc: unknown): Descriptions {
  const d = doc as { description?: unknown; fields?: unknown } | null | undefined;
  const fields = new Map<string, string>();
  if (Array.isArray(d?.fields)) for (const f of d.fields as { name?: unknown; description?: unknown }[]) if (typeof f?.name === 'string' && typeof f.description === 'string') fields.set(f.name, f.description);
  return { ...(typeof d?.description === 'string' && { dataset: d.description }), fields };
}

/** JSON text already accepted by the engine, parsed for its descriptions only (numbers may lose precision). */
function parseLoosely(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Canonical JSON as schemaDescribe writes it. */
interface Canonical {
  id: string;
  description?: string;
  name: string;
  record_size: number;
  byte_order: 'little' | 'big';
  time_field: string;
  time_index_interval: number;
  enums: Record<string, { values: Record<string, number | string>; default_label: string }>;
  fields: SchemaJson['fields'];
}

/** A validated dataset schema. Build one with `Schema.parse`. */
export class Schema {
  /** Dataset id: the SQL table name. */
  readonly id: string;
  /** Human-readable name (defaults to the id). */
  readonly name: string;
  readonly recordSize: number;
  readonly byteOrder: 'little' | 'big';
  /** Name of the timestamp field that time-indexes the dataset. */
  readonly timeField: string;
  /** Batch width in seconds. */
  readonly timeIndexInterval: number;
  readonly fields: readonly FieldInfo[];
  readonly enums: Readonly<Record<string, EnumInfo>>;
  /** The schema's `description` (the SQL catalog's table comment). */
  readonly description?: string;
  /** The natively compiled schema, for the codec functions. Not public API. */
  readonly handle: SchemaHandle;
  readonly #canonical: Canonical;

  private constructor(handle: SchemaHandle, docs: Descriptions = descriptionsOf(undefined)) {
    this.handle = handle;
    const c = JSON.parse(native.schemaDescribe(handle)) as Canonical;
    // Descriptions are documentation the engine does not keep: carried here, and in toJSON().
    if (docs.dataset !== undefined) c.description = docs.dataset;
    for (const f of c.fields) if (docs.fields.has(f.name)) f.description = docs.fields.get(f.name);
    this.#canonical = c;
    if (docs.dataset !== undefined) this.description = docs.dataset;
    this.id = c.id;
    this.name = c.name;
    this.recordSize = c.record_size;
    this.byteOrder = c.byte_order;
    this.timeField = c.time_field;
    this.timeIndexInterval = c.time_index_interval;
    const enums: Record<string, EnumInfo> = {};
    for (const [name, e] of Object.entries(c.enums)) {
      const values: Record<string, number | bigint> = {};
      for (const [label, code] of Object.entries(e.values)) values[label] = typeof code === 'string' ? BigInt(code) : code;
      enums[name] = Object.freeze({ values: Object.freeze(values), defaultLabel: e.default_label });
    }
    this.enums = Object.freeze(enums);
    this.fields = Object.freeze(
      c.fields.map((f): FieldInfo => {
        const info: FieldInfo = {
          name: f.name,
          offset: f.offset,
          size: f.size,
          type: f.type,
          ...(f.enum !== undefined && { enum: f.enum }),
          ...(f.precision !== undefined && { precision: f.precision, scale: f.scale ?? 0 }),
          ...(f.time_reference && { timeReference: { ...f.time_reference } }),
          ...(f.array && { array: { ...f.array } }),
          ...(f.overlay && { overlay: true }),
          ...(f.description !== undefined && { description: f.description }),
        };
        return Object.freeze(info);
      }),
    );
  }

  /**
   * Validates schema JSON (text or an object; enum codes may be bigints) and compiles it.
   * @throws SchemaError listing every problem, each with its path.
   */
  static parse(json: string | SchemaJson | object): Schema {
    const text = typeof json === 'string' ? json : stringify(json);
    let handle: SchemaHandle;
    try {
      handle = native.schemaCompile(text);
    } catch (err) {
      const e = err as { code?: unknown; issues?: unknown };
      if (e.code === 'ERR_SCHEMA' && isIssueList(e.issues)) throw new SchemaError(e.issues);
      throw err;
    }
    return new Schema(handle, descriptionsOf(typeof json === 'string' ? parseLoosely(json) : json));
  }

  /** The field of a name, if any. */
  field(name: string): FieldInfo | undefined {
    return this.fields.find((f) => f.name === name);
  }

  /** Canonical schema JSON (every default spelled out; codes past 2^53 as digit strings). */
  toJSON(): SchemaJson {
    return JSON.parse(JSON.stringify(this.#canonical)) as SchemaJson;
  }
}
