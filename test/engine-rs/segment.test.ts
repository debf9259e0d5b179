import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  generateBatchIdNumber,
  HashChain,
  recoverSegments,
  readSegment,
  SegmentError,
  SegmentReader,
  SegmentWriter,
  segmentFileName,
  verifySegment,
  type ZoneField,
} from '../../engine-rs/index';

const R = 16;
const id = generateBatchIdNumber(7n);
const fields: ZoneField[] = [
  { offset: 0, size: 4, kind: 'unsigned' },
  { offset: 4, size: 2, kind: 'signed', bigEndian: true },
  { offset: 6, size: 8, kind: 'float' },
  { offset: 14, size: 2, kind: 'bytes' },
];

/** n records: u32 i*7, i16 BE 100-3i, f64 i/2-5, text "a" + letter. */
function records(n: number): Buffer {
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < n; i++) {
    const o = i * R;
    b.writeUInt32LE(i * 7, o);
    b.writeInt16BE(100 - 3 * i, o + 4);
    b.writeDoubleLE(i / 2 - 5, o + 6);
    b[o + 14] = 0x61;
    b[o + 15] = 0x61 + (i % 26);
  }
  return b;
}

function scratch(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'hd-seg-test-'));
}

async function closing(data: Buffer, blockSize: number): Promise<Buffer> {
  const c = new HashChain(id, { recordSize: R, blockSize });
  await c.update(data);
  return c.finish().closingHash;
}

async function write(dir: string, n: number, chunk = 100, name?: string) {
  const data = records(n);
  const w = SegmentWriter.create({ dir, name, datasetId: 'trades', batchId: id, recordSize: R, blockSize: 8, fields });
  const appends: Promise<void>[] = [];
  for (let i = 0; i < data.length; i += chunk) appends.push(w.append(data.subarray(i, i + chunk)));
  await Promise.all(appends);
  return { data, summary: await w.finish(await closing(data, 8)) };
}

const seg = suite('segment store');
let dir = '';
seg.before.each(() => {
  dir = scratch();
});
seg.after.each(() => {
  rmSync(dir, { recursive: true, force: true });
});

seg('SegmentWriter writes a segment that reads back and verifies', async () => {
  const { data, summary } = await write(dir, 100, 37);
  assert.is(summary.path, path.join(dir, segmentFileName(id)));
  assert.is(summary.records, 100);
  assert.is(summary.blocks, 13);
  assert.is(statSync(summary.path).size, summary.bytes);
  assert.equal(readdirSync(dir), [segmentFileName(id)]);
  const r = await SegmentReader.open(summary.path);
  assert.is(r.datasetId, 'trades');
  assert.ok(r.batchId.equals(id));
  assert.is(r.algorithm, 'sha512');
  assert.equal(r.closingHash, summary.closingHash);
  assert.equal(await r.readBlocks(), data);
  assert.equal(await r.readBlocks(12, 1), data.subarray(96 * R));
  assert.equal(await readSegment(summary.path, 2, 3), data.subarray(16 * R, 40 * R));
  const v = await verifySegment(summary.path);
  assert.ok(v.ok);
  if (v.ok) assert.equal(v.closingHash, summary.closingHash);
});

seg('zone maps and the batch filter decode to field values', async () => {
  const { summary } = await write(dir, 20);
  const r = await SegmentReader.open(summary.path);
  assert.equal(r.fields.map((f) => f.kind), ['unsigned', 'signed', 'float', 'bytes']);
  const z = r.zone(1, 0);
  assert.equal([z.min, z.max, z.empty], [56n, 105n, false]);
  const s = r.zone(1, 1);
  assert.equal([s.min, s.max], [BigInt(100 - 3 * 15), BigInt(100 - 3 * 8)]);
  const f = r.zone(0, 2);
  assert.equal([f.min, f.max], [-5, -1.5]);
  const t = r.zone(0, 3);
  assert.equal(t.min, Buffer.from([0x61, 0x61, 0, 0, 0, 0, 0, 0]));
  const batch = r.batchFilter();
  assert.equal([batch[0].min, batch[0].max], [0n, 133n]);
  assert.equal([batch[2].min, batch[2].max], [-5, 4.5]);
  assert.throws(() => r.zone(3, 0), (e: unknown) => e instanceof SegmentError && e.code === 'ERR_SEGMENT_RANGE');
  assert.not.throws(() => r.zone(2, 3));
});

