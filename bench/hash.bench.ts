/**
 * Hash chain and segment writes. Chain throughput of each algorithm over 150-byte records
 * (HashChain, 4 MiB updates, one at a time so one worker core hashes), beside the raw hash of the
 * same bytes in 64 KiB buffers: node:crypto for sha512/sha256, and natively for all three (a
 * chain whose "records" are 64 KiB, so its per-record overhead is nil). Then sequential segment
 * writes (SegmentWriter with the sha512 chain, 4 MiB appends, finish = footer + fsync + rename +
 * fsync dir) beside plain fs.writeSync of the same bytes + fsync. Medians of 5.
 * Run: `npx tsx bench/hash.bench.ts [MiB]`; HD_BENCH_DIR picks the disk for the write test.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber, HashChain, SegmentWriter, type HashAlgorithmName } from '../engine-rs/index';

const MIB = Number(process.argv[2] ?? 64);
const RUNS = 5;
const RECORD = 150;
const CHUNK = 4 << 20;
const RAW_BUF = 64 << 10;
const id = generateBatchIdNumber(1n);

const records = Math.floor((MIB << 20) / RECORD);
const data = Buffer.alloc(records * RECORD);
for (let i = 0, x = 7; i < data.length; i++) {
  x = (x * 1103515245 + 12345) >>> 0;
  data[i] = x >>> 24;
}
const chunks: Buffer[] = [];
for (let i = 0; i < data.length; i += CHUNK) chunks.push(data.subarray(i, i + CHUNK));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timed(fn: () => Promise<void> | void): Promise<number> {
  const ms: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(ms);
}

async function chain(algorithm: HashAlgorithmName, recordSize: number): Promise<void> {
  const c = new HashChain(id, { algorithm, recordSize, blockSize: 64 });
  for (const ch of chunks) await c.update(ch);
  c.finish();
}

function cryptoRaw(alg: 'sha512' | 'sha256'): void {
  const h = createHash(alg);
  for (let i = 0; i < data.length; i += RAW_BUF) h.update(data.subarray(i, i + RAW_BUF));
  h.digest();
}

const rows: [string, number, number][] = [];
const mbps = (ms: number) => data.length / 1e6 / (ms / 1e3);

(async () => {
  console.log(`${records} records of ${RECORD} bytes (${(data.length / 1e6).toFixed(1)} MB), medians of ${RUNS}\n`);
  const chainMs: Record<string, number> = {};
  for (const alg of ['sha512', 'sha256', 'blake3'] as const) {
    chainMs[alg] = await timed(() => chain(alg, RECORD));
    const native = await timed(() => chain(alg, RAW_BUF));
    rows.push([`chain ${alg} (150-byte records, block 64)`, chainMs[alg], 1]);
    rows.push([`  raw ${alg}, native, 64 KiB buffers`, native, native / chainMs[alg]]);
    if (alg !== 'blake3') {
      const raw = await timed(() => cryptoRaw(alg));
      rows.push([`  raw ${alg}, node:crypto, 64 KiB buffers`, raw, raw / chainMs[alg]]);
    }
  }

  const dir = mkdtempSync(path.join(process.env.HD_BENCH_DIR ?? os.tmpdir(), 'hd-hash-bench-'));
  let n = 0;
  const seg = await timed(async () => {
    const w = SegmentWriter.create({ dir, name: `b${n++}.hdseg`, datasetId: 'bench', batchId: id, recordSize: RECORD });
    for (const ch of chunks) await w.append(ch);
    await w.finish();
  });
  const plain = await timed(() => {
    const fd = openSync(path.join(dir, `plain${n++}`), 'w');
    for (const ch of chunks) writeSync(fd, ch);
    fsyncSync(fd);
    closeSync(fd);
  });
  rmSync(dir, { recursive: true, force: true });
  rows.push(['segment write, sha512 chain + fsync + rename', seg, 1]);
  rows.push(['  plain writeSync + fsync, same bytes', plain, plain / seg]);

  console.log('| path | median ms | MB/s | time vs first row of group |');
  console.log('|---|---:|---:|---:|');
  for (const [name, ms, ratio] of rows) {
    console.log(`| ${name} | ${ms.toFixed(0)} | ${mbps(ms).toFixed(0)} | ${ratio.toFixed(2)} |`);
  }
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
