import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { ArrowEncodeError, RecordCodec, decodeRecords, decodeRecordsSync, encodeArrowBatch, encodeArrowBatchAsync, type ArrowEncodeErrorCode, type Schema } from '../../index';
import { everyTypeSchema, randomRecords } from './encodeArrowFixtures';

const LITTLE = everyTypeSchema('little');
const BIG = everyTypeSchema('big');

/** The record `convertRecordToBinary` writes for these text values (every value accepted). */
function byText(schema: Schema, map: Record<string, string>): Buffer {
  const { record, errors } = new RecordCodec(schema).encodeRecord(map);
  assert.equal(errors, [], 'fixture values are valid');
  return record;
}

function differsAt(a: Buffer, b: Buffer, recordSize: number): string {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `first difference at byte ${i} (record ${Math.floor(i / recordSize)}, offset ${i % recordSize})`;
  }
  return 'equal';
}

function sameBytes(got: Buffer, want: Buffer, schema: Schema, what: string): void {
  assert.ok(got.equals(want), `${what}: ${differsAt(got, want, schema.recordSize)}`);
}

const roundTrip = suite('encodeArrowBatch: decodeRecords → encodeArrowBatch gives the same bytes');
for (const schema of [LITTLE, BIG]) {
  for (const seed of [1, 2, 3, 4]) {
    roundTrip(`every HD type, ${schema.byteOrder}-endian, seed ${seed}`, () => {
      const records = randomRecords(schema, 200, seed);
      sameBytes(encodeArrowBatch(schema, decodeRecordsSync(schema, records)), records, schema, 'text addresses');
      sameBytes(encodeArrowBatch(schema, decodeRecordsSync(schema, records, { addresses: 'raw' })), records, schema, 'raw addresses');
    });
  }
}
roundTrip('re-chunked tables and sliced batches (offset ≠ 0)', async () => {
  const schema = LITTLE;
  const records = randomRecords(schema, 240, 7);
  const rs = schema.recordSize;
  for (const per of [1, 7, 64, 239]) {
    const batches: arrow.RecordBatch[] = [];
    for (let at = 0; at < 240; at += per) batches.push(await decodeRecords(schema, records.subarray(at * rs, Math.min(240, at + per) * rs)));
    const table = new arrow.Table(batches);
    sameBytes(encodeArrowBatch(schema, table), records, schema, `${per} per batch`);
    // A slice across batch boundaries: columns start mid-chunk, bitmaps at bit offsets ≠ 0.
    sameBytes(encodeArrowBatch(schema, table.slice(3, 203)), records.subarray(3 * rs, 203 * rs), schema, `table slice, ${per} per batch`);
  }
  const batch = decodeRecordsSync(schema, records);
  for (const [a, b] of [[1, 2], [5, 13], [17, 240], [0, 0]] as const) {
    sameBytes(encodeArrowBatch(schema, batch.slice(a, b)), records.subarray(a * rs, b * rs), schema, `batch.slice(${a}, ${b})`);
  }
});
roundTrip('the async variant: a task for large batches, the same bytes', async () => {
  const records = randomRecords(BIG, 400, 11);
  assert.ok(records.length >= 64 * 1024, 'large enough for the task path');
  const batch = await decodeRecords(BIG, records);
  sameBytes(await encodeArrowBatchAsync(BIG, batch), records, BIG, 'task');
  sameBytes(await encodeArrowBatchAsync(BIG, batch.slice(0, 3)), records.subarray(0, 3 * BIG.recordSize), BIG, 'small, sync');
});
roundTrip.run();

/** Decimal128 values (scale `scale`) built from bigints. */
function decimals(values: bigint[], precision: number, scale: number): arrow.Vector {
  const words = new Uint32Array(values.length * 4);
  values.forEach((v, i) => {
    const u = BigInt.asUintN(128, v);
    for (let k = 0; k < 4; k++) words[i * 4 + k] = Number((u >> BigInt(32 * k)) & 0xffffffffn);
  });
  const type = new arrow.Decimal(scale, precision, 128);
  return arrow.makeVector(arrow.makeData({ type, length: values.length, data: words }));
}

