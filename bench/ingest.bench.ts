/**
 * End-to-end durable ingest: one client → an SCC → two Storage Node replicas, all real `hd run`
 * processes on loopback (pipelines/scc.yaml, pipelines/storage-node.yaml), sha512 chain, every
 * batch fsynced at its end-of-batch on both replicas before it is acknowledged. 150-byte records.
 *
 * The cluster runs once per HASH_THREADS value, in the same run (issue #22): 1 (every chain on its
 * own thread: one SHA-512 core per chain) and 0 (the default: one hashing thread per core), each
 * value `rounds` times, alternating; each round starts fresh processes.
 *
 * Beside it, in the same run, the raw limits it is measured against:
 *   - sha512 of one core: `HashChain` (engine-rs) over the same records, 4 MiB updates, one
 *     hashing thread; and the same with one hashing thread per core;
 *   - the disk: the same bytes written to the same directory, one file per batch, fsync at the end
 *     of each (once for one copy; the two replicas share the disk here, so they write it twice).
 *
 * Run: `npx tsx bench/ingest.bench.ts [records] [batch records] [rounds]` (defaults 2 000 000,
 * 100 000 and 1);
 * HD_BENCH_DIR picks the disk. The client sends batch after batch without waiting for acks (at most
 * 4 unanswered), as an ingester does; the time runs from the first byte to the last durable ack.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber, HashChain, setHashThreads, type BatchID, type EobFrame } from '../engine-rs/index';
import { HdwpClient } from '../hdwp/hdwpClient';
import { freePort, startHd, waitForPort, type HdProcess } from '../test/support/hdProcess';

const RECORDS = Number(process.argv[2] ?? 2_000_000);
const BATCH = Number(process.argv[3] ?? 100_000);
const ROUNDS = Number(process.argv[4] ?? 1);
/** HASH_THREADS of the cluster's processes, each run in turn. */
const HASH_THREADS = ['1', '0'] as const;
const RECORD = 150;
const SEND = 4 << 20;
const MAX_UNACKED = 4;
const HOST = '127.0.0.1';

const data = Buffer.alloc(RECORDS * RECORD);
for (let i = 0, x = 11; i < data.length; i++) {
  x = (x * 1103515245 + 12345) >>> 0;
  data[i] = x >>> 24;
}
const batches: { id: BatchID; buf: Buffer }[] = [];
for (let at = 0, n = 1; at < data.length; at += BATCH * RECORD, n++) batches.push({ id: generateBatchIdNumber(n), buf: data.subarray(at, at + BATCH * RECORD) });

const base = mkdtempSync(path.join(process.env.HD_BENCH_DIR ?? os.tmpdir(), 'hd-ingest-bench-'));
const mb = (bytes: number, ms: number): number => bytes / 1e6 / (ms / 1e3);
const since = (t: bigint): number => Number(process.hrtime.bigint() - t) / 1e6;

/** sha512 chain of every batch, as the SCC and each Storage Node compute it, on `threads` hashing threads (0: one per core). */
async function rawHash(threads: number): Promise<number> {
  setHashThreads(threads);
  const t = process.hrtime.bigint();
  for (const b of batches) {
    const c = new HashChain(b.id, { algorithm: 'sha512', recordSize: RECORD, blockSize: 64 });
    for (let at = 0; at < b.buf.length; at += SEND) await c.update(b.buf.subarray(at, at + SEND));
    c.finish();
  }
  return since(t);
}

/** The same bytes written `copies` times to the bench disk, a file per batch, fsync at each end. */
function rawWrite(copies: number): number {
  const dir = mkdtempSync(path.join(base, 'raw-'));
  const t = process.hrtime.bigint();
  for (const b of batches) {
    for (let c = 0; c < copies; c++) {
      const fd = openSync(path.join(dir, `${b.id.toHex().slice(-8)}-${c}`), 'w');
      for (let at = 0; at < b.buf.length; at += SEND) writeSync(fd, b.buf.subarray(at, at + SEND));
      fsyncSync(fd);
      closeSync(fd);
    }
  }
  const ms = since(t);
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

interface Node {
  readonly proc: HdProcess;
  readonly port: number;
  /** Observability port (/health). */
  readonly obs: number;
}

async function startStorageNode(name: string, started: HdProcess[], env: Record<string, string>): Promise<Node> {
  const dir = mkdtempSync(path.join(base, `${name}-`));
  const [port, cmd, obs] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ node_name: name, production_ip: HOST, production_port: port, command_port: cmd, observability_port: obs, reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }),
  );
  const proc = startHd(['run', 'pipelines/storage-node.yaml', '--config', config, '--quiet'], env);
  started.push(proc);
  await waitForPort(HOST, port, proc);
  return { proc, port, obs };
}

async function startScc(sns: Node[], started: HdProcess[], env: Record<string, string>): Promise<Node> {
  const [port, obs, cmd] = [await freePort(), await freePort(), await freePort()];
  const proc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: HOST,
    PRODUCTION_PORT: String(port),
    OBSERVABILITY_PORT: String(obs),
    COMMAND_PORT: String(cmd),
    QUERY_GRPC_PORT: '0',
    NODE_NAME: 'scc-bench',
    SN_TARGETS: sns.map((s, i) => `sn${i + 1}:${HOST}:1:${s.port}`).join(','),
    ...env,
  });
  started.push(proc);
  await waitForPort(HOST, port, proc);
  return { proc, port, obs };
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc; undefined elsewhere. */
function cpuSeconds(pid: number | undefined): number | undefined {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return undefined;
  }
}

