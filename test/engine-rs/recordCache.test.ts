/**
 * The record cache (engine-rs `segment::record_cache`, engine-rs/recordCache.ts): a second scan of
 * an unchanged segment read twice finds its pieces in memory from then on and answers the same; a rewritten file is read
 * afresh; a limit of 0 keeps nothing; verify_hash audits read the file; bad limits are refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_RECORD_CACHE_BYTES, generateBatchIdNumber, HashChain, recordCacheStats, ScanFilter, Schema, SegmentScanner, SegmentWriter, setRecordCacheBytes, zoneFieldsOf } from '../../engine-rs/index';
import { layout, Rng, schemaJson, writeRandom } from './scanReference';

const { fields, recordSize: R } = layout();
const schema = Schema.parse(schemaJson('little'));
const id = generateBatchIdNumber(7n);
const BLOCK = 64;
const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-record-cache-'));

function records(n: number, seed: number): Buffer {
  const rng = new Rng(seed);
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < n; i++) for (const f of fields) writeRandom(rng, b.subarray(i * R, (i + 1) * R), f, 'little');
  return b;
}

async function write(name: string, data: Buffer): Promise<string> {
  const w = SegmentWriter.create({ dir, name, datasetId: 'every', batchId: id, recordSize: R, blockSize: BLOCK, algorithm: 'sha256', fields: zoneFieldsOf(schema) });
  await w.append(data);
  const c = new HashChain(id, { algorithm: 'sha256', recordSize: R, blockSize: BLOCK });
  await c.update(data);
  return (await w.finish(c.finish().closingHash)).path;
}

async function scan(file: string, verifyHash = false, filter = ScanFilter.compile(schema, '[]')): Promise<Buffer> {
  const s = await SegmentScanner.open(file, filter, { verifyHash });
  const out: Buffer[] = [];
  try {
    for (;;) {
      const st = await s.next(1000);
      out.push(st.records);
      if (st.done) break;
    }
  } finally {
    s.close();
  }
  return Buffer.concat(out);
}

const c = suite('record cache');
c.after(() => {
  setRecordCacheBytes(DEFAULT_RECORD_CACHE_BYTES);
  rmSync(dir, { recursive: true, force: true });
});

c('on by default: an unchanged segment read twice is kept, then served from memory with the same records', async () => {
  assert.is(recordCacheStats().limit, DEFAULT_RECORD_CACHE_BYTES);
  const data = records(20_000, 1);
  const file = await write('a.hdseg', data);
  const before = recordCacheStats();
  assert.ok((await scan(file)).equals(data));
  assert.is(recordCacheStats().bytes, before.bytes, 'read once: nothing kept yet');
  assert.ok((await scan(file)).equals(data));
  const read = recordCacheStats();
  assert.ok(read.misses > before.misses, 'the first scans read the file');
  assert.ok(read.bytes >= before.bytes + data.length, `${read.bytes} bytes kept`);
  assert.ok((await scan(file)).equals(data));
  const again = recordCacheStats();
  assert.is(again.misses, read.misses, 'nothing read the second time');
  assert.is(2 * (again.hits - read.hits), read.misses - before.misses, 'every piece found');
  // An audit reads the file, whatever the cache holds.
  await scan(file, true);
  assert.is(recordCacheStats().hits, again.hits);
});

c('a filter loading a few bytes of each record runs over narrow copies of kept pieces, with the same answer', async () => {
  const data = records(20_000, 5);
  const file = await write('n.hdseg', data);
  const filter = ScanFilter.compile(schema, JSON.stringify([{ filters: [{ field: 'proto', op: 'eq', value: '6' }] }]));
  const matching = (): Promise<Buffer> => scan(file, false, filter);
  const want = await matching();
  assert.ok(want.length > 0 && want.length < data.length, 'some records match');
  await matching();
  const before = recordCacheStats();
  // Kept on the second read: the third makes the narrow copies and runs the filter over them.
  assert.ok((await matching()).equals(want));
  const after = recordCacheStats();
  assert.ok(after.narrowPieces > before.narrowPieces, `${after.narrowPieces} narrow copies`);
  assert.ok(after.narrowBytes > before.narrowBytes && after.narrowBytes * 8 <= after.limit);
  assert.ok((await matching()).equals(want), 'and from them again');
  assert.is(recordCacheStats().narrowPieces, after.narrowPieces, 'made once');
});

c('a segment written again under the same name is read afresh', async () => {
  const file = await write('b.hdseg', records(5_000, 2));
  await scan(file);
  await scan(file);
  rmSync(file);
  const other = records(5_000, 3);
  await write('b.hdseg', other);
  const before = recordCacheStats();
  assert.ok((await scan(file)).equals(other));
  assert.ok(recordCacheStats().misses > before.misses);
});

c('a limit of 0 drops everything and keeps nothing; a lower limit evicts at once; bad limits are refused', async () => {
  const data = records(20_000, 4);
  const file = await write('c.hdseg', data);
  await scan(file);
  await scan(file);
  assert.ok(recordCacheStats().bytes >= data.length);
  assert.is(setRecordCacheBytes(R * 1000), R * 1000);
  assert.ok(recordCacheStats().bytes <= R * 1000);
  assert.is(setRecordCacheBytes(0), 0);
  assert.equal([recordCacheStats().bytes, recordCacheStats().pieces, recordCacheStats().narrowBytes], [0, 0, 0]);
  const before = recordCacheStats();
  assert.ok((await scan(file)).equals(data));
  assert.equal([recordCacheStats().hits, recordCacheStats().bytes], [before.hits, 0]);
  for (const bad of [-1, 1.5, Number.NaN, Infinity]) {
    assert.throws(() => setRecordCacheBytes(bad), (e: Error & { code?: string }) => e.code === 'ERR_INVALID_ARG', String(bad));
  }
  setRecordCacheBytes(DEFAULT_RECORD_CACHE_BYTES);
});

c.run();
