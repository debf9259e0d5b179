/**
 * Shared test data of the local evaluation tests: a dataset schema with every HD type, records of it
 * written by the engine's own encoder, a seeded random generator, and a canonical form of Arrow
 * values for comparing tables exactly (bigints, decimals by their words, bytes as hex).
 */
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { LocalSqlError } from '../../local/localSqlError';
import { RecordCodec, Schema, decodeRecordsSync, type DecodeOptions } from '../../index';

/** Every HD type, enum columns and an enum array included (the codec tests' layout). */
export const ALL_TYPES = Schema.parse({
  id: 'all_types', name: 'All types', record_size: 200, time_field: 'ts', byte_order: 'little',
  enums: { proto: { values: { tcp: 6, udp: 17, icmp: 1 }, default_label: 'other' } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'u8', offset: 8, size: 1, type: 'uint8' },
    { name: 'u16', offset: 9, size: 2, type: 'uint16' },
    { name: 'i32', offset: 11, size: 4, type: 'int32' },
    { name: 'u64', offset: 15, size: 8, type: 'uint64' },
    { name: 'i128', offset: 23, size: 16, type: 'int128' },
    { name: 'u256', offset: 39, size: 32, type: 'uint256' },
    { name: 'num', offset: 71, size: 8, type: 'numeric', precision: 18, scale: 3 },
    { name: 'f', offset: 79, size: 4, type: 'float' },
    { name: 'd', offset: 83, size: 8, type: 'double' },
    { name: 'b', offset: 91, size: 1, type: 'boolean' },
    { name: 'raw', offset: 92, size: 4, type: 'bytes' },
    { name: 's', offset: 96, size: 8, type: 'string' },
    { name: 'v4', offset: 104, size: 4, type: 'ipv4' },
    { name: 'v6', offset: 108, size: 16, type: 'ipv6' },
    { name: 'key', offset: 124, size: 8, type: 'blob' },
    { name: 'mv', offset: 132, size: 2, type: 'chess_move' },
    { name: 'fen', offset: 134, size: 30, type: 'chess_fen' },
    { name: 'proto', offset: 164, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'dt', offset: 165, size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } },
    { name: 'arr', offset: 169, size: 8, type: 'bytes', array: { element: 'uint16', count: 4, enum: 'proto' } },
    { name: 'ts4', offset: 177, size: 4, type: 'timestamp' },
    { name: 'i16', offset: 181, size: 2, type: 'int16' },
    { name: 'u128', offset: 183, size: 16, type: 'uint128' },
  ],
});

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const AFTER_E4 = 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1';

/** Three records in the schema's text form: extremes, zeros and ordinary values. */
export const ALL_TYPES_ROWS: Record<string, string>[] = [
  {
    ts: '2024-01-01T00:00:00Z', u8: '255', u16: '0x1234', i32: '-2', u64: '18446744073709551615',
    i128: '-170141183460469231731687303715884105728', u256: '0x' + 'ab'.repeat(32), num: '-1.5', f: '1.5', d: '-0.25',
    b: 'true', raw: '0xdeadbeef', s: 'héllo', v4: '192.168.1.2', v6: '2001:db8::1', key: 'obj/1', mv: 'exd8=Q+', fen: START,
    proto: 'udp', dt: '1500', arr: '["tcp", 17, 9]', ts4: '4294967295', i16: '-32768', u128: '340282366920938463463374607431768211455',
  },
  {
    ts: '0', u8: '0', u16: '0', i32: '2147483647', u64: '0', i128: '170141183460469231731687303715884105727', u256: '0', num: '0',
    f: '-0', d: '1e300', b: 'false', raw: '0x00000000', s: '', v4: '0.0.0.0', v6: '::', key: 'abcdefgh', mv: 'e4',
    fen: AFTER_E4, proto: 'icmp', dt: '0', arr: '["udp", "udp", "tcp", "icmp"]', ts4: '0', i16: '32767', u128: '0',
  },
  {
    ts: '1700000000', u8: '7', u16: '65535', i32: '-2147483648', u64: '9007199254740993', i128: '-1', u256: '12345678901234567890',
    num: '123456789012345.678', f: '3.25', d: '-1e-300', b: 'true', raw: '0x01020304', s: 'abcdefgh', v4: '255.255.255.255',
    v6: '::ffff:1.2.3.4', key: 'k', mv: 'Nf3', fen: START, proto: 'tcp', dt: '4294967295', arr: '[1, 6, 17, 6]', ts4: '1',
    i16: '0', u128: '18446744073709551616',
  },
];

/** The rows above as one decoded RecordBatch (the query client's presentation). */
export function allTypesBatch(opts?: DecodeOptions): arrow.RecordBatch {
  const codec = new RecordCodec(ALL_TYPES);
  const records = ALL_TYPES_ROWS.map((r) => {
    const rec = Buffer.from(codec.convertRecordToBinary(r));
    if (codec.lastErrors.length > 0) throw new Error(`fixture record: ${JSON.stringify(codec.lastErrors)}`);
    return rec;
  });
  return decodeRecordsSync(ALL_TYPES, Buffer.concat(records), opts);
}

/** A value in a form `assert.equal` compares exactly: bigint and decimal as decimal text, bytes as hex. */
export function canonical(v: unknown, type?: arrow.DataType): unknown {
  if (v === null || v === undefined) return null;
  if (type && arrow.DataType.isDecimal(type)) return decimalText(v as Uint32Array);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : Number.isNaN(v) ? 'NaN' : v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (v instanceof arrow.Vector) return [...v].map((x) => canonical(x, (v.type as arrow.DataType).typeId === arrow.Type.Dictionary ? undefined : v.type));
  if (typeof v === 'object' && 'toJSON' in (v as object) && !Array.isArray(v)) return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));
  return v;
}

/** Two's complement little-endian u32 words as signed decimal text. */
export function decimalText(words: Uint32Array): string {
  let x = 0n;
  for (let i = words.length - 1; i >= 0; i--) x = (x << 32n) | BigInt(words[i]!);
  const bits = BigInt(words.length * 32);
  if (x >> (bits - 1n)) x -= 1n << bits;
  return x.toString();
}

/** Every column of `t` as canonical values, keyed by column name. */
export function columns(t: arrow.Table | arrow.RecordBatch): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const f of t.schema.fields) {
    const v = t.getChild(f.name)!;
    out[f.name] = Array.from({ length: v.length }, (_x, i) => canonical(v.get(i), f.type));
  }
  return out;
}

/** A seeded generator (a 32-bit LCG, high bits): the same seed gives the same sequence. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => (a = (Math.imul(a, 1664525) + 1013904223) >>> 0) / 4294967296;
}

/**
 * Asserts that `f` throws a LocalSqlError `ERR_LOCAL_ARGS` whose message starts with `key: ` and
 * matches `msg`.
 */
export function expectArgsError(f: () => unknown, key: string, msg: RegExp): void {
  try {
    f();
  } catch (err) {
    assert.instance(err, LocalSqlError);
    assert.is((err as LocalSqlError).code, 'ERR_LOCAL_ARGS');
    assert.ok((err as Error).message.startsWith(`${key}: `), `"${(err as Error).message}" names ${key}`);
    assert.match((err as Error).message, msg);
    return;
  }
  assert.unreachable(`should throw for ${key}`);
}
