/**
 * NORM vs TCP replication (docs/replication-norm.md; figures in docs/BENCHMARKS.md, "Issue #22: NORM
 * replication"): the SCC's replica set sends BATCHES batches of BATCH_MB MiB to 1, 2 and 4 real
 * Storage Nodes (`hd run pipelines/storage-node.yaml` processes) and waits for every eob to be
 * durable on all of them. Reported per mode and replica count: end-to-end durable ingest (MB/s of
 * record bytes) and the bytes sent on the namespace's loopback per record byte (every packet: TCP
 * frames and acknowledgements, NORM datagrams with their repairs and NACKs) — the SCC's send cost.
 *
 * Run: `npx tsx bench/normReplication.bench.ts` — it re-executes itself in a network namespace
 * (`unshare --net`, multicast on loopback; root or user namespaces needed).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber } from '../engine-rs/batchId';
import { NormReplication } from '../nodes/scc/normReplication';
import { ReplicaSet } from '../nodes/scc/replicas';
import { recordChunk, type BatchedRecordChunk } from '../stream/chunk';
import { freePort, startHd, waitForPort, type HdProcess } from '../test/support/hdProcess';

const R = 150;
const BATCHES = Number(process.env.BATCHES ?? 6);
const BATCH_MB = Number(process.env.BATCH_MB ?? 8);
const CHUNK = Math.floor((1 << 20) / R) * R;
const RATE = process.env.NORM_TX_RATE ?? '400000000';

/** Bytes sent on the namespace's loopback: every packet between the SCC side and the nodes (data, repairs, acknowledgements). */
const loBytes = (): number => Number(/^\s*lo:\s*(?:\d+\s+){8}(\d+)/m.exec(readFileSync('/proc/net/dev', 'utf8'))?.[1] ?? NaN);

async function round(mode: 'tcp' | 'norm', n: number, port: number): Promise<{ mbps: number; wirePerByte: number }> {
  const env = { REPLICATION: mode, NORM_INTERFACE: 'lo', NORM_PORT: String(port), HASH_ALGORITHM: 'sha256', HASH_CHAIN_BLOCK_SIZE: '64' };
  const sns: { hd: HdProcess; prod: number; dir: string }[] = [];
  for (let i = 0; i < n; i++) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-normbench-'));
    const prod = await freePort();
    const file = path.join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ node_name: `sn${i + 1}`, production_ip: '127.0.0.1', production_port: prod, command_port: await freePort(), observability_port: await freePort(), reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }));
    const hd = startHd(['run', 'pipelines/storage-node.yaml', '--config', file, '--quiet'], env);
    await waitForPort('127.0.0.1', prod, hd, 60_000);
    sns.push({ hd, prod, dir });
  }
  const norm = mode === 'norm' ? new NormReplication({ group: '239.192.0.88', port, interface: 'lo', segmentSize: 1200, txRateBps: Number(RATE) }) : undefined;
  const replicas = new ReplicaSet({ targets: sns.map((s, i) => ({ name: `sn${i + 1}`, host: '127.0.0.1', controlPort: 1, prodPort: s.prod })), recordSize: R, ...(norm && { norm }) });
  const data = Buffer.alloc(Math.floor((BATCH_MB << 20) / R) * R);
  for (let i = 0; i < data.length; i++) data[i] = (i * 13) & 0xff;
  // One warm-up batch (connections, NORM's first GRTT probes), not counted.
  const send = async (k: number): Promise<void> => {
    const id = generateBatchIdNumber(k);
    for (let off = 0; off < data.length; off += CHUNK) {
      const buf = data.subarray(off, Math.min(off + CHUNK, data.length));
      await replicas.records(recordChunk('ds', R, buf.length / R, buf, id) as BatchedRecordChunk);
    }
    const res = await replicas.eob({ kind: 'eob', dataset: 'ds', batchId: id, recordCount: data.length / R });
    if (!res.ok) throw new Error(`batch ${k}: ${res.message}`);
  };
  let secs: number;
  let wire: number;
  try {
    await send(1);
    const w0 = loBytes();
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: BATCHES }, (_, i) => send(i + 2)));
    secs = Number(process.hrtime.bigint() - t0) / 1e9;
    wire = loBytes() - w0;
  } finally {
    await replicas.close();
    for (const s of sns) {
      await s.hd.stop(5000);
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
  const bytes = BATCHES * data.length;
  return { mbps: bytes / 1e6 / secs, wirePerByte: wire / bytes };
}

async function main(): Promise<void> {
  console.log(`NORM vs TCP replication: ${BATCHES} batches of ${BATCH_MB} MiB (150-byte records), durable on every replica; NORM at ${Number(RATE) / 1e6} Mbit/s, 1200-byte segments; ${os.cpus().length} cores`);
  console.log('| replicas | mode | durable ingest MB/s | bytes on the wire per record byte |');
  console.log('|---|---|---|---|');
  let port = 6988;
  for (const n of [1, 2, 4]) {
    for (const mode of ['tcp', 'norm'] as const) {
      const r = await round(mode, n, port++);
      console.log(`| ${n} | ${mode} | ${r.mbps.toFixed(1)} | ${r.wirePerByte.toFixed(2)} |`);
    }
  }
}

if (process.env.HD_BENCH_NETNS === '1') {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  const setup = 'set -e; ip link set lo up; ip link set lo multicast on; ip route add 224.0.0.0/4 dev lo; export HD_BENCH_NETNS=1; exec "$0" -r tsx/cjs "$1"';
  const args = process.getuid?.() === 0 ? ['--net'] : ['--net', '--map-root-user'];
  const r = spawnSync('unshare', [...args, 'sh', '-c', setup, process.execPath, __filename], { stdio: 'inherit', cwd: path.resolve(__dirname, '..') });
  process.exit(r.status ?? 1);
}
