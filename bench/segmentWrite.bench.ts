/**
 * Segment writes, buffered against direct (O_DIRECT) and uring (O_DIRECT through io_uring;
 * docs/segment.md, "Direct I/O"), against the disk's own limit in the same run: each round writes
 * one segment of `--mb` MiB of 150-byte records per mode (appended in 1 MiB chunks, as a Storage
 * Node appends what arrives; finish = footer, fsync, rename, fsync of the directory), then `dd` of
 * the same size (no hashing) with `oflag=direct conv=fsync` (the disk's limit for large durable
 * sequential writes) and with `conv=fsync` (buffered). Modes run in turn within a round, so load
 * changes hit all alike. Prints every round, the median MB/s per mode and the writer process's
 * median CPU seconds per GB (the page cache's writeback runs in kernel threads, outside it).
 *
 * The segment writer hashes every record on the way (`--algorithm`, default blake3, the cheapest,
 * so the I/O shows; sha512 is what a Storage Node runs by default).
 *
 * `npx tsx bench/segmentWrite.bench.ts [--dir DIR] [--mb 512] [--runs 5] [--algorithm blake3|sha256|sha512]`
 * DIR must be on the disk to measure; a tmpfs (RAM) is refused.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber, isHashAlgorithm, SegmentWriter, uringIoRefusal, type HashAlgorithmName, type SegmentIo } from '../engine-rs/index';
import { median } from './peers/workload';

const RS = 150;
const CHUNK = 1 << 20;
const TMPFS_MAGIC = 0x01021994;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

/**
 * One segment of `data` written with `io`; MB/s (10^6 bytes) over create .. durable finish, and this
 * process's CPU seconds (user + system, every thread) per GB written.
 */
async function segmentRun(dir: string, data: Buffer, io: SegmentIo, algorithm: HashAlgorithmName, n: number): Promise<{ mbs: number; cpu: number; io: SegmentIo }> {
  const name = `b${n}.hdseg`;
  const cpu0 = process.cpuUsage();
  const t = process.hrtime.bigint();
  const w = SegmentWriter.create({ dir, name, datasetId: 'bench', batchId: generateBatchIdNumber(BigInt(n + 1)), recordSize: RS, blockSize: 64, algorithm, io });
  for (let at = 0; at < data.length; at += CHUNK) await w.append(data.subarray(at, at + CHUNK));
  const s = await w.finish(null);
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  rmSync(s.path);
  return { mbs: s.bytes / 1e3 / ms, cpu: (cpu.user + cpu.system) / 1e6 / (s.bytes / 1e9), io: w.io };
}

/** `dd` of `mib` MiB of zeros in 4 MiB writes with the given flags; MB/s from our own clock. */
function ddRun(dir: string, mib: number, flags: string[]): number {
  const file = path.join(dir, 'dd.out');
  const t = process.hrtime.bigint();
  const r = spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=4M', `count=${mib / 4}`, ...flags], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  rmSync(file, { force: true });
  if (r.status !== 0) throw new Error(`dd ${flags.join(' ')} failed: ${r.stderr}`);
  return (mib * 1024 * 1024) / 1e3 / ms;
}

async function main(): Promise<void> {
  const mib = Math.max(4, Math.round(Number(arg('mb', '512')) / 4) * 4);
  const runs = Number(arg('runs', '5'));
  const algorithm = arg('algorithm', 'blake3');
  if (!isHashAlgorithm(algorithm)) throw new Error(`--algorithm must be blake3, sha256 or sha512, got ${algorithm}`);
  const base = arg('dir', os.tmpdir());
  if (statfsSync(base).type === TMPFS_MAGIC) throw new Error(`${base} is a tmpfs (RAM): pass --dir on the disk to measure`);
  const dir = mkdtempSync(path.join(base, 'hd-segment-write-bench-'));
  const records = Math.floor((mib * 1024 * 1024) / RS);
  const data = Buffer.alloc(records * RS);
  for (let i = 0; i + 4 <= data.length; i += 8) data.writeUInt32LE((i * 2654435761) >>> 0, i);
  const modes = ['segment buffered', 'segment direct', 'segment uring', 'dd oflag=direct conv=fsync', 'dd conv=fsync'] as const;
  const results = new Map<string, number[]>(modes.map((m) => [m, []]));
  const cpu = new Map<string, number[]>(modes.slice(0, 3).map((m) => [m, []]));
  console.log(`segment writes of ${(data.length / 1e6).toFixed(0)} MB (${records} records of ${RS} B, ${algorithm} chain) in ${dir}; ${runs} rounds; load ${os.loadavg()[0].toFixed(2)}`);
  try {
    for (let r = 0; r < runs; r++) {
      const b = await segmentRun(dir, data, 'buffered', algorithm, 3 * r);
      const d = await segmentRun(dir, data, 'direct', algorithm, 3 * r + 1);
      if (d.io !== 'direct') throw new Error(`${dir}: the file system refuses O_DIRECT; pass --dir on one that takes it`);
      const u = await segmentRun(dir, data, 'uring', algorithm, 3 * r + 2);
      if (u.io !== 'uring') throw new Error(`${dir}: io_uring is refused here (${uringIoRefusal(dir) ?? 'by the writer'})`);
      const row = [b.mbs, d.mbs, u.mbs, ddRun(dir, mib, ['oflag=direct', 'conv=fsync']), ddRun(dir, mib, ['conv=fsync'])];
      row.forEach((v, i) => results.get(modes[i])?.push(v));
      [b, d, u].forEach((x, i) => cpu.get(modes[i])?.push(x.cpu));
      console.log(`round ${r + 1}: ${modes.map((m, i) => `${m} ${row[i].toFixed(0)} MB/s`).join(', ')}; CPU s/GB ${[b, d, u].map((x) => x.cpu.toFixed(2)).join(' / ')}`);
    }
    console.log(`median: ${modes.map((m) => `${m} ${median(results.get(m) ?? []).toFixed(0)} MB/s`).join(', ')}`);
    console.log(`median CPU of this process per GB (user + system): ${[...cpu].map(([m, v]) => `${m} ${median(v).toFixed(2)} s`).join(', ')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});
