/**
 * DataRowWriter writes the same bytes as the message-per-row encoder (backend.dataRow), for NULLs,
 * empty and multi-byte text and binary values, across chunk boundaries and buffer growth.
 */
import * as arrow from 'apache-arrow';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeDataset } from '../../bench/peers/dataset';
import { FLOWS_SCHEMA } from '../../bench/peers/hd';
import { decodeRecords } from '../../engine-rs/decode';
import { Schema } from '../../engine-rs/schema';
import { backend } from '../../sql/pgwire/backend';
import { DataRowWriter } from '../../sql/pgwire/dataRows';
import { textOf } from '../../sql/pgwire/pgTypes';
import { writeCopy, writeRows } from '../../sql/pgwire/resultRows';

const rows = suite('pgwire DataRowWriter');

rows('byte for byte the message-per-row encoding, over many chunks and a value larger than a chunk', () => {
  const chunks: Buffer[] = [];
  const w = new DataRowWriter((c) => chunks.push(c));
  const want: Buffer[] = [];
  const big = 'é'.repeat(400_000); // 800 000 bytes: more than a chunk, the buffer grows
  for (let r = 0; r < 20_000; r++) {
    const values: (string | Buffer | null)[] = [String(r), r % 7 === 0 ? null : `ü-${r}`, '', Buffer.from([r & 0xff, 0, 255]), r === 12_345 ? big : 'x'];
    w.beginRow(values.length);
    for (const v of values) {
      if (v === null) w.writeNull();
      else if (typeof v === 'string') w.writeText(v);
      else w.writeBytes(v);
    }
    w.endRow();
    want.push(backend.dataRow(values.map((v) => (v === null ? null : typeof v === 'string' ? Buffer.from(v, 'utf8') : v))));
  }
  w.flush();
  assert.ok(chunks.length > 2, `handed on in chunks (${chunks.length})`);
  assert.ok(Buffer.concat(chunks).equals(Buffer.concat(want)));
  // Each chunk holds whole messages: a reader can take it on its own.
  for (const c of chunks) {
    let at = 0;
    while (at < c.length) {
      assert.is(c[at], 0x44);
      at += 1 + c.readInt32BE(at + 1);
    }
    assert.is(at, c.length);
  }
});

rows('nothing written, nothing handed on', () => {
  const chunks: Buffer[] = [];
  new DataRowWriter((c) => chunks.push(c)).flush();
  assert.equal(chunks, []);
});

