/**
 * Fixtures for the Arrow encode tests: a schema with every HD type (scalars, enums, delta times,
 * arrays of every element type) in either byte order, and random records of it written through
 * `RecordCodec` from text, so every field holds a value its decoded presentation gives back.
 */
import { RecordCodec, Schema, type FieldInfo } from '../../index';

/** Deterministic xorshift32 stream. */
export function rng(seed: number): () => number {
  let x = seed >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
}

const SIZES: Record<string, number> = { '8': 1, '16': 2, '32': 4, '64': 8, '128': 16, '256': 32 };

/** Every HD type once, some twice (enum on uint8 and uint16, timestamps of 4 and 8 bytes, ...). */
export function everyTypeSchema(order: 'little' | 'big'): Schema {
  const fields: Record<string, unknown>[] = [];
  let at = 0;
  const add = (f: Record<string, unknown> & { size: number }): void => {
    fields.push({ ...f, offset: at });
    at += f.size;
  };
  add({ name: 'ts', size: 8, type: 'timestamp' });
  for (const bits of ['8', '16', '32', '64', '128', '256']) {
    add({ name: `u${bits}`, size: SIZES[bits]!, type: `uint${bits}` });
    add({ name: `i${bits}`, size: SIZES[bits]!, type: `int${bits}` });
  }
  for (const [size, precision, scale] of [[4, 9, 2], [8, 18, 4], [16, 38, 10], [32, 76, 0]] as const) {
    add({ name: `n${size}`, size, type: 'numeric', precision, scale });
  }
  add({ name: 'f', size: 4, type: 'float' });
  add({ name: 'd', size: 8, type: 'double' });
  add({ name: 'b', size: 1, type: 'boolean' });
  add({ name: 'raw', size: 5, type: 'bytes' });
  add({ name: 's', size: 10, type: 'string' });
  add({ name: 'key', size: 12, type: 'blob' });
  add({ name: 'ts4', size: 4, type: 'timestamp' });
  add({ name: 'v4', size: 4, type: 'ipv4' });
  add({ name: 'v6', size: 16, type: 'ipv6' });
  add({ name: 'mv', size: 2, type: 'chess_move' });
  add({ name: 'fen', size: 30, type: 'chess_fen' });
  add({ name: 'proto', size: 1, type: 'uint8', enum: 'proto' });
  add({ name: 'kind', size: 2, type: 'uint16', enum: 'kind' });
  add({ name: 'dt_ms', size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } });
  add({ name: 'dt_ns', size: 8, type: 'int64', time_reference: { field: 'ts', unit: 'ns' } });
  add({ name: 'a_u16', size: 8, type: 'bytes', array: { element: 'uint16', count: 4, enum: 'proto' } });
  add({ name: 'a_i32', size: 12, type: 'bytes', array: { element: 'int32', count: 3 } });
  add({ name: 'a_u64', size: 16, type: 'bytes', array: { element: 'uint64', count: 2 } });
  add({ name: 'a_f', size: 8, type: 'bytes', array: { element: 'float', count: 2 } });
  add({ name: 'a_b', size: 3, type: 'bytes', array: { element: 'boolean', count: 3 } });
  add({ name: 'a_v4', size: 8, type: 'bytes', array: { element: 'ipv4', count: 2 } });
  add({ name: 'a_v6', size: 32, type: 'bytes', array: { element: 'ipv6', count: 2 } });
  add({ name: 'a_mv', size: 6, type: 'bytes', array: { element: 'chess_move', count: 3 } });
  return Schema.parse({
    id: `every_${order}`, record_size: at, byte_order: order, time_field: 'ts',
    enums: {
      proto: { values: { icmp: 1, tcp: 6, udp: 17 }, default_label: 'other' },
      kind: { values: { a: 0, b: 1000, c: 65535 } },
    },
    fields,
  });
}

const SANS = ['e4', 'Nf3', 'exd8=Q+', 'O-O', 'O-O-O#', 'Nbd7', 'R1e2', 'Qh4e1', 'Kxf2', 'bxa1=N'];
const FENS = [
  'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1',
  'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2',
  '8/8/8/4k3/8/8/4K3/8 b - - 12 80',
];
const LABELS: Record<string, readonly string[]> = { proto: ['icmp', 'tcp', 'udp'], kind: ['a', 'b', 'c'] };
const TEXT = 'abcxyz019 -_é€😀';

