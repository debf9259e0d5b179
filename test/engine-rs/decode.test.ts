import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { Schema, RecordDecodeError, arrowSchemaFor, decodeRecords, decodeRecordsSync } from '../../index';

type Order = 'little' | 'big';

/** 64-byte records with a field of most families; `order` decides the multi-byte layout. */
function mixedSchema(order: Order): Schema {
  return Schema.parse({
    id: `mixed_${order}`,
    name: `Mixed ${order}`,
    record_size: 64,
    byte_order: order,
    time_field: 'ts',
    time_index_interval: 60,
    enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 }, default_label: 'other' } },
    fields: [
      { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
      { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
      { name: 'i8', offset: 9, size: 1, type: 'int8' },
      { name: 'u16', offset: 10, size: 2, type: 'uint16' },
      { name: 'u32', offset: 12, size: 4, type: 'uint32' },
      { name: 'u64', offset: 16, size: 8, type: 'uint64' },
      { name: 'dt', offset: 24, size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } },
      { name: 'amount', offset: 28, size: 8, type: 'numeric', precision: 18, scale: 4 },
      { name: 'src', offset: 36, size: 4, type: 'ipv4' },
      { name: 'ok', offset: 40, size: 1, type: 'boolean' },
      { name: 'f', offset: 41, size: 4, type: 'float' },
      { name: 'host', offset: 45, size: 6, type: 'string' },
      { name: 'tags', offset: 51, size: 3, type: 'bytes', array: { element: 'uint8', count: 3, enum: 'proto' } },
      { name: 'raw', offset: 54, size: 2, type: 'bytes' },
      { name: 'pad', offset: 56, size: 8, type: 'int64' },
    ],
  });
}

interface Row {
  ts: bigint;
  proto: number;
  i8: number;
  u16: number;
  u32: number;
  u64: bigint;
  dt: number;
  amount: bigint;
  src: number;
  ok: boolean;
  f: number;
  host: Buffer;
  tags: [number, number, number];
  raw: [number, number];
  pad: bigint;
}

function record(r: Row, order: Order): Buffer {
  const b = Buffer.alloc(64);
  const le = order === 'little';
  if (le) {
    b.writeBigInt64LE(r.ts, 0);
    b.writeUInt16LE(r.u16, 10);
    b.writeUInt32LE(r.u32, 12);
    b.writeBigUInt64LE(r.u64, 16);
    b.writeUInt32LE(r.dt, 24);
    b.writeBigInt64LE(r.amount, 28);
    b.writeUInt32LE(r.src, 36);
    b.writeFloatLE(r.f, 41);
    b.writeBigInt64LE(r.pad, 56);
  } else {
    b.writeBigInt64BE(r.ts, 0);
    b.writeUInt16BE(r.u16, 10);
    b.writeUInt32BE(r.u32, 12);
    b.writeBigUInt64BE(r.u64, 16);
    b.writeUInt32BE(r.dt, 24);
    b.writeBigInt64BE(r.amount, 28);
    b.writeUInt32BE(r.src, 36);
    b.writeFloatBE(r.f, 41);
    b.writeBigInt64BE(r.pad, 56);
  }
  b[8] = r.proto;
  b.writeInt8(r.i8, 9);
  b[40] = r.ok ? 1 : 0;
  r.host.copy(b, 45, 0, 6);
  b.set(r.tags, 51);
  b.set(r.raw, 54);
  return b;
}

const ROWS: Row[] = [
  { ts: 1_700_000_000n, proto: 6, i8: -128, u16: 65535, u32: 4_294_967_295, u64: 2n ** 64n - 1n, dt: 1234, amount: -123_456n, src: 0x01020304, ok: true, f: 1.5, host: Buffer.from('abc'), tags: [6, 17, 99], raw: [0, 255], pad: -(2n ** 63n) },
  { ts: 0n, proto: 200, i8: 127, u16: 0, u32: 0, u64: 0n, dt: 0, amount: 10n ** 18n, src: 0xffffffff, ok: false, f: NaN, host: Buffer.from('abcdef'), tags: [0, 1, 6], raw: [1, 0], pad: 2n ** 63n - 1n },
  { ts: -5n, proto: 1, i8: 0, u16: 1, u32: 1, u64: 1n, dt: 4_294_967_295, amount: 0n, src: 0, ok: true, f: -0, host: Buffer.from([0x78, 0xff, 0x79]), tags: [17, 17, 17], raw: [0, 0], pad: 0n },
];

