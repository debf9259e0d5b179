/**
 * The record cache (engine-rs `segment::record_cache`, issue #17): one thread scanning 40 one-minute
 * batches of 30 000 flow records (4.5 MB each) with a filter on two small fields, the way a Storage
 * Node's read step does, in three modes taken in turn: `off` (limit 0: read from the file, CRC
 * checked, every time), `one pass` (a limit far below the data: every piece a first read, as a scan
 * over more than the cache holds), and `kept` (every piece kept after two reads). Reports per batch,
 * min and median of 8 passes, per round. `npx tsx bench/recordCache.bench.ts [--rounds R]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber, HashChain, ScanFilter, Schema, SegmentScanner, SegmentWriter, setRecordCacheBytes, zoneFieldsOf } from '../engine-rs/index';
import { makeDataset } from './peers/dataset';
import { FLOWS_SCHEMA } from './peers/hd';
import { median } from './peers/workload';

const BATCHES = 40;
const PER_BATCH = 30_000;
const RS = 150;

/** Writes the batches as segments the way a Storage Node does (sha512 chain, 64-record blocks, zones). */
async function writeBatches(dir: string, schema: Schema): Promise<string[]> {
  const d = makeDataset(BATCHES * PER_BATCH);
  const files: string[] = [];
  for (let k = 0; k < BATCHES; k++) {
    const id = generateBatchIdNumber(BigInt(k + 1));
    const data = d.records.subarray(k * PER_BATCH * RS, (k + 1) * PER_BATCH * RS);
    const w = SegmentWriter.create({ dir, name: `b${k}.hdseg`, datasetId: 'flows', batchId: id, recordSize: RS, blockSize: 64, algorithm: 'sha512', fields: zoneFieldsOf(schema) });
    await w.append(data);
    const c = new HashChain(id, { algorithm: 'sha512', recordSize: RS, blockSize: 64 });
    await c.update(data);
    files.push((await w.finish(c.finish().closingHash)).path);
  }
  return files;
}

/** One pass over every batch; ms per batch. */
async function pass(files: readonly string[], filter: ScanFilter): Promise<number> {
  const t = process.hrtime.bigint();
  for (const file of files) {
    const s = await SegmentScanner.open(file, filter);
    while (!(await s.next(1000)).done);
    s.close();
  }
  return Number(process.hrtime.bigint() - t) / 1e6 / files.length;
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--rounds');
  const rounds = i >= 0 ? Number(process.argv[i + 1]) : 3;
  const schema = Schema.parse(FLOWS_SCHEMA);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-record-cache-bench-'));
  try {
    const files = await writeBatches(dir, schema);
    // proto = udp (17) and dport = 22: two small fields of each 150-byte record.
    const filter = ScanFilter.compile(schema, JSON.stringify([{ filters: [{ field: 'proto', op: 'eq', value: '17' }, { field: 'dport', op: 'eq', value: '22' }] }]));
    const modes: [string, number][] = [['off', 0], ['one pass', 8 << 20], ['kept', 1 << 30]];
    for (let r = 0; r < rounds; r++) {
      for (const [name, limit] of modes) {
        setRecordCacheBytes(limit);
        if (name === 'kept') for (let w = 0; w < 2; w++) await pass(files, filter);
        const ts: number[] = [];
        for (let k = 0; k < 8; k++) ts.push(await pass(files, filter));
        console.log(`round ${r + 1} ${name.padEnd(8)}: min ${Math.min(...ts).toFixed(3)} ms, median ${median(ts).toFixed(3)} ms per 4.5 MB batch`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
