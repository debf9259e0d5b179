/**
 * Columnar results (engine-rs/columnar.ts, docs/hdwp.md "columns"): a body the node writes reads back
 * as exactly the batch `decodeRecords` gives for the same records — every HD type, both byte orders,
 * projections, masks — and a malformed body is refused with a typed ColumnarFrameError. The columns
 * frame itself round-trips through the streaming decoder cut at every point.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { BatchID } from '../../engine-rs/batchId';
import { ColumnarFrameError, encodeColumnar, readColumnar } from '../../engine-rs/columnar';
import { decodeRecords } from '../../engine-rs/decode';
import { encodeFrame } from '../../engine-rs/hdwp';
import { FrameDecoder } from '../../engine-rs/hdwpDecoder';
import { applyFieldMask } from '../../engine-rs/policy';
import type { Schema } from '../../engine-rs/schema';
import { everyTypeSchema, randomRecords, rng } from './encodeArrowFixtures';

/** Rows as JSON text (bigints and decimals spelled out), for exact comparison. */
function rowsOf(b: arrow.RecordBatch): string {
  return JSON.stringify(
    b.toArray().map((r) => r.toJSON()),
    (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v),
  );
}

async function same(schema: Schema, records: Buffer, fields: readonly string[]): Promise<void> {
  const body = await encodeColumnar(schema, records, { fields });
  const got = await readColumnar(schema, body, { fields, rows: records.length / schema.recordSize });
  const want = await decodeRecords(schema, records, { fields });
  assert.equal(
    got.schema.fields.map((f) => `${f.name}: ${String(f.type)} ${JSON.stringify([...f.metadata])}`),
    want.schema.fields.map((f) => `${f.name}: ${String(f.type)} ${JSON.stringify([...f.metadata])}`),
    'the same Arrow schema',
  );
  assert.is(got.numRows, want.numRows);
  assert.is(rowsOf(got), rowsOf(want));
}

const diff = suite('columnar body vs decodeRecords');

for (const order of ['little', 'big'] as const) {
  diff(`every HD type, ${order}-endian: all fields, and random projections`, async () => {
    const schema = everyTypeSchema(order);
    const names = schema.fields.map((f) => f.name);
    for (const [n, seed] of [[1, 1], [57, 2], [700, 3]] as const) {
      const records = randomRecords(schema, n, seed);
      await same(schema, records, names);
      const r = rng(seed * 31);
      for (let k = 0; k < 6; k++) {
        const pick = names.filter(() => r() % 3 === 0);
        // Column order is the caller's: reverse half the time.
        await same(schema, records, k % 2 ? pick.reverse() : pick);
      }
    }
  });
}

diff('a few records are encoded and read on the calling thread, many off it: the same columns either way', async () => {
  const schema = everyTypeSchema('little');
  const names = schema.fields.map((f) => f.name);
  // Above 256 KiB of records the encode is a task, above 2 MiB of body the read is one too.
  const n = Math.ceil((3 * 1024 * 1024) / schema.recordSize);
  const records = randomRecords(schema, n, 12);
  const body = await encodeColumnar(schema, records, { fields: names });
  assert.ok(body.length > 2 * 1024 * 1024, `a body of ${body.length} bytes crosses the read's threshold`);
  await same(schema, records, names);
  // The same records in pieces below 256 KiB (each encoded and read on this thread) give the same rows.
  const per = Math.floor((200 * 1024) / schema.recordSize);
  const parts: string[] = [];
  for (let at = 0; at < n; at += per) {
    const part = records.subarray(at * schema.recordSize, Math.min(n, at + per) * schema.recordSize);
    const got = await readColumnar(schema, await encodeColumnar(schema, part, { fields: names }), { fields: names });
    parts.push(rowsOf(got).slice(1, -1));
  }
  assert.is(`[${parts.join(',')}]`, rowsOf(await readColumnar(schema, body, { fields: names })));
});

diff('a masked field reads as zeros in the columnar path too (mask before decode)', async () => {
  const schema = everyTypeSchema('little');
  const records = randomRecords(schema, 40, 9);
  const mask = Buffer.alloc(schema.recordSize, 0xff);
  for (const name of ['v4', 'v6', 's', 'proto', 'a_i32', 'n16']) {
    const f = schema.fields.find((x) => x.name === name)!;
    mask.fill(0, f.offset, f.offset + f.size);
  }
  const fields = schema.fields.map((f) => f.name);
  const body = await encodeColumnar(schema, records, { fields, mask });
  const got = await readColumnar(schema, body, { fields });
  const masked = Buffer.from(records);
  applyFieldMask(masked, mask);
  assert.is(rowsOf(got), rowsOf(await decodeRecords(schema, masked)));
  assert.ok(records.equals(randomRecords(schema, 40, 9)), 'the caller\'s records are untouched');
  assert.equal([...new Set(got.getChild('v4')!.toArray())], ['0.0.0.0']);
  assert.equal([...new Set(got.getChild('s')!.toArray())], ['']);
});