function col<T extends arrow.DataType>(batch: arrow.RecordBatch, name: string): arrow.Vector<T> {
  const v = batch.getChild(name);
  assert.ok(v, `column ${name}`);
  return v as arrow.Vector<T>;
}

const decode = suite('decodeRecords');
for (const order of ['little', 'big'] as const) {
  decode(`every column through the Arrow API (${order}-endian)`, async () => {
    const schema = mixedSchema(order);
    const records = Buffer.concat(ROWS.map((r) => record(r, order)));
    const batch = await decodeRecords(schema, records);
    assert.is(batch.numRows, 3);
    assert.equal(col(batch, 'ts').toArray(), new BigInt64Array([1_700_000_000n, 0n, -5n]));
    assert.equal([...col(batch, 'proto')], ['tcp', 'other', 'icmp']);
    assert.instance(col(batch, 'i8').toArray(), Int16Array);
    assert.equal([...col(batch, 'i8')], [-128, 127, 0]);
    assert.instance(col(batch, 'u16').toArray(), Int32Array);
    assert.equal([...col(batch, 'u16')], [65535, 0, 1]);
    assert.equal([...col(batch, 'u32')], [4_294_967_295n, 0n, 1n]);
    assert.equal([...col(batch, 'u64')], [2n ** 64n - 1n, 0n, 1n]);
    assert.equal([...col(batch, 'dt')], [1_700_000_000_000n + 1234n, 0n, -5000n + 4_294_967_295n]);
    const amount = col<arrow.Decimal>(batch, 'amount');
    assert.is((amount.type as arrow.Decimal).scale, 4);
    assert.equal([0, 1, 2].map((i) => (amount.isValid(i) ? String(amount.get(i)) : null)), ['-123456', null, '0']);
    assert.equal([...col(batch, 'src')], ['1.2.3.4', '255.255.255.255', '0.0.0.0']);
    assert.equal([...col(batch, 'ok')], [true, false, true]);
    const f = [...col(batch, 'f')] as number[];
    assert.ok(f[0] === 1.5 && Number.isNaN(f[1]) && Object.is(f[2], -0));
    assert.equal([...col(batch, 'host')], ['abc', 'abcdef', 'x\ufffdy']);
    const tags = col<arrow.List>(batch, 'tags');
    assert.equal([0, 1, 2].map((i) => [...(tags.get(i) as arrow.Vector)]), [
      ['tcp', 'udp', 'other'],
      ['other', 'icmp', 'tcp'],
      ['udp', 'udp', 'udp'],
    ]);
    assert.equal([0, 1, 2].map((i) => Array.from(col(batch, 'raw').get(i) as Uint8Array)), [[0, 255], [1, 0], [0, 0]]);
    assert.equal([...col(batch, 'pad')], [-(2n ** 63n), 2n ** 63n - 1n, 0n]);
  });
}

