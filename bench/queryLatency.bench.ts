/**
 * One small query's latency end to end, the floor under every interactive statement: the SDK's
 * `executeStream` → gRPC Dispatch → SCC → two Storage Nodes (real `hd run` processes on loopback)
 * scanning one one-minute batch with a selective filter → the few matching records streamed back
 * over HDWP → decoded to Arrow. Beside it, in the same run: a gRPC-free loopback TCP round trip
 * (the transport's floor) and a query of a minute holding no batch (the path without a scan).
 *
 * With `--mtls` the SCC and the Storage Nodes register with a DMS (in this process) first, so the
 * SCC ↔ Storage Node legs and the client's gRPC dispatch are mutual TLS (RSA-2048 node keys), the
 * client presenting a `client` certificate.
 *
 * With `--no-reuse` the SCC keeps no idle leg connections (QUERY_LEG_IDLE_MS=0) and the client
 * opens a gRPC channel per query, as before connections were reused.
 *
 * With `--mtls --result-tls` the client's result listener is mutual TLS as well (the SDK's resultTls).
 *
 * Run: `npx tsx bench/queryLatency.bench.ts [minutes] [queries] [--mtls [--result-tls]] [--no-reuse]` (defaults 5 and 200).
 */
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { registerWithDms } from '../net/registerWithDms';
import { PlatformIngestClient } from '../sdk/platformIngestClient';
import { PlatformQueryClient } from '../sdk/platformQueryClient';
import { startTestDms, tempDir, type TestDms } from '../test/control/support';
import { startCluster, type ClusterDms } from '../test/support/cluster';
import { FLOW, generate } from './flows';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const MTLS = process.argv.includes('--mtls');
const NO_REUSE = process.argv.includes('--no-reuse');
/** With --mtls: the client's result listener is mutual TLS too (resultTls). */
const RESULT_TLS = process.argv.includes('--result-tls');
const MINUTES = Number(args[0] ?? 5);
const QUERIES = Number(args[1] ?? 200);
const KEY_BITS = 2048;
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

/** A DMS whose CA the cluster's nodes register with, and a client certificate of it. */
async function registeredSetup(): Promise<{ dms: TestDms; cluster: ClusterDms; client: { ca: string; cert: string; key: string }; remove(): void }> {
  const dms = await startTestDms();
  const dir = tempDir('hd-latency-');
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
  const token = async (name: string): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name })).body as { token: string }).token;
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'bench-client', role: 'client', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await token('bench-client') }, keyBits: KEY_BITS });
  if (!r.success) throw new Error(`client registration: ${r.error_message}`);
  return {
    dms,
    cluster: { url: dms.url, caFile, token, env: { PLATFORM_KEY_BITS: String(KEY_BITS), PLATFORM_CLUSTER: 'c1' } },
    client: { ca: dms.server.caCertPem, cert: r.signed_cert_pem, key: r.client_key_pem },
    remove: () => dir.remove(),
  };
}

async function main(): Promise<void> {
  const reg = MTLS ? await registeredSetup() : undefined;
  const cluster = await startCluster({ recordSize: 150, schemas: [SCHEMA], ...(reg && { dms: reg.cluster }), ...(NO_REUSE && { sccEnv: { QUERY_LEG_IDLE_MS: '0' } }) });
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
    const q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, ...(reg && { dispatchTls: reg.client, resultTls: RESULT_TLS }) });
    console.log(MTLS ? 'registered cluster: mutual TLS on the legs and the gRPC dispatch (RSA-2048)' : 'plain cluster (no DMS)');
    q.loadDatasetSchema(SCHEMA);
    q.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
    const run = async (label: string, query: (k: number) => Record<string, unknown>): Promise<string> => {
      const ms: number[] = [];
      let rows = 0;
      for (let k = 0; k < QUERIES; k++) {
        const t = process.hrtime.bigint();
        // --no-reuse: a client per query on the same listener, so a gRPC channel per query.
        const c = NO_REUSE ? new PlatformQueryClient('', '127.0.0.1', '', { shareListenerOf: q, log: () => undefined, ...(reg && { dispatchTls: reg.client }) }) : q;
        if (c !== q) {
          c.loadDatasetSchema(SCHEMA);
          c.setSccTargets(q.sccTargets);
        }
        await c.executeStream(query(k), async (b) => {
          rows += b.numRows;
        });
        if (c !== q) await c.stop();
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
    await reg?.dms.close();
    reg?.remove();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