diff('a body holds only the columns asked for', async () => {
  const schema = everyTypeSchema('little');
  const records = randomRecords(schema, 200, 4);
  const all = await encodeColumnar(schema, records, { fields: schema.fields.map((f) => f.name) });
  const two = await encodeColumnar(schema, records, { fields: ['u8', 'ts'] });
  // Header (8) + 2 field indices + per column 13 bytes of lengths and 200 × (2 + 8) values.
  assert.is(two.length, 8 + 4 + 2 * 13 + 200 * 2 + 200 * 8);
  assert.ok(all.length > two.length * 10);
});

const bad = suite('columnar body: malformed input is refused with a typed error');

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    assert.instance(err, ColumnarFrameError);
    return (err as ColumnarFrameError).code;
  }
}

bad('truncations, versions, other columns, row counts, trailing bytes', async () => {
  const schema = everyTypeSchema('big');
  const fields = ['ts', 's', 'proto', 'a_v6'];
  const body = await encodeColumnar(schema, randomRecords(schema, 5, 6), { fields });
  const read = (b: Buffer, o: { fields?: readonly string[]; rows?: number } = {}): Promise<string> => code(readColumnar(schema, b, { fields: o.fields ?? fields, ...(o.rows !== undefined && { rows: o.rows }) }));
  assert.is(await read(body, { rows: 5 }), 'ok');
  for (let n = 0; n < body.length; n++) assert.not.equal(await read(body.subarray(0, n)), 'ok', `cut at ${n}`);
  assert.is(await read(body.subarray(0, 3)), 'ERR_COLUMNAR_TRUNCATED');
  assert.is(await read(Buffer.concat([Buffer.from([9]), body.subarray(1)])), 'ERR_COLUMNAR_UNSUPPORTED');
  assert.is(await read(body, { fields: ['ts', 's', 'a_v6', 'proto'] }), 'ERR_COLUMNAR_PROJECTION');
  assert.is(await read(body, { fields: ['ts'] }), 'ERR_COLUMNAR_PROJECTION');
  assert.is(await read(body, { rows: 6 }), 'ERR_COLUMNAR_PROJECTION');
  assert.is(await read(Buffer.concat([body, Buffer.from([0])])), 'ERR_COLUMNAR_TRAILING');
  // A dictionary index past the enum's labels (proto is the third column: its data follows ts's and s's).
  const r = rng(77);
  let refused = 0;
  for (let i = 0; i < 300; i++) {
    const b = Buffer.from(body);
    b[8 + (r() % (b.length - 8))] ^= 1 << r() % 8;
    const c = await read(b);
    if (c !== 'ok') refused++;
  }
  assert.ok(refused > 0, 'flipped bits are caught where they break a length, offset, index or UTF-8');
});

const frame = suite('HDWP columns frame');

frame('round-trips through the streaming decoder cut at every point', () => {
  const id = new BatchID(Buffer.alloc(64, 7));
  const body = Buffer.from('0102030405060708', 'hex');
  const auth = { queryId: 42, token: Buffer.alloc(16, 1) };
  const bytes = encodeFrame({ kind: 'columns', batchId: id, rows: 3, body, auth });
  for (let cut = 0; cut <= bytes.length; cut++) {
    const d = new FrameDecoder();
    const frames = [...d.push(bytes.subarray(0, cut)), ...d.push(bytes.subarray(cut))];
    assert.is(frames.length, 1);
    const f = frames[0]!;
    assert.ok(f.kind === 'columns');
    if (f.kind !== 'columns') return;
    assert.ok(f.batchId.equals(id));
    assert.is(f.rows, 3);
    assert.ok(Buffer.from(f.body).equals(body));
    assert.is(f.auth?.queryId, 42);
  }
});

frame('a columns frame without rows or without a body is refused', () => {
  const id = new BatchID(Buffer.alloc(64, 7));
  assert.throws(() => encodeFrame({ kind: 'columns', batchId: id, rows: 0, body: Buffer.from([1]) }), /ERR_HDWP_INVALID_VALUE|row/);
  assert.throws(() => encodeFrame({ kind: 'columns', batchId: id, rows: 1, body: Buffer.alloc(0) }), /ERR_HDWP_INVALID_VALUE|body/);
});

diff.run();
bad.run();
frame.run();