decode('sync, task and re-chunked decodes give equal tables', async () => {
  const schema = mixedSchema('little');
  const rows = Array.from({ length: 2000 }, (_, i) => ({ ...ROWS[i % 3]!, ts: BigInt(i), u32: i * 7 }));
  const records = Buffer.concat(rows.map((r) => record(r, 'little')));
  assert.ok(records.length >= 64 * 1024, 'large enough to take the task path');
  const show = (t: arrow.Table | arrow.RecordBatch): string =>
    JSON.stringify(t.toArray(), (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
  const whole = show(await decodeRecords(schema, records));
  assert.is(show(decodeRecordsSync(schema, records)), whole);
  for (const per of [1, 3, 7, 1000, 1999]) {
    const batches: arrow.RecordBatch[] = [];
    for (let at = 0; at < records.length; at += per * 64) {
      batches.push(await decodeRecords(schema, records.subarray(at, at + per * 64)));
    }
    assert.is(show(new arrow.Table(batches)), whole, `${per} records per chunk`);
  }
});

decode('a buffer that is not whole records is a clear error', async () => {
  const schema = mixedSchema('little');
  const bad = Buffer.alloc(64 * 2 + 5);
  try {
    await decodeRecords(schema, bad);
    assert.unreachable('should throw');
  } catch (err) {
    assert.instance(err, RecordDecodeError);
    assert.is((err as RecordDecodeError).code, 'ERR_DECODE_LENGTH');
    assert.match((err as Error).message, /133 bytes is not a whole number of 64-byte records.*5 bytes left over/);
  }
  assert.throws(() => decodeRecordsSync(schema, Buffer.alloc(1 << 17 | 1)), (e: unknown) => e instanceof RecordDecodeError);
  assert.is(decodeRecordsSync(schema, Buffer.alloc(0)).numRows, 0);
});
decode.run();

const addresses = suite('addresses option');
addresses('raw gives ipv4 as Uint32 and ipv6 as 16 bytes; text gives RFC 5952', () => {
  const schema = Schema.parse({
    id: 'addr', name: 'Addresses', record_size: 28, byte_order: 'big', time_field: 'ts', time_index_interval: 60,
    fields: [
      { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
      { name: 'v4', offset: 8, size: 4, type: 'ipv4' },
      { name: 'v6', offset: 12, size: 16, type: 'ipv6' },
    ],
  });
  const rec = (v4: number, v6: number[]): Buffer => {
    const b = Buffer.alloc(28);
    b.writeUInt32BE(v4, 8);
    b.set(v6, 12);
    return b;
  };
  const mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4];
  const records = Buffer.concat([rec(0xc0000201, mapped), rec(0, new Array<number>(16).fill(0))]);
  const text = decodeRecordsSync(schema, records);
  assert.equal([...col(text, 'v4')], ['192.0.2.1', '0.0.0.0']);
  assert.equal([...col(text, 'v6')], ['::ffff:1.2.3.4', '::']);
  const raw = decodeRecordsSync(schema, records, { addresses: 'raw' });
  assert.ok(arrow.DataType.isInt(col(raw, 'v4').type));
  assert.equal([...col(raw, 'v4')], [0xc0000201, 0]);
  assert.equal(Array.from(col(raw, 'v6').get(0) as Uint8Array), mapped);
  assert.is(arrowSchemaFor(schema, { addresses: 'raw' }).fields[2]!.metadata.get('hd.addresses'), 'raw');
});
addresses.run();

const schemaFor = suite('arrowSchemaFor');
schemaFor('types and metadata name the HD type', () => {
  const s = arrowSchemaFor(mixedSchema('little'));
  assert.is(s.metadata.get('hd.dataset'), 'mixed_little');
  const f = (n: string): arrow.Field => s.fields.find((x) => x.name === n)!;
  assert.is(f('u16').metadata.get('hd.type'), 'uint16');
  assert.ok(arrow.DataType.isDictionary(f('proto').type));
  assert.is(f('proto').metadata.get('hd.enum'), 'proto');
  assert.is(f('dt').metadata.get('hd.time_reference'), 'ts');
  assert.is(f('dt').metadata.get('hd.time_unit'), 'ms');
  assert.ok(arrow.DataType.isList(f('tags').type));
  const amount = f('amount').type as arrow.Decimal;
  assert.equal([amount.precision, amount.scale, amount.bitWidth], [18, 4, 128]);
  assert.is(s.fields.length, 15);
  // Batches have exactly this schema, and batches of one Schema share each dictionary vector.
  const schema = mixedSchema('little');
  const shape = (x: arrow.Schema): unknown => x.fields.map((y) => [y.name, String(y.type), [...y.metadata]]);
  const one = decodeRecordsSync(schema, Buffer.alloc(64));
  const two = decodeRecordsSync(schema, Buffer.alloc(128));
  assert.equal(shape(one.schema), shape(arrowSchemaFor(schema)));
  assert.ok(one.getChild('proto')!.data[0]!.dictionary === two.getChild('proto')!.data[0]!.dictionary);
});
schemaFor.run();
