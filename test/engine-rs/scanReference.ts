/**
 * A TypeScript reference for the scan kernel tests: a record layout holding every HD type, a
 * writer and a reader of field bytes written here with DataView and BigInt (no engine code),
 * value texts as docs/query.md defines them, and the meaning of every FilterOp evaluated on the
 * decoded values. The kernel's answers are compared with this.
 */
import type { FieldTypeName, SchemaJson } from '../../engine-rs/index';

/** One field of the reference layout. */
export interface RefField {
  readonly name: string;
  readonly type: FieldTypeName;
  readonly size: number;
  readonly offset: number;
  readonly scale?: number;
  readonly precision?: number;
  readonly enum?: string;
  readonly array?: { readonly element: FieldTypeName; readonly count: number; readonly size: number };
}

/** A decoded value: integers (numerics unscaled, addresses, moves) as bigint, floats as number. */
export type Val = bigint | number | boolean | Buffer;

export type Order = 'little' | 'big';

/** Fields in order; offsets leave a byte between fields so no field is aligned by accident. */
const SPECS: Omit<RefField, 'offset'>[] = [
  { name: 'id', type: 'bytes', size: 4 },
  { name: 'ts', type: 'timestamp', size: 8 },
  ...([8, 16, 32, 64, 128, 256] as const).flatMap((b) => [
    { name: `u${b}`, type: `uint${b}` as FieldTypeName, size: b / 8 },
    { name: `i${b}`, type: `int${b}` as FieldTypeName, size: b / 8 },
  ]),
  { name: 'n4', type: 'numeric', size: 4, precision: 9, scale: 2 },
  { name: 'n8', type: 'numeric', size: 8, precision: 18, scale: 4 },
  { name: 'n16', type: 'numeric', size: 16, precision: 38, scale: 6 },
  { name: 'n32', type: 'numeric', size: 32, precision: 76, scale: 10 },
  { name: 'f', type: 'float', size: 4 },
  { name: 'd', type: 'double', size: 8 },
  { name: 'ok', type: 'boolean', size: 1 },
  { name: 't4', type: 'timestamp', size: 4 },
  { name: 'ip4', type: 'ipv4', size: 4 },
  { name: 'ip6', type: 'ipv6', size: 16 },
  { name: 'host', type: 'string', size: 16 },
  { name: 'raw', type: 'bytes', size: 8 },
  { name: 'key', type: 'blob', size: 12 },
  { name: 'mv', type: 'chess_move', size: 2 },
  { name: 'fen', type: 'chess_fen', size: 30 },
  { name: 'proto', type: 'uint8', size: 1, enum: 'proto' },
  { name: 'ports', type: 'bytes', size: 8, array: { element: 'uint16', count: 4, size: 2 } },
  { name: 'rtts', type: 'bytes', size: 12, array: { element: 'float', count: 3, size: 4 } },
  { name: 'tags', type: 'bytes', size: 8, array: { element: 'uint8', count: 8, size: 1 } },
  { name: 'peers', type: 'bytes', size: 32, array: { element: 'ipv6', count: 2, size: 16 } },
  { name: 'big', type: 'bytes', size: 64, array: { element: 'int256', count: 2, size: 32 } },
];

/** The reference layout and its record size. */
export function layout(): { fields: RefField[]; recordSize: number } {
  let at = 0;
  const fields = SPECS.map((s) => {
    const f = { ...s, offset: at } as RefField;
    at += s.size + 1;
    return f;
  });
  return { fields, recordSize: at };
}

/** The dataset schema JSON of the layout. */
export function schemaJson(order: Order): SchemaJson {
  const { fields, recordSize } = layout();
  return {
    id: 'every',
    record_size: recordSize,
    byte_order: order,
    time_field: 'ts',
    enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 } } },
    fields: fields.map((f) => ({
      name: f.name,
      offset: f.offset,
      size: f.size,
      type: f.type,
      ...(f.precision !== undefined && { precision: f.precision, scale: f.scale }),
      ...(f.enum && { enum: f.enum }),
      ...(f.array && { array: { element: f.array.element, count: f.array.count } }),
    })),
  };
}

/** Deterministic generator (xorshift32). */
export class Rng {
  constructor(private x: number) {}
  next(): number {
    this.x ^= this.x << 13;
    this.x ^= this.x >>> 17;
    this.x ^= this.x << 5;
    return this.x >>> 0;
  }
  below(n: number): number {
    return this.next() % n;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.below(xs.length)];
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.next() & 0xff;
    return b;
  }
}

function bits(type: FieldTypeName, size: number): { bits: number; signed: boolean } {
  const signed = type.startsWith('int') || type === 'numeric' || (type === 'timestamp' && size === 8);
  return { bits: size * 8, signed };
}