seg('a wrong closing hash rejects and leaves nothing behind', async () => {
  const w = SegmentWriter.create({ dir, datasetId: 'trades', batchId: id, recordSize: R });
  await w.append(records(5));
  try {
    await w.finish(Buffer.alloc(64));
    assert.unreachable('finish must reject');
  } catch (e) {
    assert.instance(e, SegmentError);
    assert.is((e as SegmentError).code, 'ERR_SEGMENT_CLOSING_HASH');
  }
  assert.equal(readdirSync(dir), []);
});

seg('abort removes the partial file; a second writer for the same batch is refused', async () => {
  const w = SegmentWriter.create({ dir, datasetId: 'trades', batchId: id, recordSize: R });
  await w.append(records(3));
  assert.equal(readdirSync(dir), [`${segmentFileName(id)}.partial`]);
  assert.throws(
    () => SegmentWriter.create({ dir, datasetId: 'trades', batchId: id, recordSize: R }),
    (e: unknown) => e instanceof SegmentError && e.code === 'ERR_SEGMENT_EXISTS',
  );
  await w.abort();
  assert.equal(readdirSync(dir), []);
});

seg('a corrupted byte fails verification, and recovery quarantines the segment', async () => {
  const { summary } = await write(dir, 40);
  const bytes = readFileSync(summary.path);
  bytes[200] ^= 0xff; // a record byte
  writeFileSync(summary.path, bytes);
  const v = await verifySegment(summary.path);
  assert.is(v.ok, false);
  if (!v.ok) assert.is(v.code, 'ERR_SEGMENT_BLOCK_CHECKSUM');
  writeFileSync(path.join(dir, 'x.hdseg.partial'), 'half a batch');
  const good = await write(dir, 10, 100, 'good.hdseg');
  const out = await recoverSegments(dir);
  assert.equal(out.complete, [good.summary.path]);
  assert.equal(out.discarded, [path.join(dir, 'x.hdseg.partial')]);
  assert.is(out.quarantined.length, 1);
  assert.is(out.quarantined[0].path, path.join(dir, 'quarantine', segmentFileName(id)));
  assert.is(out.quarantined[0].code, 'ERR_SEGMENT_BLOCK_CHECKSUM');
  assert.ok(!existsSync(summary.path));
});

seg('a damaged footer is refused at open with a typed error', async () => {
  const { summary } = await write(dir, 10);
  const bytes = readFileSync(summary.path);
  bytes[bytes.length - 30] ^= 1;
  writeFileSync(summary.path, bytes);
  try {
    await SegmentReader.open(summary.path);
    assert.unreachable('open must reject');
  } catch (e) {
    assert.instance(e, SegmentError);
    assert.is((e as SegmentError).code, 'ERR_SEGMENT_FOOTER_CHECKSUM');
  }
  writeFileSync(summary.path, bytes.subarray(0, 50));
  const v = await verifySegment(summary.path);
  assert.equal(v.ok ? '' : v.code, 'ERR_SEGMENT_TRUNCATED');
});

seg('openCached: on this thread once the footer is cached, until the file changes; a missing file throws', async () => {
  const d = scratch();
  try {
    const { summary } = await write(d, 40, 100, 'cached.hdseg');
    assert.is(SegmentReader.openCached(summary.path), undefined, 'never opened: not cached');
    const opened = await SegmentReader.open(summary.path);
    const cached = SegmentReader.openCached(summary.path);
    assert.ok(cached);
    assert.equal([cached.records, cached.blocks, cached.batchFilter()], [opened.records, opened.blocks, opened.batchFilter()]);
    assert.ok((await cached.readBlocks()).equals(await opened.readBlocks()));
    // The same path written again: another file, not served from the cache.
    rmSync(summary.path);
    await write(d, 24, 100, 'cached.hdseg');
    assert.is(SegmentReader.openCached(summary.path), undefined);
    assert.is((await SegmentReader.open(summary.path)).records, 24);
    assert.throws(
      () => SegmentReader.openCached(path.join(d, 'missing.hdseg')),
      (e: unknown) => e instanceof SegmentError && e.code === 'ERR_SEGMENT_IO',
    );
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

seg.run();
