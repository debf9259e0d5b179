/**
 * Arrow result columns on the PostgreSQL wire: the type OID and typmod of each column and its
 * values in text format (and binary for the fixed-width scalar types), following the reference's
 * type mapping. Addresses (ipv4 / ipv6) are inet text and go out as `text` (OID 25), as enum labels
 * and chess notation do: the result of a statement does not say which text column holds addresses,
 * and every driver reads text (docs/sql.md, "Result names, types and protocol details").
 */
import * as arrow from 'apache-arrow';
import { pgNameOf } from '../resultNames';
import type { PgField } from './backend';
import { arrayBinary, dateBinary, dateFromBinary, numericBinary, numericFromBinary, PgBinaryError, timeBinary, timestampBinary, timestampFromBinary } from './pgBinary';

/** PostgreSQL type OIDs used here. */
export const OID = {
  bool: 16, bytea: 17, int8: 20, int2: 21, int4: 23, text: 25, float4: 700, float8: 701, numeric: 1700, date: 1082, time: 1083, timestamp: 1114, timestamptz: 1184,
  boolArray: 1000, byteaArray: 1001, int2Array: 1005, int4Array: 1007, textArray: 1009, int8Array: 1016, float4Array: 1021, float8Array: 1022,
  timestampArray: 1115, dateArray: 1182, timeArray: 1183, timestamptzArray: 1185, numericArray: 1231,
} as const;

const ARRAY_OF: Readonly<Record<number, number>> = {
  [OID.bool]: OID.boolArray, [OID.bytea]: OID.byteaArray, [OID.int2]: OID.int2Array, [OID.int4]: OID.int4Array, [OID.int8]: OID.int8Array, [OID.text]: OID.textArray,
  [OID.float4]: OID.float4Array, [OID.float8]: OID.float8Array, [OID.numeric]: OID.numericArray, [OID.date]: OID.dateArray, [OID.time]: OID.timeArray,
  [OID.timestamp]: OID.timestampArray, [OID.timestamptz]: OID.timestamptzArray,
};

/** PostgreSQL's largest numeric precision a typmod states here: DuckDB's DECIMAL goes to 38; 39 marks a widened HUGEINT / UBIGINT (numeric without a typmod). */
const MAX_TYPMOD_PRECISION = 38;

/** The OID and wire size of an Arrow type. */
export function oidOf(t: arrow.DataType): { oid: number; size: number } {
  if (arrow.DataType.isInt(t)) {
    const w = t.bitWidth + (t.isSigned ? 0 : 1); // unsigned widens (the reference: uint32 → bigint, uint64 → numeric)
    if (w <= 16) return { oid: OID.int2, size: 2 };
    if (w <= 32) return { oid: OID.int4, size: 4 };
    if (w <= 64) return { oid: OID.int8, size: 8 };
    return { oid: OID.numeric, size: -1 };
  }
  if (arrow.DataType.isFloat(t)) return t.precision === arrow.Precision.SINGLE ? { oid: OID.float4, size: 4 } : { oid: OID.float8, size: 8 };
  if (arrow.DataType.isBool(t)) return { oid: OID.bool, size: 1 };
  if (arrow.DataType.isDecimal(t)) return { oid: OID.numeric, size: -1 };
  if (arrow.DataType.isBinary(t) || arrow.DataType.isFixedSizeBinary(t) || arrow.DataType.isLargeBinary(t)) return { oid: OID.bytea, size: -1 };
  if (arrow.DataType.isDate(t)) return { oid: OID.date, size: 4 };
  if (arrow.DataType.isTimestamp(t)) return { oid: t.timezone ? OID.timestamptz : OID.timestamp, size: 8 };
  if (arrow.DataType.isTime(t)) return { oid: OID.time, size: 8 };
  if (arrow.DataType.isList(t) || arrow.DataType.isFixedSizeList(t)) {
    // A list of lists is one multi-dimensional array of the innermost element, as in PostgreSQL.
    let inner = (t.children[0] as arrow.Field).type;
    while (arrow.DataType.isList(inner) || arrow.DataType.isFixedSizeList(inner)) inner = (inner.children[0] as arrow.Field).type;
    return { oid: ARRAY_OF[oidOf(inner).oid] ?? OID.textArray, size: -1 };
  }
  return { oid: OID.text, size: -1 }; // Utf8, Dictionary (enum labels), inet text, anything else as its text
}

/**
 * The type modifier RowDescription states: `numeric(p,s)` as PostgreSQL encodes it
 * (`(p << 16 | s) + 4`), for a column and for an array of it; -1 (none) for everything else.
 */
