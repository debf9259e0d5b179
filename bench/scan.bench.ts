/**
 * Storage Node pushdown scan: 150-byte network-flow records (bench/flows.ts) in segments (page
 * cache), a query of a time range plus two predicates (proto = tcp, bytes > 2·10^12). Throughput in GB/s of records
 * covered, one core (one scanner at a time; each step a Neon task on one pool thread), beside the
 * plain memory read of the same bytes measured in the same run (`memoryReadBaseline`: every byte
 * loaded once, natively) and a plain read of the same segment files from the page cache.
 *
 * Two datasets: time in random order (zone maps cannot skip: the kernel's own speed) and time
 * ascending (zone maps skip the blocks outside the range). Median and best of 7 runs (the
 * best is the steadier figure on a shared machine).
 *   npx tsx bench/scan.bench.ts [records]     (default 2 000 000 = 300 MB; HD_BENCH_DIR: the disk)
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  evaluateFilter,
  generateBatchIdNumber,
  memoryReadBaseline,
  ScanFilter,
  Schema,
  SegmentScanner,
  SegmentWriter,
  zoneFieldsOf,
} from '../engine-rs/index';
import { FLOW, generate } from './flows';

const N = Number(process.argv[2] ?? 2_000_000);
const RUNS = 7;
const R = 150;
const PER_SEGMENT = 250_000; // 37.5 MB segments, 64-record blocks
const T0 = 1_700_000_000;
const SPAN = 3600;

/** The benchmarks' 150-byte network flow (bench/flows.ts). */
const schema = Schema.parse(FLOW);

/** The query: 15 minutes of the hour, TCP, more than 2·10^12 bytes. */
const QUERY = JSON.stringify([
  {
    filters: [
      { field: 'ts', op: 'between', values: [String(T0 + 1200), String(T0 + 2099)] },
      { field: 'proto', op: 'eq', value: '6' },
      { field: 'bytes', op: 'gt', value: '2000000000000' },
    ],
  },
]);

/** bench/flows.ts records with their time spread over one hour, in random order or ascending. */
function flows(n: number, sorted: boolean): Buffer {
  const b = generate(n);
  let x = 0x2545f491;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const t = sorted ? Math.floor((i * SPAN) / n) : (x >>> 0) % SPAN;
    b.writeBigInt64LE(BigInt(T0 + t), i * R);
  }
  return b;
}

async function writeSegments(dir: string, data: Buffer): Promise<string[]> {
  const fields = zoneFieldsOf(schema);
  const files: string[] = [];
  for (let s = 0; s * PER_SEGMENT < data.length / R; s++) {
    const w = SegmentWriter.create({ dir, datasetId: schema.id, batchId: generateBatchIdNumber(BigInt(s + 1)), recordSize: R, algorithm: 'sha256', fields });
    await w.append(data.subarray(s * PER_SEGMENT * R, (s + 1) * PER_SEGMENT * R));
    files.push((await w.finish()).path);
  }
  return files;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median and best wall time of RUNS runs, in ms. */
async function timed(fn: () => Promise<unknown> | unknown): Promise<[number, number]> {
  const ms: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return [median(ms), Math.min(...ms)];
}

async function scanFiles(files: string[], filter: ScanFilter, maxBlocks: number): Promise<{ matched: number; skipped: number }> {
  let matched = 0;
  let skipped = 0;
  for (const f of files) {
    const s = await SegmentScanner.open(f, filter);
    for (;;) {
      const st = await s.next(maxBlocks);
      matched += st.matched;
      skipped += st.blocksSkipped;
      if (st.done) break;
    }
    s.close();
  }
  return { matched, skipped };
}

/** Reads the files from the page cache into one reused buffer (what the scanner's reads cost). */
function readFiles(files: string[], buf: Buffer): void {
  for (const f of files) {
    const fd = openSync(f, 'r');
    while (readSync(fd, buf, 0, buf.length, null) > 0);
    closeSync(fd);
  }
}

(async () => {
  const filter = ScanFilter.compile(schema, QUERY);
  const gb = (N * R) / 1e9;
  const rate = (ms: number) => gb / (ms / 1e3);
  console.log(`${N} records of ${R} bytes (${(gb * 1e3).toFixed(0)} MB), ${Math.ceil(N / PER_SEGMENT)} segments, medians of ${RUNS}`);
  console.log(`query: ${QUERY}\n`);
  const rows: [string, [number, number], [number, number]][] = [];
  const dir = mkdtempSync(path.join(process.env.HD_BENCH_DIR ?? os.tmpdir(), 'hd-scan-bench-'));
  try {
    for (const sorted of [false, true]) {
      const data = flows(N, sorted);
      const tag = sorted ? 'time ascending' : 'time in random order';
      const sub = path.join(dir, sorted ? 'sorted' : 'random');
      rmSync(sub, { recursive: true, force: true });
      mkdirSync(sub);
      const files = await writeSegments(sub, data);
      const readBuf = Buffer.alloc(16 << 20);
      readFiles(files, readBuf); // into the page cache

      const mem = await timed(() => memoryReadBaseline(data));
      const kernel = await timed(() => evaluateFilter(filter, data));
      const want = evaluateFilter(filter, data).length / R;
      let result = { matched: 0, skipped: 0 };
      const scan = await timed(async () => {
        result = await scanFiles(files, filter, 256);
      });
      const scanBig = await timed(() => scanFiles(files, filter, 1024));
      const cache = await timed(() => readFiles(files, readBuf));
      if (result.matched !== want) throw new Error(`scan matched ${result.matched}, the kernel ${want}`);

      console.log(`${tag}: ${want} of ${N} records match (${((100 * want) / N).toFixed(1)}%), ${result.skipped} blocks of ${Math.ceil(N / 64)} skipped by zone maps`);
      rows.push([`${tag}: memory read of the records (baseline)`, mem, mem]);
      rows.push([`${tag}: kernel, evaluateFilter over the records in memory`, kernel, mem]);
      rows.push([`${tag}: SegmentScanner over the segments, 256 blocks a step`, scan, mem]);
      rows.push([`${tag}: SegmentScanner, 1024 blocks a step`, scanBig, mem]);
      rows.push([`${tag}: read of the segment files from the page cache`, cache, mem]);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pct = (ms: number, base: number) => `${((100 * base) / ms).toFixed(0)}%`;
  console.log('\n| path | median ms | GB/s (median) | GB/s (best) | vs memory read (median / best) |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, [med, best], [mMed, mBest]] of rows) {
    console.log(`| ${name} | ${med.toFixed(1)} | ${rate(med).toFixed(2)} | ${rate(best).toFixed(2)} | ${pct(med, mMed)} / ${pct(best, mBest)} |`);
  }
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