function bigRandom(r: () => number, bits: number): bigint {
  let v = 0n;
  for (let k = 0; k < bits; k += 32) v = (v << 32n) | BigInt(r());
  return BigInt.asUintN(bits, v);
}

/** A random integer of `bits` bits, as decimal text; often a range edge. */
function intText(r: () => number, bits: number, signed: boolean): string {
  const edge = r() % 8;
  const min = signed ? -(1n << BigInt(bits - 1)) : 0n;
  const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
  if (edge === 0) return String(min);
  if (edge === 1) return String(max);
  const u = bigRandom(r, bits);
  return String(signed ? BigInt.asIntN(bits, u) : u);
}

function scalarText(r: () => number, type: string, size: number, f: { enum?: string; precision?: number; scale?: number }, big: boolean): string {
  if (f.enum) return LABELS[f.enum]![r() % 3]!;
  const int = /^(u?)int(\d+)$/.exec(type);
  if (int) return intText(r, Number(int[2]), int[1] !== 'u');
  switch (type) {
    case 'numeric': {
      const digits = Array.from({ length: 1 + (r() % f.precision!) }, () => r() % 10).join('');
      const scale = f.scale!;
      const padded = digits.padStart(scale + 1, '0');
      const text = scale ? `${padded.slice(0, -scale)}.${padded.slice(-scale)}` : padded;
      return (r() & 1 ? '-' : '') + text;
    }
    case 'float':
      return [String(Math.fround((r() - 2 ** 31) / 977)), '-0', 'inf', 'NaN'][r() % 4 === 0 ? 1 + (r() % 3) : 0]!;
    case 'double':
      return String(((r() | 0) * 2 ** 20 + r()) / 3);
    case 'boolean':
      return r() & 1 ? 'true' : 'false';
    case 'bytes':
      return Buffer.from(Array.from({ length: 1 + (r() % size) }, () => r() & 255)).toString('hex');
    case 'string':
    case 'blob': {
      let s = '';
      for (;;) {
        const c = [...TEXT][r() % [...TEXT].length]!;
        if (Buffer.byteLength(s + c) > size) return s;
        s += c;
      }
    }
    case 'timestamp':
      // Within ±2^32 s, so a ns delta field's absolute time (source × 10^9 + delta) fits int64.
      return size === 4 ? String(r()) : String(BigInt.asIntN(33, bigRandom(r, 33)));
    case 'ipv4':
      return [r() & 255, r() & 255, r() & 255, r() & 255].join('.');
    case 'ipv6':
      return String(bigRandom(r, 128));
    case 'chess_move':
      return SANS[r() % SANS.length]!;
    case 'chess_fen':
      return FENS[r() % FENS.length]!;
  }
  throw new Error(`no generator for ${type}${big ? ' (big)' : ''}`);
}

function fieldText(r: () => number, f: FieldInfo): string {
  if (f.array) {
    const size = f.array.element.match(/\d+/) ? Number(f.array.element.match(/\d+/)![0]) / 8 : 4;
    const items = Array.from({ length: f.array.count }, () => scalarText(r, f.array!.element, size, { enum: f.array!.enum }, false));
    return items.join(',');
  }
  // Deltas of at most ±2^61: with the source's ±2^32 s the absolute time stays in int64.
  if (f.timeReference) return intText(r, Math.min(f.size * 8, 62), f.type.startsWith('int'));
  return scalarText(r, f.type, f.size, f, false);
}

/** `n` random records of `schema`, every field set. */
export function randomRecords(schema: Schema, n: number, seed: number): Buffer {
  const r = rng(seed);
  const codec = new RecordCodec(schema);
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const map: Record<string, string> = {};
    for (const f of schema.fields) map[f.name] = fieldText(r, f);
    const { record, errors } = codec.encodeRecord(map);
    if (errors.length) throw new Error(`fixture record refused: ${JSON.stringify(errors)}`);
    out.push(record);
  }
  return Buffer.concat(out);
}
