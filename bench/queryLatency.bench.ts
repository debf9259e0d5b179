/**
 * One small query's latency end to end, the floor under every interactive statement: the SDK's
 * `executeStream` → gRPC Dispatch → SCC → two Storage Nodes (real `hd run` processes on loopback)
 * scanning one one-minute batch with a selective filter → the few matching records streamed back
 * over HDWP → decoded to Arrow. Beside it, in the same run: a gRPC-free loopback TCP round trip
 * (the transport's floor) and a query of a minute holding no batch (the path without a scan).
 *
 * Run: `npx tsx bench/queryLatency.bench.ts [minutes] [queries]` (defaults 5 and 200).
 */
import net from 'node:net';
import { PlatformIngestClient } from '../sdk/platformIngestClient';
import { PlatformQueryClient } from '../sdk/platformQueryClient';
import { startCluster } from '../test/support/cluster';
import { FLOW, generate } from './flows';

const MINUTES = Number(process.argv[2] ?? 5);
const QUERIES = Number(process.argv[3] ?? 200);
const PER_MINUTE = 61_440;
/** A minute boundary, so each one-minute batch is one interval of the schema. */
const T0 = 1_699_999_980;
const SCHEMA = JSON.stringify({ ...FLOW, id: 'flows' });

const since = (t: bigint): number => Number(process.hrtime.bigint() - t) / 1e6;
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

/** Median round trip of one byte over loopback TCP, ms. */
async function tcpRoundTrip(): Promise<number> {
  const server = net.createServer((s) => s.on('data', (c: Buffer) => s.write(c)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const sock = net.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, noDelay: true });
  await new Promise<void>((r) => sock.once('connect', () => r()));
  const ms: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = process.hrtime.bigint();
    sock.write('x');
    await new Promise<void>((r) => sock.once('data', () => r()));
    ms.push(since(t));
  }
  sock.destroy();
  await new Promise<void>((r) => server.close(() => r()));
  return pct(ms, 0.5);
}

async function main(): Promise<void> {
  const cluster = await startCluster({ recordSize: 150, schemas: [SCHEMA] });
  try {
    const data = generate(MINUTES * PER_MINUTE);
    // generate() counts seconds from 1 700 000 000, which is not on a minute boundary: move each
    // record's ts to T0 + its second, so a batch's records lie in the batch's own interval.
    for (let i = 0; i < MINUTES * PER_MINUTE; i++) data.writeBigInt64LE(BigInt(T0 + Math.floor(i / 1024)), i * 150);
    {
      await using ingest = new PlatformIngestClient();
      ingest.loadDatasetSchema(SCHEMA);
      ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
      // 1 024 records a second: minute m holds records [m·61 440, (m+1)·61 440).
      for (let m = 0; m < MINUTES; m++) {
        const start = T0 + 60 * m;
        const id = ingest.generateBatchIdTime(start, start + 60);
        if (!(await ingest.streamInsert(id, data.subarray(m * PER_MINUTE * 150, (m + 1) * PER_MINUTE * 150)))) throw new Error(String(ingest.lastError));
        if (!(await ingest.sendEob(id))) throw new Error(String(ingest.lastError));
      }
    }
    const q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
    q.loadDatasetSchema(SCHEMA);
    q.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
    const run = async (label: string, query: (k: number) => Record<string, unknown>): Promise<string> => {
      const ms: number[] = [];
      let rows = 0;
      for (let k = 0; k < QUERIES; k++) {
        const t = process.hrtime.bigint();
        await q.executeStream(query(k), async (b) => {
          rows += b.numRows;
        });
        ms.push(since(t));
      }
      return `${label}: p50 ${pct(ms, 0.5).toFixed(2)} ms, p90 ${pct(ms, 0.9).toFixed(2)} ms, p99 ${pct(ms, 0.99).toFixed(2)} ms (${QUERIES} queries, ${rows} records)`;
    };
    try {
      const rtt = await tcpRoundTrip();
      console.log(`loopback TCP round trip: p50 ${rtt.toFixed(3)} ms`);
      console.log(
        await run('one batch, selective (Q3-like)', (k) => {
          // Not the last minute: a window names the interval after it too, and that one must exist.
          const start = T0 + 60 * (k % (MINUTES - 1));
          return {
            start_time: start,
            end_time: start + 59,
            sub_queries: [
              {
                filters: [
                  { field: 'proto', op: 'eq', value: '17' },
                  { field: 'dport', op: 'eq', value: '22' },
                  { field: 'packets', op: 'lt', value: '1000' },
                ],
              },
            ],
          };
        }),
      );
      console.log(await run('a minute with no batch', (k) => ({ start_time: T0 - 3600 - k * 60, end_time: T0 - 3600 - k * 60 + 59, sub_queries: [] })));
    } finally {
      await q.stop();
    }
  } finally {
    await cluster.stop();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