export function typmodOf(t: arrow.DataType): number {
  if (arrow.DataType.isDecimal(t)) return t.precision <= MAX_TYPMOD_PRECISION ? ((t.precision << 16) | t.scale) + 4 : -1;
  if (arrow.DataType.isList(t) || arrow.DataType.isFixedSizeList(t)) return typmodOf((t.children[0] as arrow.Field).type);
  return -1;
}

/** RowDescription fields of a result schema; `formats` per column (one entry applies to all). */
export function fieldsOf(schema: arrow.Schema, formats: readonly number[] = []): PgField[] {
  return schema.fields.map((f, i) => {
    const { oid, size } = oidOf(f.type);
    const format = (formats.length === 1 ? formats[0] : formats[i]) === 1 ? 1 : 0;
    return { name: pgNameOf(f), typeOid: oid, typeSize: size, typeModifier: typmodOf(f.type), format };
  });
}

function decimalText(v: unknown, scale: number): string {
  // Arrow decimals are little-endian 32-bit words in two's complement (4 words: 128 bits, 8: 256).
  const words = v as Uint32Array;
  let n = 0n;
  for (let i = words.length - 1; i >= 0; i--) n = (n << 32n) | BigInt(words[i] as number);
  const bits = BigInt(words.length * 32);
  if (n >> (bits - 1n)) n -= 1n << bits;
  if (scale === 0) return n.toString();
  const neg = n < 0n;
  const digits = (neg ? -n : n).toString().padStart(scale + 1, '0');
  return `${neg ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/** Fractional seconds as PostgreSQL prints them: up to 6 digits, trailing zeros dropped, none for whole seconds. */
function fraction(us: number): string {
  return us === 0 ? '' : `.${pad(us, 6).replace(/0+$/, '')}`;
}

/** `ms`: Unix milliseconds, a fraction carrying the microseconds (Arrow's timestamps read so). */
function timestampText(ms: number, withZone: boolean): string {
  const us = Math.round(ms * 1000);
  const wholeMs = Math.floor(us / 1000);
  const d = new Date(wholeMs);
  const frac = fraction(((us % 1_000_000) + 1_000_000) % 1_000_000);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac}${withZone ? '+00' : ''}`;
}

/** Microseconds since midnight of a time value (Arrow reads Time64 as a bigint in the type's unit). */
function timeMicros(t: arrow.DataType, v: unknown): bigint {
  const n = typeof v === 'bigint' ? v : BigInt(Math.round(Number(v)));
  switch ((t as arrow.Time).unit) {
    case arrow.TimeUnit.SECOND:
      return n * 1_000_000n;
    case arrow.TimeUnit.MILLISECOND:
      return n * 1000n;
    case arrow.TimeUnit.NANOSECOND:
      return n / 1000n;
    default:
      return n;
  }
}

function timeText(us: bigint): string {
  const s = Number(us / 1_000_000n);
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}${fraction(Number(us % 1_000_000n))}`;
}

/** An array element as PostgreSQL's array output writes it: quoted when empty, NULL-like or holding a space, brace, quote, comma or backslash. */
function arrayElementText(s: string, nested: boolean): string {
  if (nested) return s;
  return /^[^{}",\\\s]+$/.test(s) && s.toUpperCase() !== 'NULL' ? s : `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The text form of one value of type `t` (null stays null). */
export function textOf(t: arrow.DataType, v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (arrow.DataType.isBool(t)) return v ? 't' : 'f';
  if (arrow.DataType.isDecimal(t)) return decimalText(v, t.scale);
  if (arrow.DataType.isFloat(t)) return Number.isNaN(v as number) ? 'NaN' : String(v);
  if (arrow.DataType.isBinary(t) || arrow.DataType.isFixedSizeBinary(t) || arrow.DataType.isLargeBinary(t)) return `\\x${Buffer.from(v as Uint8Array).toString('hex')}`;
  if (arrow.DataType.isTimestamp(t) || arrow.DataType.isDate(t)) {
    const ms = Number(v instanceof Date ? v.getTime() : v);
    return arrow.DataType.isDate(t) ? timestampText(ms, false).slice(0, 10) : timestampText(ms, Boolean((t as arrow.Timestamp).timezone));
  }
  if (arrow.DataType.isTime(t)) return timeText(timeMicros(t, v));
  if (arrow.DataType.isList(t) || arrow.DataType.isFixedSizeList(t)) {
    const ct = (t.children[0] as arrow.Field).type;
    const nested = arrow.DataType.isList(ct) || arrow.DataType.isFixedSizeList(ct);
    const items = [...(v as Iterable<unknown>)].map((x) => {
      const s = textOf(ct, x);
      return s === null ? 'NULL' : arrayElementText(s, nested);
    });
    return `{${items.join(',')}}`;
  }
  return String(v);
}