/** Sends every batch, at most MAX_UNACKED eobs unanswered; resolves with the ms to the last ack. */
async function ingest(port: number): Promise<number> {
  const client = await HdwpClient.connect({ host: HOST, port, role: 'ingestClient', datasetId: 'bench', recordSize: RECORD });
  const pending = new Set<Promise<EobFrame>>();
  const t = process.hrtime.bigint();
  for (const b of batches) {
    await client.sendRecords(b.id, b.buf);
    const ack = client.sendEob(b.id, b.buf.length / RECORD);
    pending.add(ack);
    void ack.then(() => pending.delete(ack), () => undefined);
    while (pending.size >= MAX_UNACKED) await Promise.race(pending);
  }
  await Promise.all(pending);
  const ms = since(t);
  await client.close();
  return ms;
}

/** The `hashing` part of a node's /health (its hashing threads). */
async function hashingOf(node: Node): Promise<string> {
  try {
    const r = await fetch(`http://${HOST}:${node.obs}/health`);
    return JSON.stringify(((await r.json()) as { hashing?: unknown }).hashing);
  } catch (err) {
    return `(no /health: ${(err as Error).message})`;
  }
}

interface ClusterRun {
  readonly ms: number;
  readonly cpu: string;
  readonly hashing: string;
}

/** Starts 2 Storage Nodes and an SCC with HASH_THREADS=`threads`, ingests every batch, stops them. */
async function clusterRun(threads: string): Promise<ClusterRun> {
  const env = { HASH_THREADS: threads };
  // Everything started is stopped again, even when a later start fails.
  const started: HdProcess[] = [];
  const cleanUp = async (): Promise<void> => {
    for (const p of started.reverse()) await p.stop(20_000);
  };
  try {
    const sns: Node[] = [];
    for (const name of ['sn1', 'sn2']) sns.push(await startStorageNode(name, started, env));
    const scc = await startScc(sns, started, env);
    const hashing = `SCC ${await hashingOf(scc)}, sn1 ${await hashingOf(sns[0])}`;
    const procs = [
      ['SCC', scc.proc.proc.pid],
      ['sn1', sns[0].proc.proc.pid],
      ['sn2', sns[1].proc.proc.pid],
    ] as const;
    const cpuBefore = procs.map(([, pid]) => cpuSeconds(pid));
    const clientBefore = process.cpuUsage();
    const ms = await ingest(scc.port);
    const client = process.cpuUsage(clientBefore);
    const cpu = [`client ${((client.user + client.system) / 1e6).toFixed(1)}`];
    procs.forEach(([name, pid], i) => {
      const after = cpuSeconds(pid);
      const before = cpuBefore[i];
      if (after !== undefined && before !== undefined) cpu.push(`${name} ${(after - before).toFixed(1)}`);
    });
    return { ms, cpu: cpu.join(', '), hashing };
  } finally {
    await cleanUp();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

(async () => {
  console.log(`${RECORDS} records of ${RECORD} bytes (${(data.length / 1e6).toFixed(0)} MB) in ${batches.length} batches of ${BATCH}; ${os.availableParallelism()} cores; disk: ${base}\n`);
  const hashMs = await rawHash(1);
  const hashAllMs = await rawHash(0);
  const write1Ms = rawWrite(1);
  const write2Ms = rawWrite(2);

  const runs = new Map<string, ClusterRun[]>(HASH_THREADS.map((t) => [t, []]));
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (const t of HASH_THREADS) {
        const run = await clusterRun(t);
        runs.get(t)?.push(run);
        console.log(`round ${r + 1}, HASH_THREADS=${t}: ${run.ms.toFixed(0)} ms; CPU seconds (user + system, all threads): ${run.cpu}; /health hashing: ${run.hashing}`);
      }
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }

  const e2e = (t: string): number => median((runs.get(t) ?? []).map((x) => x.ms));
  const rows: [string, number][] = [
    ...HASH_THREADS.map((t): [string, number] => [`end to end: client → SCC → 2 replicas, durable, HASH_THREADS=${t}${t === '0' ? ` (${os.availableParallelism()})` : ''}`, e2e(t)]),
    ['raw sha512 chain, one hashing thread (HashChain)', hashMs],
    [`raw sha512 chain, ${os.availableParallelism()} hashing threads (HashChain)`, hashAllMs],
    ['raw write + fsync per batch, one copy', write1Ms],
    ['raw write + fsync per batch, two copies (both replicas on this disk)', write2Ms],
  ];
  const best = Math.min(...HASH_THREADS.map(e2e));
  console.log(`\n${ROUNDS > 1 ? `medians of ${ROUNDS} rounds\n\n` : ''}| path | ms | records/s | MB/s of records | vs one sha512 chain core |`);
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, ms] of rows) {
    console.log(`| ${name} | ${ms.toFixed(0)} | ${Math.round(RECORDS / (ms / 1e3)).toLocaleString('en-US')} | ${mb(data.length, ms).toFixed(0)} | ${(hashMs / ms).toFixed(2)} |`);
  }
  const slower = Math.max(hashMs, write1Ms);
  console.log(`\nbest end to end = ${((slower / best) * 100).toFixed(0)}% of the slower one-core raw limit (${slower === hashMs ? 'sha512' : 'disk'}), ${(hashMs / best).toFixed(2)}× one sha512 chain core; aim ≥ 3×`);
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