const alternatives = suite('encodeArrowBatch: the types a caller holds');
alternatives('integers of any width, text, Timestamp, Date, Decimal, Float, dictionaries, lists', () => {
  const s = LITTLE;
  const v = arrow.vectorFromArray;
  const table = new arrow.Table({
    ts: v([1_700_000_000_999, -1], new arrow.TimestampMillisecond()),
    ts4: v([new Date(86_400_000), new Date(0)], new arrow.DateDay()),
    u8: v([255, 0], new arrow.Int32()),
    i16: v([-32768n, 7n], new arrow.Int64()),
    u64: v([2n ** 64n - 1n, 1n], new arrow.Uint64()),
    i128: v(['-170141183460469231731687303715884105728', '5'], new arrow.Utf8()),
    n8: decimals([-12_345n, 99n], 10, 3),
    n4: v([1.005, -2.5], new arrow.Float64()),
    f: v([1.5, -2], new arrow.Float16()),
    b: v([1, 0], new arrow.Uint8()),
    s: v(['héllo', ''], new arrow.LargeUtf8()),
    raw: v([new Uint8Array([1, 2]), new Uint8Array([255, 0, 0, 0, 1])], new arrow.Binary()),
    v4: v(['10.0.0.1', '192.168.1.255'], new arrow.Utf8()),
    v6: v([new Uint8Array([0x20, 0x01, 0x0d, 0xb8, ...new Array<number>(11).fill(0), 1]), new Uint8Array(16)], new arrow.FixedSizeBinary(16)),
    mv: v([0x0142, 0], new arrow.Uint16()),
    proto: v(['udp', 'icmp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int8())),
    kind: v([1000, 65535], new arrow.Uint32()),
    dt_ms: v([1_700_000_000_999n + 5n, 0n], new arrow.Int64()),
    a_i32: v([[1, -2, 3], [4, 5, 6]], new arrow.FixedSizeList(3, new arrow.Field('x', new arrow.Int32()))),
    a_u16: v([['tcp'], ['udp', 'icmp', 'tcp', 'tcp']], new arrow.List(new arrow.Field('x', new arrow.Utf8(), true))),
    a_f: v(['[0.5, -1]', ''], new arrow.Utf8()),
    a_v4: v([['1.2.3.4'], []], new arrow.LargeList(new arrow.Field('x', new arrow.Utf8(), true))),
  });
  const want = Buffer.concat([
    byText(s, { ts: '1700000000', ts4: '86400', u8: '255', i16: '-32768', u64: '18446744073709551615', i128: '-170141183460469231731687303715884105728',
      n8: '-12.345', n4: '1.01', f: '1.5', b: 'true', s: 'héllo', raw: '0102', v4: '10.0.0.1', v6: '2001:db8::1',
      mv: codeToSan(0x0142), proto: 'udp', kind: 'b', dt_ms: '1004',
      a_i32: '1,-2,3', a_u16: 'tcp', a_f: '[0.5, -1]', a_v4: '1.2.3.4' }),
    byText(s, { ts: '-1', ts4: '0', u8: '0', i16: '7', u64: '1', i128: '5', n8: '0.099', n4: '-2.5', f: '-2', b: 'false',
      raw: 'ff00000001', v4: '192.168.1.255', v6: '::', proto: 'icmp', kind: 'c', dt_ms: '1000', a_i32: '4,5,6', a_u16: 'udp,icmp,tcp,tcp' }),
  ]);
  // ts 1_700_000_000_999 ms floors to 1_700_000_000 s and -1 ms to -1 s; dt_ms is the absolute
  // time less that second (so an absolute 0 against a source of -1 s stores 1000).
  sameBytes(encodeArrowBatch(s, table), want, s, 'alternatives');
});
alternatives('absent columns leave their fields zero; nulls write zeros', () => {
  const s = LITTLE;
  const table = new arrow.Table({
    u32: arrow.vectorFromArray([7n, null, 9n], new arrow.Int64()),
    s: arrow.vectorFromArray([null, 'x', null], new arrow.Utf8()),
    proto: arrow.vectorFromArray(['tcp', null, 'udp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    a_i32: arrow.vectorFromArray([[1, null, 3], null, []], new arrow.List(new arrow.Field('x', new arrow.Int32(), true))),
  });
  const want = Buffer.concat([
    byText(s, { u32: '7', proto: 'tcp', a_i32: '1,,3' }),
    byText(s, { s: 'x' }),
    byText(s, { u32: '9', proto: 'udp' }),
  ]);
  sameBytes(encodeArrowBatch(s, table), want, s, 'nulls');
  assert.equal(encodeArrowBatch(s, new arrow.Table({ u8: arrow.vectorFromArray([], new arrow.Int8()) })).length, 0);
});
alternatives.run();

/** The SAN of a move code, via a decode of a record holding it. */
function codeToSan(code: number): string {
  const rec = Buffer.alloc(LITTLE.recordSize);
  const mv = LITTLE.fields.find((f) => f.name === 'mv')!;
  rec.writeUInt16BE(code, mv.offset);
  return String(decodeRecordsSync(LITTLE, rec).getChild('mv')!.get(0));
}

function expectError(fn: () => unknown, code: ArrowEncodeErrorCode, message: RegExp, column?: string, row?: number): void {
  try {
    fn();
    assert.unreachable('should throw');
  } catch (err) {
    assert.instance(err, ArrowEncodeError);
    const e = err as ArrowEncodeError;
    assert.is(e.code, code, e.message);
    assert.match(e.message, message);
    assert.is(e.column, column);
    assert.is(e.row, row);
  }
}

const errors = suite('encodeArrowBatch: errors name the column, the row and the problem');
const one = (name: string, vector: arrow.Vector): arrow.Table => new arrow.Table({ [name]: vector });
errors('wrong Arrow type for a field', () => {
  expectError(() => encodeArrowBatch(LITTLE, one('u8', arrow.vectorFromArray([1.5], new arrow.Float64()))), 'ERR_ENCODE_ARROW_TYPE',
    /^column 'u8' is Float64; a uint8 field takes an integer column/, 'u8');
  expectError(() => encodeArrowBatch(LITTLE, one('dt_ms', arrow.vectorFromArray(['5']))), 'ERR_ENCODE_ARROW_TYPE', /the absolute time as an integer/, 'dt_ms');
  expectError(() => encodeArrowBatch(LITTLE, one('a_i32', arrow.vectorFromArray([[1.5]], new arrow.List(new arrow.Field('x', new arrow.Float32()))))),
    'ERR_ENCODE_ARROW_TYPE', /is a list of Float32; its elements take an integer column/, 'a_i32');
  const struct = arrow.makeVector(arrow.makeData({ type: new arrow.Struct([new arrow.Field('a', new arrow.Int32())]), length: 1, children: [arrow.makeData({ type: new arrow.Int32(), length: 1, data: new Int32Array(1) })] }));
  expectError(() => encodeArrowBatch(LITTLE, one('ts', struct)), 'ERR_ENCODE_ARROW_TYPE', /is Struct<\{a:Int32\}>; a timestamp field takes Timestamp/, 'ts');
});
errors('values out of range, too long, unknown labels: with the row', () => {
  expectError(() => encodeArrowBatch(LITTLE, one('u8', arrow.vectorFromArray([1, 2, 300], new arrow.Int32()))), 'ERR_ENCODE_ARROW_VALUE',
    /^column 'u8', row 2: value 300 is out of range for uint8$/, 'u8', 2);
  expectError(() => encodeArrowBatch(LITTLE, one('s', arrow.vectorFromArray(['ok', 'much too long text']))), 'ERR_ENCODE_ARROW_VALUE',
    /row 1: text is 18 bytes, the field holds 10/, 's', 1);
  expectError(() => encodeArrowBatch(LITTLE, one('proto', arrow.vectorFromArray(['tcp', 'sctp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int16())))),
    'ERR_ENCODE_ARROW_VALUE', /row 1: unknown label "sctp" for enum proto/, 'proto', 1);
  expectError(() => encodeArrowBatch(LITTLE, one('n4', decimals([10n ** 9n], 10, 2))), 'ERR_ENCODE_ARROW_VALUE',
    /row 0: value 10000000.00 is out of range for numeric\(9,2\)/, 'n4', 0);
  expectError(() => encodeArrowBatch(LITTLE, one('a_i32', arrow.vectorFromArray([[1], [1, 2, 3, 4]], new arrow.List(new arrow.Field('x', new arrow.Int8()))))),
    'ERR_ENCODE_ARROW_VALUE', /row 1: the list has 4 elements, the field holds 3/, 'a_i32', 1);
  // The default label stands for codes the enum does not define: it has no code to write.
  expectError(() => encodeArrowBatch(LITTLE, one('proto', arrow.vectorFromArray(['other']))), 'ERR_ENCODE_ARROW_VALUE', /unknown label "other"/, 'proto', 0);
});
errors('columns the schema does not name: an error naming them, or skipped', () => {
  const table = new arrow.Table({ u8: arrow.vectorFromArray([1], new arrow.Int8()), nope: arrow.vectorFromArray([1]), nada: arrow.vectorFromArray(['x']) });
  expectError(() => encodeArrowBatch(LITTLE, table), 'ERR_ENCODE_ARROW_COLUMN', /^columns 'nope', 'nada' are not fields of dataset 'every_little'/, 'nope');
  const out = encodeArrowBatch(LITTLE, table, { unknownColumns: 'ignore' });
  sameBytes(out, byText(LITTLE, { u8: '1' }), LITTLE, 'ignored');
  assert.throws(() => encodeArrowBatch(LITTLE, table, { unknownColumns: 'drop' as 'ignore' }), /unknownColumns must be 'error' or 'ignore'/);
  assert.throws(() => encodeArrowBatch(LITTLE, {} as arrow.Table), (e: unknown) => e instanceof TypeError);
  // Rows without buffers (a Null column) cannot ask for more memory than a Buffer holds.
  const endless = arrow.makeVector(arrow.makeData({ type: new arrow.Null(), length: 2 ** 40 }));
  assert.throws(() => encodeArrowBatch(LITTLE, one('u8', endless)), /exceed the largest Buffer/);
});
errors('malformed Arrow data and the async path', async () => {
  const short = arrow.makeVector(arrow.makeData({ type: new arrow.Int32(), length: 4, data: new Int32Array(2) }));
  expectError(() => encodeArrowBatch(LITTLE, one('u8', short)), 'ERR_ENCODE_ARROW_SHAPE', /malformed Arrow data: the values buffer holds 8 bytes/, 'u8');
  const bad = arrow.makeVector(arrow.makeData({ type: new arrow.Utf8(), length: 1, valueOffsets: new Int32Array([0, 50]), data: new Uint8Array(3) }));
  expectError(() => encodeArrowBatch(LITTLE, one('s', bad)), 'ERR_ENCODE_ARROW_SHAPE', /row 0: the offsets point outside the data buffer/, 's');
  const n = 2000;
  const values = Array.from({ length: n }, (_, i) => (i === 1234 ? -1 : i));
  const big = one('u32', arrow.vectorFromArray(values, new arrow.Int32()));
  try {
    await encodeArrowBatchAsync(LITTLE, big);
    assert.unreachable('should reject');
  } catch (err) {
    assert.instance(err, ArrowEncodeError);
    assert.equal([(err as ArrowEncodeError).code, (err as ArrowEncodeError).row], ['ERR_ENCODE_ARROW_VALUE', 1234]);
  }
});
errors.run();