const ELEMENT_OF: Readonly<Record<number, number>> = Object.fromEntries(Object.entries(ARRAY_OF).map(([el, arr]) => [arr, Number(el)]));

function msOf(v: unknown): number {
  return Number(v instanceof Date ? v.getTime() : v);
}

/** The binary form of one value, for the types that have one here; undefined where none. */
export function binaryOf(oid: number, t: arrow.DataType, v: unknown): Buffer | undefined {
  const b = Buffer.alloc(8);
  const element = ELEMENT_OF[oid];
  if (element !== undefined && (arrow.DataType.isList(t) || arrow.DataType.isFixedSizeList(t))) {
    const ct = (t.children[0] as arrow.Field).type;
    if (arrow.DataType.isList(ct) || arrow.DataType.isFixedSizeList(ct)) return undefined; // multi-dimensional: text only
    const items: (Buffer | null)[] = [];
    for (const x of v as Iterable<unknown>) {
      if (x === null || x === undefined) items.push(null);
      else {
        const e = binaryOf(element, ct, x);
        if (!e) return undefined;
        items.push(e);
      }
    }
    return arrayBinary(element, items);
  }
  switch (oid) {
    case OID.timestamp:
    case OID.timestamptz:
      return timestampBinary(msOf(v));
    case OID.date:
      return dateBinary(msOf(v));
    case OID.time:
      return arrow.DataType.isTime(t) ? timeBinary(timeMicros(t, v)) : undefined;
    case OID.numeric:
      return numericBinary(textOf(t, v) ?? '0');
    case OID.int2:
      b.writeInt16BE(Number(v));
      return b.subarray(0, 2);
    case OID.int4:
      b.writeInt32BE(Number(v));
      return b.subarray(0, 4);
    case OID.int8:
      b.writeBigInt64BE(BigInt(v as number | bigint));
      return b;
    case OID.float4:
      b.writeFloatBE(Number(v));
      return b.subarray(0, 4);
    case OID.float8:
      b.writeDoubleBE(Number(v));
      return b;
    case OID.bool:
      return Buffer.from([v ? 1 : 0]);
    case OID.text:
      return Buffer.from(textOf(t, v) ?? '', 'utf8');
    case OID.bytea:
      return Buffer.from(v as Uint8Array);
    default:
      return undefined;
  }
}

/**
 * A bind parameter's value from its wire bytes: text, or binary for int2/4/8, float4/8, bool,
 * numeric, timestamp/timestamptz and date (as text DuckDB casts); other binary values as UTF-8.
 * @throws PgBinaryError when binary bytes do not fit their type
 */
export function paramOf(raw: Buffer | null, format: number, oid: number): null | boolean | number | bigint | string {
  if (raw === null) return null;
  if (format === 1) {
    const fixed = (n: number, what: string): void => {
      if (raw.length !== n) throw new PgBinaryError(`binary ${what} parameter must be ${n} bytes, got ${raw.length}`);
    };
    switch (oid) {
      case OID.int2:
        fixed(2, 'int2');
        return raw.readInt16BE(0);
      case OID.int4:
        fixed(4, 'int4');
        return raw.readInt32BE(0);
      case OID.int8: {
        fixed(8, 'int8');
        const n = raw.readBigInt64BE(0);
        return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
      }
      case OID.float4:
        fixed(4, 'float4');
        return raw.readFloatBE(0);
      case OID.float8:
        fixed(8, 'float8');
        return raw.readDoubleBE(0);
      case OID.bool:
        fixed(1, 'bool');
        return raw[0] !== 0;
      case OID.numeric: {
        const s = numericFromBinary(raw);
        return s === 'NaN' ? s : Number(s);
      }
      case OID.timestamp:
      case OID.timestamptz:
        return timestampFromBinary(raw, oid === OID.timestamptz);
      case OID.date:
        return dateFromBinary(raw);
      default:
        return raw.toString('utf8');
    }
  }
  const s = raw.toString('utf8');
  // PostgreSQL's boolean input: t/true/yes/on/1 (pgjdbc sends TRUE/FALSE), any case.
  if (oid === OID.bool) return /^\s*(t|true|y|yes|on|1)\s*$/i.test(s);
  // Untyped (0) and integer parameters that look like integers bind as integers, so `ts >= $1` compares numbers.
  if ((oid === 0 || oid === OID.int2 || oid === OID.int4 || oid === OID.int8) && /^-?\d{1,30}$/.test(s)) {
    const n = BigInt(s);
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  }
  if ((oid === OID.float4 || oid === OID.float8 || oid === OID.numeric) && s.trim() !== '' && !Number.isNaN(Number(s))) return Number(s);
  return s;
}
