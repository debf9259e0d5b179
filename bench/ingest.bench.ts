/**
 * End-to-end durable ingest: one client → an SCC → two Storage Node replicas, all real `hd run`
 * processes on loopback (pipelines/scc.yaml, pipelines/storage-node.yaml), sha512 chain, every
 * batch fsynced at its end-of-batch on both replicas before it is acknowledged. 150-byte records.
 *
 * Beside it, in the same run, the raw limits it is measured against:
 *   - sha512 of one core: `HashChain` (engine-rs) over the same records, 4 MiB updates;
 *   - the disk: the same bytes written to the same directory, one file per batch, fsync at the end
 *     of each (once for one copy; the two replicas share the disk here, so they write it twice).
 *
 * Run: `npx tsx bench/ingest.bench.ts [records] [batch records]` (defaults 2 000 000 and 100 000);
 * HD_BENCH_DIR picks the disk. The client sends batch after batch without waiting for acks (at most
 * 4 unanswered), as an ingester does; the time runs from the first byte to the last durable ack.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateBatchIdNumber, HashChain, type BatchID, type EobFrame } from '../engine-rs/index';
import { HdwpClient } from '../hdwp/hdwpClient';
import { freePort, startHd, waitForPort, type HdProcess } from '../test/support/hdProcess';

const RECORDS = Number(process.argv[2] ?? 2_000_000);
const BATCH = Number(process.argv[3] ?? 100_000);
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

/** sha512 chain of every batch on one pool thread, as the SCC and each Storage Node compute it. */
async function rawHash(): Promise<number> {
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
}

async function startStorageNode(name: string, started: HdProcess[]): Promise<Node> {
  const dir = mkdtempSync(path.join(base, `${name}-`));
  const [port, cmd, obs] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ node_name: name, production_ip: HOST, production_port: port, command_port: cmd, observability_port: obs, reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }),
  );
  const proc = startHd(['run', 'pipelines/storage-node.yaml', '--config', config, '--quiet']);
  started.push(proc);
  await waitForPort(HOST, port, proc);
  return { proc, port };
}

async function startScc(sns: Node[], started: HdProcess[]): Promise<Node> {
  const [port, obs, cmd] = [await freePort(), await freePort(), await freePort()];
  const proc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: HOST,
    PRODUCTION_PORT: String(port),
    OBSERVABILITY_PORT: String(obs),
    COMMAND_PORT: String(cmd),
    QUERY_GRPC_PORT: '0',
    NODE_NAME: 'scc-bench',
    SN_TARGETS: sns.map((s, i) => `sn${i + 1}:${HOST}:1:${s.port}`).join(','),
  });
  started.push(proc);
  await waitForPort(HOST, port, proc);
  return { proc, port };
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

(async () => {
  console.log(`${RECORDS} records of ${RECORD} bytes (${(data.length / 1e6).toFixed(0)} MB) in ${batches.length} batches of ${BATCH}; ${os.cpus().length} cores; disk: ${base}\n`);
  const hashMs = await rawHash();
  const write1Ms = rawWrite(1);
  const write2Ms = rawWrite(2);

  // Everything started is stopped again, even when a later start fails.
  const started: HdProcess[] = [];
  const cleanUp = async (): Promise<void> => {
    for (const p of started.reverse()) await p.stop(20_000);
    rmSync(base, { recursive: true, force: true });
  };
  let sns: Node[];
  let scc: Node;
  try {
    sns = [];
    for (const name of ['sn1', 'sn2']) {
      const sn = await startStorageNode(name, started);
      sns.push(sn);
    }
    scc = await startScc(sns, started);
  } catch (err) {
    await cleanUp();
    throw err;
  }
  let e2eMs: number;
  const procs = [
    ['SCC', scc.proc.proc.pid],
    ['sn1', sns[0].proc.proc.pid],
    ['sn2', sns[1].proc.proc.pid],
  ] as const;
  const cpuBefore = procs.map(([, pid]) => cpuSeconds(pid));
  const clientBefore = process.cpuUsage();
  const cpu: string[] = [];
  try {
    e2eMs = await ingest(scc.port);
    const client = process.cpuUsage(clientBefore);
    cpu.push(`client ${((client.user + client.system) / 1e6).toFixed(1)}`);
    procs.forEach(([name, pid], i) => {
      const after = cpuSeconds(pid);
      const before = cpuBefore[i];
      if (after !== undefined && before !== undefined) cpu.push(`${name} ${(after - before).toFixed(1)}`);
    });
  } finally {
    await cleanUp();
  }

  const rows: [string, number, number][] = [
    ['end to end: client → SCC → 2 replicas, durable', e2eMs, data.length],
    ['raw sha512 chain, one core (HashChain)', hashMs, data.length],
    ['raw write + fsync per batch, one copy', write1Ms, data.length],
    ['raw write + fsync per batch, two copies (both replicas on this disk)', write2Ms, data.length],
  ];
  const slower = Math.max(hashMs, write1Ms);
  console.log('| path | ms | records/s | MB/s of records | end to end vs this |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, ms, bytes] of rows) {
    console.log(`| ${name} | ${ms.toFixed(0)} | ${Math.round(RECORDS / (ms / 1e3)).toLocaleString('en-US')} | ${mb(bytes, ms).toFixed(0)} | ${(ms / e2eMs).toFixed(2)} |`);
  }
  console.log(`\nend to end = ${((slower / e2eMs) * 100).toFixed(0)}% of the slower raw limit (${slower === hashMs ? 'sha512' : 'disk'}); aim ≥ 60%`);
  console.log(`CPU seconds during the end-to-end run (user + system, all threads): ${cpu.join(', ')}; wall ${(e2eMs / 1e3).toFixed(1)} s on ${os.cpus().length} cores`);
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