rows('writeRows from column buffers gives the bytes of the per-value textOf path: every flow field type, nulls, sliced and several chunks', async () => {
  const schema = Schema.parse(FLOWS_SCHEMA);
  const d = makeDataset(2500);
  const batches = [];
  for (let at = 0; at < d.n; at += 700) batches.push(await decodeRecords(schema, d.records.subarray(at * 150, Math.min(d.n, at + 700) * 150)));
  // Nulls, a column of only nulls, bools and ints at odd offsets (sliced chunks), and a mixed table.
  const extra = new arrow.Table({
    n: arrow.vectorFromArray([1, null, -3, 2 ** 31 - 1, null, 7, 0, 5, 9, 11], new arrow.Int32()),
    b: arrow.vectorFromArray([true, false, null, true, true, false, null, true, false, true], new arrow.Bool()),
    s: arrow.vectorFromArray(['a', null, 'ü€', '', 'x', 'y', null, 'z', 'w', 'v'], new arrow.Utf8()),
    e: arrow.vectorFromArray(['tcp', 'udp', null, 'tcp', 'gre', 'tcp', 'udp', null, 'icmp', 'tcp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    f: arrow.vectorFromArray([0.1, NaN, null, -0, 1e300, 2.5, 3, null, -7.25, 1 / 3], new arrow.Float64()),
    g: arrow.vectorFromArray([1n, -2n, null, 2n ** 62n, -(2n ** 53n) + 1n, 2n ** 53n - 1n, -(2n ** 53n), null, -(2n ** 63n), 2n ** 53n], new arrow.Int64()),
    u: arrow.vectorFromArray([0n, 2n ** 64n - 1n, null, 2n ** 53n - 1n, 2n ** 53n, 4294967296n, 4294967295n, 7n, 2n ** 63n, 1n], new arrow.Uint64()),
  });
  const tables: arrow.Table[] = [new arrow.Table(batches), extra, extra.slice(3, 9), new arrow.Table([...extra.slice(1, 4).batches, ...extra.slice(5).batches])];
  for (const t of tables) {
    const got: Buffer[] = [];
    await writeRows({ send: (c) => void got.push(c), drain: () => undefined, gone: false }, t, [0], 0, t.numRows);
    const want: Buffer[] = [];
    const cols = t.schema.fields.map((_, i) => t.getChildAt(i) as arrow.Vector);
    for (let r = 0; r < t.numRows; r++) {
      want.push(backend.dataRow(cols.map((c) => {
        const v = textOf(c.type, c.get(r));
        return v === null ? null : Buffer.from(v, 'utf8');
      })));
    }
    assert.ok(Buffer.concat(got).equals(Buffer.concat(want)), `${t.numRows} rows of ${t.schema.fields.map((f) => String(f.type)).join(', ')}`);
    // Part of the rows (a portal resumed mid-table): the same bytes as those rows alone.
    const part: Buffer[] = [];
    await writeRows({ send: (c) => void part.push(c), drain: () => undefined, gone: false }, t, [0], 2, t.numRows - 1);
    assert.ok(Buffer.concat(part).equals(Buffer.concat(want.slice(2, t.numRows - 1))), 'rows 2 .. n-1');
  }
});

rows('writeRows over random tables of every integer width, float32, timestamps and lists, with nulls, matches textOf', async () => {
  let seed = 7;
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  for (let round = 0; round < 8; round++) {
    const n = 1 + Math.floor(rnd() * 5000);
    const maybe = <T,>(f: () => T): T | null => (rnd() < 0.2 ? null : f());
    const gen = <T,>(f: () => T): (T | null)[] => Array.from({ length: n }, () => maybe(f));
    const table = new arrow.Table({
      i8: arrow.vectorFromArray(gen(() => Math.floor(rnd() * 256) - 128), new arrow.Int8()),
      u8: arrow.vectorFromArray(gen(() => Math.floor(rnd() * 256)), new arrow.Uint8()),
      i16: arrow.vectorFromArray(gen(() => Math.floor(rnd() * 65536) - 32768), new arrow.Int16()),
      u32: arrow.vectorFromArray(gen(() => Math.floor(rnd() * 2 ** 32)), new arrow.Uint32()),
      f32: arrow.vectorFromArray(gen(() => pick([0.1, -1.5, 3.4e38, 1e-40, NaN, Infinity, rnd()])), new arrow.Float32()),
      f64: arrow.vectorFromArray(gen(() => pick([1e21, 1e-7, -0, 123456789.125, rnd() * 1e6, -Infinity])), new arrow.Float64()),
      ts: arrow.vectorFromArray(gen(() => 1_700_000_000_000 + Math.floor(rnd() * 1e9)), new arrow.TimestampMillisecond()),
      list: arrow.vectorFromArray(gen(() => [1, 2, 3].slice(0, Math.floor(rnd() * 4))), new arrow.List(new arrow.Field('item', new arrow.Int32(), true))),
      lab: arrow.vectorFromArray(gen(() => pick(['tcp', 'udp', 'ü'])), new arrow.Dictionary(new arrow.Utf8(), new arrow.Int8())),
    });
    const lo = Math.floor(rnd() * n);
    const t = rnd() < 0.5 ? table : table.slice(lo);
    const got: Buffer[] = [];
    await writeRows({ send: (c) => void got.push(c), drain: () => undefined, gone: false }, t, [0], 0, t.numRows);
    const cols = t.schema.fields.map((_, i) => t.getChildAt(i) as arrow.Vector);
    const want = Array.from({ length: t.numRows }, (_, r) =>
      backend.dataRow(cols.map((c) => {
        const v = textOf(c.type, c.get(r));
        return v === null ? null : Buffer.from(v, 'utf8');
      })),
    );
    assert.ok(Buffer.concat(got).equals(Buffer.concat(want)), `round ${round}: ${t.numRows} rows`);
  }
});

rows('a client that stops reading pauses the native rows between blocks; a gone client stops them', async () => {
  const t = new arrow.Table({ n: arrow.vectorFromArray(Array.from({ length: 10_000 }, (_, i) => i), new arrow.Int32()) });
  const sent: Buffer[] = [];
  let waits = 0;
  await writeRows({ send: (c) => void sent.push(c), drain: () => (sent.length === 1 ? (waits++, Promise.resolve()) : undefined), gone: false }, t, [0], 0, t.numRows);
  assert.ok(sent.length > 1, `several blocks (${sent.length})`);
  assert.is(waits, 1);
  let calls = 0;
  const sink = { send: () => void calls++, drain: () => undefined, get gone() { return calls > 0; } };
  await writeRows(sink, t, [0], 0, t.numRows);
  assert.is(calls, 1, 'nothing more once the client is gone');
});

rows('writeCopy: COPY text rows of every type, escapes and NULLs, byte for byte what textOf and the escapes give', async () => {
  const t = new arrow.Table({
    n: arrow.vectorFromArray([1, null, -3, 2 ** 31 - 1], new arrow.Int32()),
    s: arrow.vectorFromArray(['a\tb', null, 'back\\slash\nnew\rline', ''], new arrow.Utf8()),
    e: arrow.vectorFromArray(['tcp', null, 'u\tdp', 'tcp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    f: arrow.vectorFromArray([0.1, NaN, null, 1e21], new arrow.Float64()),
    b: arrow.vectorFromArray([true, null, false, true], new arrow.Bool()),
    ts: arrow.vectorFromArray([1_700_000_000_000, null, 0, 86_400_000], new arrow.TimestampMillisecond()),
  });
  const both = new arrow.Table([...t.batches, ...t.slice(1).batches]);
  const got: Buffer[] = [];
  await writeCopy({ send: (c) => void got.push(c), drain: () => undefined, gone: false }, both);
  const esc = (x: string): string => x.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  const cols = both.schema.fields.map((_, i) => both.getChildAt(i) as arrow.Vector);
  const want = [backend.copyOutResponse(cols.length)];
  for (let r = 0; r < both.numRows; r++) {
    const line = cols.map((c) => {
      const v = textOf(c.type, c.get(r));
      return v === null ? '\\N' : esc(v);
    });
    want.push(backend.copyData(Buffer.from(`${line.join('\t')}\n`, 'utf8')));
  }
  want.push(backend.copyDone(), backend.commandComplete(`COPY ${both.numRows}`));
  assert.ok(Buffer.concat(got).equals(Buffer.concat(want)));
  assert.ok(Buffer.concat(got).includes(Buffer.from('1\ta\\tb\ttcp\t0.1\tt\t')), 'a tab in text is escaped');
  assert.ok(Buffer.concat(got).includes(Buffer.from('\\N\t\\N\t\\N\tNaN\t\\N\t\\N\n')), 'NULLs are \\N');
});

rows.run();
