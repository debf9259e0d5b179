/**
 * Hash chain and segment writes. Chain throughput of each algorithm over 150-byte records
 * (HashChain, 4 MiB updates, one at a time so one worker core hashes), beside the raw hash of the
 * same bytes in 64 KiB buffers: node:crypto for sha512/sha256, and natively for all three (a
 * chain whose "records" are 64 KiB, so its per-record overhead is nil). Then sequential segment
 * writes (SegmentWriter with the sha512 chain, 4 MiB appends, finish = footer + fsync + rename +
 * fsync dir) beside plain fs.writeSync of the same bytes + fsync. Medians of 5. These rows run
 * with one hashing thread (setHashThreads(1)): one chain core.
 *
 * Then the parallel chain (issue #22): the sha512 chain of the same records in 1 MiB updates (an
 * HDWP frame) with 1, 2, ... os.availableParallelism() hashing threads, records/s and GB/s, and its
 * speed-up over one thread (medians of 15 runs, the thread counts interleaved), with the CPU time
 * it took on all threads (on a machine shared with other work, more threads also win a larger
 * share of the cores: the CPU column tells that apart from overhead).
 * Run: `npx tsx bench/hash.bench.ts [MiB]`; HD_BENCH_DIR picks the disk for the write test.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber, HashChain, SegmentWriter, setHashThreads, type HashAlgorithmName } from '../engine-rs/index';

const MIB = Number(process.argv[2] ?? 64);
const RUNS = 5;
/** Runs of each thread count in the parallel chain's sweep, interleaved. */
const SWEEP_RUNS = 15;
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
const chunksOf = (size: number): Buffer[] => {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) out.push(data.subarray(i, i + size));
  return out;
};
const chunks = chunksOf(CHUNK);
const FRAME = 1 << 20;
const frames = chunksOf(FRAME);

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

async function chain(algorithm: HashAlgorithmName, recordSize: number, parts = chunks): Promise<void> {
  const c = new HashChain(id, { algorithm, recordSize, blockSize: 64 });
  for (const ch of parts) await c.update(ch);
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
  console.log(`${records} records of ${RECORD} bytes (${(data.length / 1e6).toFixed(1)} MB), medians of ${RUNS}; ${os.availableParallelism()} cores\n`);
  setHashThreads(1);
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

  // The parallel chain: record hashes on the pool, block hashes chained in order (issue #22).
  console.log(`\nsha512 chain, 150-byte records, block 64, 1 MiB updates, by hashing threads (setHashThreads):\n`);
  // Thread counts interleaved run by run, so a machine shared with other work loads each alike.
  const counts = Array.from({ length: os.availableParallelism() }, (_, i) => i + 1);
  const ms = new Map<number, number[]>(counts.map((t) => [t, []]));
  const cpu = new Map<number, number[]>(counts.map((t) => [t, []]));
  for (let r = 0; r < SWEEP_RUNS; r++) {
    for (const t of counts) {
      setHashThreads(t);
      const [t0, c0] = [process.hrtime.bigint(), process.cpuUsage()];
      await chain('sha512', RECORD, frames);
      ms.get(t)?.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const c = process.cpuUsage(c0);
      cpu.get(t)?.push((c.user + c.system) / 1e3);
    }
  }
  console.log(`| hashing threads | median ms of ${SWEEP_RUNS} | records/s | GB/s | vs 1 thread | CPU ms (all threads) |`);
  console.log('|---:|---:|---:|---:|---:|---:|');
  const one = median(ms.get(1) ?? []);
  for (const t of counts) {
    const m = median(ms.get(t) ?? []);
    console.log(`| ${t} | ${m.toFixed(0)} | ${Math.round(records / (m / 1e3)).toLocaleString('en-US')} | ${(data.length / 1e9 / (m / 1e3)).toFixed(3)} | ${(one / m).toFixed(2)} | ${median(cpu.get(t) ?? []).toFixed(0)} |`);
  }
  setHashThreads(0);
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
