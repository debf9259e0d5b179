import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  evaluateFilter,
  generateBatchIdNumber,
  HashChain,
  ScanError,
  ScanFilter,
  Schema,
  SegmentError,
  SegmentScanner,
  SegmentWriter,
  zoneFieldsOf,
  type ScanStep,
  type ZoneField,
} from '../../engine-rs/index';
import { layout, Rng, schemaJson, writeRandom } from './scanReference';

const { fields, recordSize: R } = layout();
const schema = Schema.parse(schemaJson('little'));
const id = generateBatchIdNumber(42n);
const BLOCK = 32;
const field = (name: string) => fields.find((f) => f.name === name)!;

/** n records of the reference layout with ts ascending from 1000 and id = index. */
function records(n: number, seed = 1): Buffer {
  const rng = new Rng(seed);
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < n; i++) {
    const rec = b.subarray(i * R, (i + 1) * R);
    for (const f of fields.slice(2)) writeRandom(rng, rec, f, 'little');
    rec.writeUInt32LE(i, 0);
    rec.writeBigInt64LE(BigInt(1000 + i), field('ts').offset);
  }
  return b;
}

async function write(dir: string, name: string, data: Buffer, zones: readonly ZoneField[]) {
  const w = SegmentWriter.create({ dir, name, datasetId: 'every', batchId: id, recordSize: R, blockSize: BLOCK, algorithm: 'sha256', fields: zones });
  for (let i = 0; i < data.length; i += 5000) await w.append(data.subarray(i, i + 5000));
  const c = new HashChain(id, { algorithm: 'sha256', recordSize: R, blockSize: BLOCK });
  await c.update(data);
  return w.finish(c.finish().closingHash);
}

async function scanAll(file: string, filter: ScanFilter, maxBlocks?: number, verifyHash = false) {
  const s = await SegmentScanner.open(file, filter, { verifyHash });
  const steps: ScanStep[] = [];
  try {
    for (;;) {
      const st = await s.next(maxBlocks);
      steps.push(st);
      if (st.done) break;
    }
  } finally {
    s.close();
  }
  const sum = (k: 'matched' | 'scanned' | 'blocksSkipped') => steps.reduce((a, st) => a + st[k], 0);
  return {
    scanner: s,
    steps,
    records: Buffer.concat(steps.map((st) => st.records)),
    matched: sum('matched'),
    scanned: sum('scanned'),
    skipped: sum('blocksSkipped'),
    hashOk: steps[steps.length - 1].hashOk,
  };
}

/** CRC-32C (Castagnoli), to patch a block checksum after changing a record byte. */
function crc32c(b: Uint8Array): number {
  let c = ~0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

/** Flips one bit of a record; with `patch`, rewrites its block CRC and the footer checksum to match. */
function flip(file: string, record: number, at: number, patch: boolean): void {
  const b = readFileSync(file);
  const tail = b.length - 128;
  const dataAt = Number(b.readBigUInt64LE(tail + 16));
  const indexAt = Number(b.readBigUInt64LE(tail + 24));
  b[dataAt + record * R + at] ^= 0x01;
  if (patch) {
    const blk = Math.floor(record / BLOCK);
    const entry = indexAt + blk * (16 + 32);
    const start = Number(b.readBigUInt64LE(entry));
    const n = b.readUInt32LE(entry + 8);
    b.writeUInt32LE(crc32c(b.subarray(start, start + n * R)), entry + 12);
    b.writeUInt32LE(crc32c(b.subarray(indexAt, tail + 116)), tail + 116);
  }
  writeFileSync(file, b);
}

const q = (...subs: object[][]) => JSON.stringify(subs.map((filters) => ({ filters })));

const scan = suite('SegmentScanner');
let dir = '';
scan.before.each(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-scan-test-'));
});
scan.after.each(() => {
  rmSync(dir, { recursive: true, force: true });
});

scan('zoneFieldsOf keeps zones for numbers, times, floats and text, not arrays or addresses', () => {
  const z = zoneFieldsOf(schema);
  const at = (name: string) => z.find((f) => f.offset === field(name).offset);
  assert.equal(at('ts'), { offset: field('ts').offset, size: 8, kind: 'signed', bigEndian: false });
  assert.is(at('u32')?.kind, 'unsigned');
  assert.is(at('d')?.kind, 'float');
  assert.is(at('host')?.kind, 'bytes');
  assert.is(at('ip4'), undefined);
  assert.is(at('ports'), undefined);
  assert.is(at('u128'), undefined);
});

