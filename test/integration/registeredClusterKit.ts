/**
 * A registered cluster of real processes for the quarantine, bad-batch-notice and WebUX tests: a
 * DMS (polled by the nodes every 200 ms), an SCC and two Storage Nodes registered with it over
 * mutual TLS with no SN_TARGETS or RECORD_SIZE of their own, a client certificate, and the 80-byte
 * dataset `q80`; with the helpers those tests share (waiting, replica states, query counters,
 * ingest of numbered batches, a whole read through the SCC).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as assert from 'uvu/assert';
import type { NodeRole } from '../../control/dms/state';
import type { MtlsIdentity } from '../../net/mtls';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { tempDir, type TestDms } from '../control/support';
import { enrol } from '../security/proxyIdentitySupport';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { getJson, sleep, type SccHealth } from './ingestKit';

/** Start of the first batch (minute-aligned). */
export const T0 = 1_700_000_000 - (1_700_000_000 % 60);
/** Records in each ingested batch. */
export const PER_BATCH = 25;
/** The dataset: 80-byte records of a time and the batch's number. */
export const Q80 = {
  id: 'q80',
  name: 'q80',
  record_size: 80,
  time_field: 'ts',
  time_index_interval: 60,
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'n', type: 'uint32', offset: 8, size: 4 },
  ],
};

/** The cluster around a DMS of type `D`, and the batches ingested so far. */
export interface RegisteredCluster<D extends TestDms = TestDms> {
  dms: D;
  cluster: Cluster;
  client: MtlsIdentity;
  batches: number;
  remove(): void;
}

/** Starts the SCC and Storage Nodes registered with `dms` (cluster c1), a client named `clientName`, and registers q80. */
export async function startRegisteredCluster<D extends TestDms>(ctx: RegisteredCluster<D>, dms: D, tempPrefix: string, clientName: string): Promise<void> {
  ctx.dms = dms;
  const dir = tempDir(tempPrefix);
  writeFileSync(path.join(dir.dir, 'ca.pem'), dms.server.caCertPem);
  ctx.remove = () => dir.remove();
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({
    storageNodes: 2,
    dms: { url: dms.url, caFile: path.join(dir.dir, 'ca.pem'), token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } },
    sccEnv: { SN_TARGETS: '', RECORD_SIZE: '', QUERY_GRPC_ROLES: 'proxy,client' },
  });
  ctx.client = await enrol(dms, clientName, 'client');
  assert.is((await dms.call('PUT', '/v1/datasets/q80', dms.admin, { schema: Q80 })).status, 200);
  ctx.batches = 0;
}

/** Resolves once `cond()` holds; fails (instead of hanging the suite) if it never does within 30 s. */
export async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await cond().catch(() => false)) return;
    await sleep(50);
  }
  assert.unreachable(`never: ${what}`);
}

/** The SCC's state of replica `name` (its /health). */
export async function stateOf(ctx: RegisteredCluster, name: string): Promise<string | undefined> {
  return (await getJson<SccHealth>(`http://${ctx.cluster.host}:${ctx.cluster.scc.observabilityPort}/health`)).replicas.replicas.find((r) => r.name === name)?.state;
}

/** hd_sn_query_batches_total summed over outcomes (`eob`: only the batches answered whole): the query batches this node ended. */
export async function queryBatches(ctx: RegisteredCluster, sn: ClusterSn, outcome = '[^"]*'): Promise<number> {
  const text = await (await fetch(`http://${ctx.cluster.host}:${sn.observabilityPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(new RegExp(`^hd_sn_query_batches_total\\{outcome="${outcome}"\\} (\\d+)`, 'gm'))) n += Number(m[1]);
  return n;
}

/** The batches a node holds of q80. */
export async function held(ctx: RegisteredCluster, sn: ClusterSn): Promise<number> {
  return ((await getJson<{ batches?: unknown[] }>(`http://${ctx.cluster.host}:${sn.observabilityPort}/v1/batches?dataset=q80`)).batches ?? []).length;
}

/** Ingests `count` more batches of PER_BATCH records, batch k's records holding n = k; each must be acknowledged. */
export async function ingest(ctx: RegisteredCluster, count: number): Promise<void> {
  await using c = new PlatformIngestClient();
  c.loadDatasetSchema(JSON.stringify(Q80));
  c.setSccTargets([`${ctx.cluster.host}:${ctx.cluster.scc.productionPort}`]);
  for (let i = 0; i < count; i++, ctx.batches++) {
    const from = T0 + ctx.batches * 60;
    const id = c.generateBatchIdTime(from, from + 60);
    const recs = Array.from({ length: PER_BATCH }, (_, k) => c.convertRecordToBinary({ ts: String(from + k), n: String(ctx.batches) }));
    assert.ok(await c.streamInsert(id, recs), String(c.lastError));
    assert.ok(await c.sendEob(id), String(c.lastError));
  }
}

/** Every row of every batch written so far, through the SCC (checked complete); returns the distinct batch numbers seen. */
export async function queryAll(ctx: RegisteredCluster): Promise<number> {
  const m = ctx.client.material;
  await using q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, dispatchTls: { ca: m.caPem, cert: m.certPem, key: m.keyPem } });
  q.loadDatasetSchema(JSON.stringify(Q80));
  q.setSccTargets([{ host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort }]);
  const table = await q.executeDataset({ start_time: T0, end_time: T0 + ctx.batches * 60 - 1 });
  assert.is(table.numRows, ctx.batches * PER_BATCH, 'every record of every batch');
  return new Set(table.toArray().map((r) => Number((r.toJSON() as { n: unknown }).n))).size;
}