/** Integer-valued types (read as bigint). */
export function isInt(t: FieldTypeName): boolean {
  return /^u?int\d+$/.test(t) || ['numeric', 'timestamp', 'ipv4', 'ipv6', 'chess_move'].includes(t);
}

/** Stored in big-endian whatever the dataset's order. */
function alwaysBig(t: FieldTypeName): boolean {
  return t === 'ipv6' || t === 'chess_move';
}

function randomBig(rng: Rng, b: number, signed: boolean): bigint {
  const raw = BigInt.asUintN(b, BigInt(`0x${rng.bytes(b / 8).toString('hex')}`));
  const edges = signed
    ? [0n, -1n, 1n, -(1n << BigInt(b - 1)), (1n << BigInt(b - 1)) - 1n, 7n, -7n]
    : [0n, 1n, (1n << BigInt(b)) - 1n, 7n, 1n << BigInt(b - 1)];
  const small = BigInt(rng.below(20)) * (signed && rng.below(2) ? -1n : 1n);
  switch (rng.below(4)) {
    case 0:
      return rng.pick(edges);
    case 1:
      return small;
    default:
      return signed ? BigInt.asIntN(b, raw) : raw;
  }
}

const WORDS = ['', 'a', 'ab', 'abc', 'b', 'alpha', 'alphabet', 'beta', 'zzzz', 'été', 'k/1', 'k/10'];
const F32 = [0, -0, 1.5, -2.25, Infinity, -Infinity, NaN, 3.4028234663852886e38, 1.401298464324817e-45, -1.401298464324817e-45];
const F64 = [0, -0, 1.5, -2.25, Infinity, -Infinity, NaN, 1.7976931348623157e308, 5e-324, 0.1];

/** A random scalar of a type (numerics within their precision). */
export function randomScalar(rng: Rng, t: FieldTypeName, size: number, precision?: number): Val {
  if (t === 'float') return rng.below(2) ? rng.pick(F32) : Math.fround((rng.next() / 2 ** 32 - 0.5) * 1000);
  if (t === 'double') return rng.below(2) ? rng.pick(F64) : (rng.next() / 2 ** 32 - 0.5) * 1e6;
  if (t === 'boolean') return rng.pick([0n, 1n, 1n, 0n, 2n, 255n]); // stored byte: any non-zero is true
  if (t === 'string' || t === 'blob') return Buffer.from(rng.pick(WORDS.filter((w) => Buffer.byteLength(w) <= size)));
  if (t === 'bytes' || t === 'chess_fen') {
    const b = Buffer.alloc(size);
    if (rng.below(4) > 0) rng.bytes(1 + rng.below(size)).copy(b);
    if (rng.below(3) === 0) b.fill(0, 2); // shared prefixes
    return b;
  }
  const { bits: b, signed } = bits(t, size);
  let v = randomBig(rng, b, signed);
  if (t === 'numeric' && precision !== undefined) v %= 10n ** BigInt(precision);
  return v;
}

/** Writes a scalar's bytes. */
export function writeScalar(rec: Buffer, at: number, t: FieldTypeName, size: number, order: Order, v: Val): void {
  if (t === 'float' || t === 'double') {
    const dv = new DataView(rec.buffer, rec.byteOffset);
    if (t === 'float') dv.setFloat32(at, v as number, order === 'little');
    else dv.setFloat64(at, v as number, order === 'little');
    return;
  }
  if (Buffer.isBuffer(v)) {
    rec.fill(0, at, at + size);
    v.copy(rec, at);
    return;
  }
  const x = BigInt.asUintN(size * 8, v as bigint);
  const be = Buffer.from(x.toString(16).padStart(size * 2, '0'), 'hex');
  (order === 'big' || alwaysBig(t) ? be : be.reverse()).copy(rec, at);
}

/** Reads a scalar back (boolean: whether the byte is non-zero; string/blob: padding removed). */
export function readScalar(rec: Buffer, at: number, t: FieldTypeName, size: number, order: Order): Val {
  const dv = new DataView(rec.buffer, rec.byteOffset);
  if (t === 'float') return dv.getFloat32(at, order === 'little');
  if (t === 'double') return dv.getFloat64(at, order === 'little');
  if (t === 'boolean') return rec[at] !== 0;
  const bytes = Buffer.from(rec.subarray(at, at + size));
  if (t === 'bytes' || t === 'chess_fen') return bytes;
  if (t === 'string' || t === 'blob') {
    let n = size;
    while (n > 0 && bytes[n - 1] === 0) n--;
    return bytes.subarray(0, n);
  }
  const be = order === 'big' || alwaysBig(t) ? bytes : Buffer.from(bytes).reverse();
  const u = BigInt(`0x${be.toString('hex')}`);
  const { bits: b, signed } = bits(t, size);
  return signed ? BigInt.asIntN(b, u) : u;
}