scan('results equal the kernel over every record, with and without zone skipping', async () => {
  const data = records(BLOCK * 40 + 9);
  const zoned = (await write(dir, 'z.hdseg', data, zoneFieldsOf(schema))).path;
  const plain = (await write(dir, 'p.hdseg', data, [])).path;
  const queries: [string, boolean][] = [
    [q([{ field: 'ts', op: 'between', values: ['1200', '1300'] }, { field: 'u8', op: 'gt', value: '100' }, { field: 'host', op: 'ne', value: 'beta' }]), true],
    [q([{ field: 'ts', op: 'lt', value: '1040' }], [{ field: 'ts', op: 'ge', value: '2280' }]), true],
    [q([{ field: 'ts', op: 'in', values: ['1001', '2000', '99'] }]), true],
    [q([{ field: 'd', op: 'ne', value: '0' }]), false],
    [q([{ field: 'ports', op: 'list_contains', value: '7' }]), false],
    [q([{ field: 'fen', op: 'masked_eq', value: '01', mask: '01' }]), false],
    [q([{ field: 'ts', op: 'lt', value: '0' }]), true],
    ['[]', false],
  ];
  for (const [json, skips] of queries) {
    const filter = ScanFilter.compile(schema, json);
    const want = evaluateFilter(filter, data);
    for (const step of [1, 5, 1000]) {
      const z = await scanAll(zoned, filter, step);
      assert.equal(z.records, want, `${json} step ${step}`);
      assert.is(z.matched * R, want.length);
      assert.is(z.skipped > 0, skips, `${json}: ${z.skipped} blocks skipped`);
      assert.ok(z.scanned <= data.length / R);
      assert.ok(z.steps.every((st, i) => st.done === (i === z.steps.length - 1)));
      const p = await scanAll(plain, filter, step);
      assert.equal(p.records, want);
      assert.is(p.skipped > 0, filter.matchesNone, 'without zones only a filter that matches nothing skips');
      assert.is(p.scanned, filter.matchesNone ? 0 : data.length / R);
    }
  }
});

scan('scanner describes its segment', async () => {
  const data = records(100);
  const sum = await write(dir, 'd.hdseg', data, []);
  const s = await SegmentScanner.open(sum.path, ScanFilter.compile(schema, '[]'));
  assert.is(s.records, 100);
  assert.is(s.blocks, 4);
  assert.is(s.datasetId, 'every');
  assert.ok(s.batchId.equals(id));
  assert.equal(s.closingHash, sum.closingHash);
  const st = await s.next(2);
  assert.is(st.scanned, 64);
  assert.is(st.done, false);
  assert.is(st.hashOk, undefined);
  s.close();
  s.close();
  try {
    await s.next();
    assert.unreachable('next after close');
  } catch (e) {
    assert.ok(e instanceof ScanError && e.code === 'ERR_SCAN_CLOSED', String(e));
  }
});

scan('verifyHash: hashOk on the last step, false after a record byte changed under a patched CRC', async () => {
  const data = records(BLOCK * 6 + 3, 2);
  const file = (await write(dir, 'v.hdseg', data, zoneFieldsOf(schema))).path;
  const all = ScanFilter.compile(schema, '[]');
  const none = ScanFilter.compile(schema, q([{ field: 'ts', op: 'lt', value: '0' }]));
  const ok = await scanAll(file, all, 2, true);
  assert.is(ok.hashOk, true);
  assert.ok(ok.steps.slice(0, -1).every((st) => st.hashOk === undefined));
  assert.equal(ok.records, data);
  const skipped = await scanAll(file, none, 3, true);
  assert.equal([skipped.hashOk, skipped.matched, skipped.scanned, skipped.skipped], [true, 0, 0, 7]);
  assert.is((await scanAll(file, all, 2)).hashOk, undefined);

  flip(file, 100, 20, true);
  assert.is((await scanAll(file, all, 2, true)).hashOk, false);
  assert.is((await scanAll(file, none, 50, true)).hashOk, false, 'hashed although every block was skipped');
  assert.is((await scanAll(file, all, 50, false)).hashOk, undefined);
});

