/**
 * End-to-end query delivery: a client's gRPC Dispatch to an SCC, two Storage Node replicas (real
 * `hd run` processes on loopback) each scanning its share of the batches from its segments, and the
 * matching records streamed over HDWP to a ResultListener in this process, which holds each batch
 * until its eob. No filters (every record matches), so the figure is the delivery path itself:
 * records/s and MB/s from Dispatch to the last batch complete at the listener.
 *
 * Beside it, in the same run: the same bytes sent over one loopback TCP connection into a socket
 * that only counts them (the ceiling of the transport on this machine).
 *
 * Run: `npx tsx bench/queryEndToEnd.bench.ts [records] [batch records]` (defaults 1 000 000 and 50 000).
 */
import net from 'node:net';
import { generateBatchIdNumber, type EobFrame } from '../engine-rs/index';
import { QueryDispatchClient } from '../query/dispatch/dispatchClient';
import { newQueryToken } from '../query/token';
import { HdwpClient } from '../hdwp/hdwpClient';
import { ResultListener } from '../hdwp/resultListener';
import { startCluster } from '../test/support/cluster';

const RECORDS = Number(process.argv[2] ?? 1_000_000);
const BATCH = Number(process.argv[3] ?? 50_000);
const RECORD = 150;
const RUNS = 3;

const data = Buffer.alloc(RECORDS * RECORD);
for (let i = 0, x = 7; i < data.length; i++) {
  x = (x * 1103515245 + 12345) >>> 0;
  data[i] = x >>> 24;
}
const ids = Array.from({ length: Math.ceil(RECORDS / BATCH) }, (_, i) => generateBatchIdNumber(i + 1));
const since = (t: bigint): number => Number(process.hrtime.bigint() - t) / 1e6;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The same bytes over one loopback TCP connection into a counting sink: ms. */
async function rawLoopback(): Promise<number> {
  let got = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const server = net.createServer((s) =>
    s.on('data', (c: Buffer) => {
      got += c.length;
      if (got >= data.length) done();
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  const sock = net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((r) => sock.once('connect', () => r()));
  const t = process.hrtime.bigint();
  for (let at = 0; at < data.length; at += 1 << 20) {
    if (!sock.write(data.subarray(at, at + (1 << 20)))) await new Promise<void>((r) => sock.once('drain', () => r()));
  }
  await finished;
  const ms = since(t);
  sock.destroy();
  await new Promise<void>((r) => server.close(() => r()));
  return ms;
}

(async () => {
  console.log(`${RECORDS} records of ${RECORD} bytes (${(data.length / 1e6).toFixed(0)} MB) in ${ids.length} batches; 2 Storage Nodes, 1 SCC, listener in this process\n`);
  const cluster = await startCluster({ storageNodes: 2, recordSize: RECORD });
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  const client = new QueryDispatchClient(`${cluster.host}:${cluster.scc.queryGrpcPort}`);
  try {
    const ingest = await HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: 'bench', recordSize: RECORD });
    const acks: Promise<EobFrame>[] = [];
    for (const [i, id] of ids.entries()) {
      const slice = data.subarray(i * BATCH * RECORD, Math.min(data.length, (i + 1) * BATCH * RECORD));
      await ingest.sendRecords(id, slice);
      acks.push(ingest.sendEob(id, slice.length / RECORD));
    }
    await Promise.all(acks);
    await ingest.close();

    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const token = newQueryToken();
      let records = 0;
      let batches = 0;
      let allIn!: () => void;
      const complete = new Promise<void>((r) => (allIn = r));
      const open = listener.open({ queryId: run + 1, token }, (r) => {
        if (r.kind !== 'batch') throw new Error(`query failed: ${JSON.stringify(r)}`);
        records += r.count;
        if (++batches === ids.length) allIn();
      });
      const t = process.hrtime.bigint();
      await client.dispatch({ queryId: run + 1, dataset: 'bench', batchIds: ids.map((b) => b.toHex()), subQueries: [], targets: [], verifyHash: false, queryQos: 1, returnAddress: { host: '127.0.0.1', port }, token });
      await complete;
      times.push(since(t));
      open.close();
      if (records !== RECORDS) throw new Error(`expected ${RECORDS} records, got ${records}`);
    }
    const raw = median([await rawLoopback(), await rawLoopback(), await rawLoopback()]);
    const ms = median(times);
    console.log('| path | median ms | records/s | MB/s | vs loopback |');
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| query: Dispatch → 2 nodes → listener (batches held to eob) | ${ms.toFixed(0)} | ${((RECORDS / ms) * 1e3).toFixed(0)} | ${(data.length / 1e3 / ms).toFixed(0)} | ${(raw / ms).toFixed(2)} |`);
    console.log(`| loopback TCP, one connection, counting sink | ${raw.toFixed(0)} | ${((RECORDS / raw) * 1e3).toFixed(0)} | ${(data.length / 1e3 / raw).toFixed(0)} | 1.00 |`);
  } finally {
    client.close();
    await listener.close();
    await cluster.stop();
  }
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