/** A field's value in a record: its elements for arrays when `elements`. */
export function read(rec: Buffer, f: RefField, order: Order, elements = false): Val | Val[] {
  if (f.array && elements) {
    const a = f.array;
    return Array.from({ length: a.count }, (_, i) => readScalar(rec, f.offset + i * a.size, a.element, a.size, order));
  }
  return readScalar(rec, f.offset, f.type, f.size, order);
}

/** Writes a random value into a field. */
export function writeRandom(rng: Rng, rec: Buffer, f: RefField, order: Order): void {
  if (f.array) {
    const a = f.array;
    for (let i = 0; i < a.count; i++) {
      const v = rng.below(3) === 0 ? (a.element === 'float' ? 0 : 0n) : randomScalar(rng, a.element, a.size);
      writeScalar(rec, f.offset + i * a.size, a.element, a.size, order, v);
    }
    return;
  }
  writeScalar(rec, f.offset, f.type, f.size, order, randomScalar(rng, f.type, f.size, f.precision));
}

/** Value text of a decoded value, as a filter takes it (docs/query.md). */
export function valueText(t: FieldTypeName, v: Val, scale = 0, rng?: Rng): string {
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (v === Infinity) return 'inf';
    if (v === -Infinity) return '-inf';
    return Object.is(v, -0) ? '-0' : String(v);
  }
  if (Buffer.isBuffer(v)) return t === 'string' || t === 'blob' ? v.toString('utf8') : v.toString('hex');
  if (t === 'numeric' && scale > 0) {
    const neg = v < 0n;
    const digits = (neg ? -v : v).toString().padStart(scale + 1, '0');
    return `${neg ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  if (v >= 0n && rng && rng.below(4) === 0) return `0x${v.toString(16)}`;
  return v.toString();
}

/** Whether a filter of `op` with `operands` holds for the record value `x`. */
export function holds(op: string, x: Val | Val[], operands: Val[]): boolean {
  const cmp = (a: Val, b: Val): number | undefined => {
    if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return Buffer.compare(a, b);
    if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : a === b ? 0 : undefined;
    if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
    if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
    return undefined;
  };
  const eq = (a: Val, b: Val) => cmp(a, b) === 0;
  const v = x as Val;
  const c = cmp(v, operands[0]);
  const isNull = () => (Buffer.isBuffer(v) ? v.every((b) => b === 0) : v === 0n);
  switch (op) {
    case 'eq': return c === 0;
    case 'ne': return c !== 0;
    case 'lt': return c !== undefined && c < 0;
    case 'le': return c !== undefined && c <= 0;
    case 'gt': return c !== undefined && c > 0;
    case 'ge': return c !== undefined && c >= 0;
    case 'between': {
      const d = cmp(v, operands[1]);
      return c !== undefined && d !== undefined && c >= 0 && d <= 0;
    }
    case 'in': return operands.some((o) => eq(v, o));
    case 'is_null': return isNull();
    case 'is_not_null': return !isNull();
    case 'prefix': return Buffer.isBuffer(v) && Buffer.isBuffer(operands[0]) && v.subarray(0, operands[0].length).equals(operands[0]);
    case 'list_contains': return (x as Val[]).some((e) => eq(e, operands[0]));
    case 'not_list_contains': return !(x as Val[]).some((e) => eq(e, operands[0]));
    default: throw new Error(`no reference for ${op}`);
  }
}

const ORDERED = /^(u?int\d+|numeric|float|double|timestamp|ipv4|ipv6|chess_move|string|bytes)$/;
const NULLABLE = ['string', 'bytes', 'blob', 'ipv4', 'ipv6', 'chess_fen'];

/** Whether docs/query.md's FilterOp table allows `op` on the field. */
export function allowed(op: string, f: RefField): boolean {
  switch (op) {
    case 'eq': case 'ne': case 'in': case 'masked_eq': return true;
    case 'lt': case 'le': case 'gt': case 'ge': case 'between': return ORDERED.test(f.type);
    case 'is_null': case 'is_not_null': return NULLABLE.includes(f.type);
    case 'prefix': return ['string', 'bytes', 'blob'].includes(f.type);
    case 'list_contains': case 'not_list_contains': return f.array !== undefined;
    default: return false;
  }
}

/** Every FilterOp name. */
export const OPS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'between', 'in', 'is_null', 'is_not_null', 'prefix', 'masked_eq', 'list_contains', 'not_list_contains'] as const;