scan('a damaged block rejects with a SegmentError and closes the scanner', async () => {
  const data = records(BLOCK * 4, 3);
  const file = (await write(dir, 'x.hdseg', data, zoneFieldsOf(schema))).path;
  flip(file, BLOCK * 2 + 1, 30, false);
  for (const verifyHash of [false, true]) {
    const s = await SegmentScanner.open(file, ScanFilter.compile(schema, '[]'), { verifyHash });
    const first = await s.next(2);
    assert.is(first.matched, BLOCK * 2);
    try {
      await s.next(2);
      assert.unreachable('damaged block');
    } catch (e) {
      assert.ok(e instanceof SegmentError && e.code === 'ERR_SEGMENT_BLOCK_CHECKSUM', String(e));
      assert.match((e as Error).message, /block 2/);
    }
    try {
      await s.next();
      assert.unreachable('closed');
    } catch (e) {
      assert.ok(e instanceof ScanError && e.code === 'ERR_SCAN_CLOSED');
    }
  }
  // Zones rule the damaged block out, so a scan without verifyHash never reads it.
  const early = ScanFilter.compile(schema, q([{ field: 'ts', op: 'lt', value: '1010' }]));
  assert.is((await scanAll(file, early)).matched, 10);
});

scan('open refuses a missing file, a foreign record size; next refuses a second step in flight', async () => {
  try {
    await SegmentScanner.open(path.join(dir, 'missing.hdseg'), ScanFilter.compile(schema, '[]'));
    assert.unreachable('missing');
  } catch (e) {
    assert.ok(e instanceof SegmentError && e.code === 'ERR_SEGMENT_IO', String(e));
  }
  const file = (await write(dir, 'o.hdseg', records(70), [])).path;
  const other = Schema.parse({ id: 'o', record_size: R + 1, time_field: 'ts', fields: [{ name: 'ts', offset: 0, size: 8, type: 'timestamp' }] });
  try {
    await SegmentScanner.open(file, ScanFilter.compile(other, '[]'));
    assert.unreachable('record size');
  } catch (e) {
    assert.ok(e instanceof ScanError && e.code === 'ERR_SCAN_RECORD_SIZE', String(e));
  }
  const s = await SegmentScanner.open(file, ScanFilter.compile(schema, '[]'));
  const a = s.next(1);
  try {
    await s.next(1);
    assert.unreachable('busy');
  } catch (e) {
    assert.ok(e instanceof ScanError && e.code === 'ERR_SCAN_BUSY');
  }
  assert.is((await a).matched, BLOCK);
  try {
    await s.next(0);
    assert.unreachable('maxBlocks 0');
  } catch (e) {
    assert.instance(e, RangeError);
  }
  s.close();
});

scan('openCached: only once a footer is cached, scans as open does, and a replaced file is not cached', async () => {
  const data = records(700, 9);
  const seg = await write(dir, 'cached.hdseg', data, zoneFieldsOf(schema));
  const filter = ScanFilter.compile(schema, '[{"filters":[{"field":"ts","op":"ge","value":"1200"}]}]');
  assert.is(SegmentScanner.openCached(seg.path, filter), undefined, 'never opened: not cached');
  const want = await scanAll(seg.path, filter, 5);
  const s = SegmentScanner.openCached(seg.path, filter);
  assert.ok(s, 'cached after an open');
  const steps: ScanStep[] = [];
  for (;;) {
    const st = await s.next(5);
    steps.push(st);
    if (st.done) break;
  }
  s.close();
  assert.ok(Buffer.concat(steps.map((x) => x.records)).equals(want.records));
  assert.ok(want.matched > 0);
  assert.is(s.records, 700);
  // Another segment put in its place (a new file): read afresh, never the old footer.
  const other = await write(dir, 'other.hdseg', records(300, 3), zoneFieldsOf(schema));
  writeFileSync(seg.path, readFileSync(other.path));
  assert.is(SegmentScanner.openCached(seg.path, filter), undefined);
  assert.is((await SegmentScanner.open(seg.path, filter)).records, 300);
  // A missing file throws as open does.
  try {
    SegmentScanner.openCached(path.join(dir, 'missing.hdseg'), filter);
    assert.unreachable('opened a missing file');
  } catch (err) {
    assert.instance(err, SegmentError);
  }
});

scan.run();
