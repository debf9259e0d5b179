/**
 * Quarantine end to end (issue #20) on a registered cluster of real processes (a DMS, an SCC and two
 * Storage Nodes, mutual TLS): an administrator quarantines sn2 on the DMS, the SCC learns of it from
 * its configuration feed and routes queries and new batches away from sn2 — queries are answered
 * whole by sn1 and sn2's query counter does not move; released, sn2 is caught up from the SCC's
 * catch-up log with every batch written meanwhile, and serves queries again (shown by quarantining
 * sn1 in turn: every row then comes from sn2).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { MtlsIdentity } from '../../net/mtls';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import type { NodeRole } from '../../control/dms/state';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { enrol } from '../security/proxyIdentitySupport';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { getJson, sleep, type SccHealth } from './ingestKit';

const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 25;
const schema = {
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

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  client: MtlsIdentity;
  batches: number;
  remove(): void;
}

/** Resolves once `cond()` holds; fails (instead of hanging the suite) if it never does. */
async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await cond().catch(() => false)) return;
    await sleep(50);
  }
  assert.unreachable(`never: ${what}`);
}

const t = suite<Ctx>('quarantine end to end: the SCC routes queries and batches away from a quarantined node (real processes)');

t.before(async (ctx) => {
  ctx.dms = await startTestDms({ configPollMs: 200 });
  const { dms } = ctx;
  const dir = tempDir('hd-quarantine-');
  writeFileSync(path.join(dir.dir, 'ca.pem'), dms.server.caCertPem);
  ctx.remove = () => dir.remove();
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({
    storageNodes: 2,
    dms: { url: dms.url, caFile: path.join(dir.dir, 'ca.pem'), token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } },
    sccEnv: { SN_TARGETS: '', RECORD_SIZE: '', QUERY_GRPC_ROLES: 'proxy,client' },
  });
  ctx.client = await enrol(dms, 'quarantine-client', 'client');
  assert.is((await dms.call('PUT', '/v1/datasets/q80', dms.admin, { schema })).status, 200);
  ctx.batches = 0;
});

t.after(async (ctx) => {
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

const stateOf = async (ctx: Ctx, name: string): Promise<string | undefined> =>
  (await getJson<SccHealth>(`http://${ctx.cluster.host}:${ctx.cluster.scc.observabilityPort}/health`)).replicas.replicas.find((r) => r.name === name)?.state;

/** hd_sn_query_batches_total summed over outcomes (`eob`: only the batches answered whole): the query batches this node ended. */
async function queryBatches(ctx: Ctx, sn: ClusterSn, outcome = '[^"]*'): Promise<number> {
  const text = await (await fetch(`http://${ctx.cluster.host}:${sn.observabilityPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(new RegExp(`^hd_sn_query_batches_total\\{outcome="${outcome}"\\} (\\d+)`, 'gm'))) n += Number(m[1]);
  return n;
}

/** The batches a node holds of the dataset. */
const held = async (ctx: Ctx, sn: ClusterSn): Promise<number> => ((await getJson<{ batches?: unknown[] }>(`http://${ctx.cluster.host}:${sn.observabilityPort}/v1/batches?dataset=q80`)).batches ?? []).length;

/** Ingests `count` more batches of PER_BATCH records; each must be acknowledged. */
async function ingest(ctx: Ctx, count: number): Promise<void> {
  await using c = new PlatformIngestClient();
  c.loadDatasetSchema(JSON.stringify(schema));
  c.setSccTargets([`${ctx.cluster.host}:${ctx.cluster.scc.productionPort}`]);
  for (let i = 0; i < count; i++, ctx.batches++) {
    const from = T0 + ctx.batches * 60;
    const id = c.generateBatchIdTime(from, from + 60);
    const recs = Array.from({ length: PER_BATCH }, (_, k) => c.convertRecordToBinary({ ts: String(from + k), n: String(ctx.batches) }));
    assert.ok(await c.streamInsert(id, recs), String(c.lastError));
    assert.ok(await c.sendEob(id), String(c.lastError));
  }
}

/** Every row of every batch written so far, through the SCC; returns the distinct batch numbers seen. */
async function queryAll(ctx: Ctx): Promise<number> {
  const m = ctx.client.material;
  await using q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, dispatchTls: { ca: m.caPem, cert: m.certPem, key: m.keyPem } });
  q.loadDatasetSchema(JSON.stringify(schema));
  q.setSccTargets([{ host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort }]);
  const table = await q.executeDataset({ start_time: T0, end_time: T0 + ctx.batches * 60 - 1 });
  assert.is(table.numRows, ctx.batches * PER_BATCH, 'every record of every batch');
  return new Set(table.toArray().map((r) => Number((r.toJSON() as { n: unknown }).n))).size;
}

t('quarantined: queries answered whole by sn1, sn2 gets no query and no batch; released: caught up, then it serves', async (ctx) => {
  const { dms, cluster } = ctx;
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  await until('both replicas healthy', async () => (await stateOf(ctx, 'sn1')) === 'healthy' && (await stateOf(ctx, 'sn2')) === 'healthy');
  await ingest(ctx, 2);
  await until('sn2 holds the first 2 batches', async () => (await held(ctx, sn2)) === 2);

  const q = await dms.call('POST', '/v1/nodes/sn2/quarantine', dms.admin, { reason: 'bad batch notices from sn2' });
  assert.is(q.status, 200, JSON.stringify(q.body));
  await until('the SCC has sn2 quarantined', async () => (await stateOf(ctx, 'sn2')) === 'quarantined');
  // Acknowledged by sn1 alone; nothing reaches sn2.
  await ingest(ctx, 3);
  const sn2Before = await queryBatches(ctx, sn2);
  const sn1Before = await queryBatches(ctx, sn1, 'eob');
  assert.is(await queryAll(ctx), 5);
  assert.is(await queryBatches(ctx, sn2), sn2Before, "sn2's query counter moved while it was quarantined");
  assert.is((await queryBatches(ctx, sn1, 'eob')) - sn1Before, 5, 'sn1 answered every batch');
  assert.is(await held(ctx, sn2), 2, 'a quarantined node got new batches');

  const r = await dms.call('POST', '/v1/nodes/sn2/release', dms.admin, {});
  assert.is(r.status, 200, JSON.stringify(r.body));
  await until('sn2 healthy again', async () => (await stateOf(ctx, 'sn2')) === 'healthy');
  // Healthy only once caught up: it holds every batch written while it was quarantined.
  assert.is(await held(ctx, sn2), 5);

  // sn2 serves again: with sn1 quarantined in turn, every row comes from sn2.
  assert.is((await dms.call('POST', '/v1/nodes/sn1/quarantine', dms.admin, { reason: 'the other way round' })).status, 200);
  await until('the SCC has sn1 quarantined', async () => (await stateOf(ctx, 'sn1')) === 'quarantined');
  const sn1Quarantined = await queryBatches(ctx, sn1);
  const sn2Released = await queryBatches(ctx, sn2, 'eob');
  assert.is(await queryAll(ctx), 5);
  assert.is((await queryBatches(ctx, sn2, 'eob')) - sn2Released, 5, 'sn2 answered every batch');
  assert.is(await queryBatches(ctx, sn1), sn1Quarantined);
  assert.is((await dms.call('POST', '/v1/nodes/sn1/release', dms.admin, {})).status, 200);
  await until('sn1 healthy again', async () => (await stateOf(ctx, 'sn1')) === 'healthy');
});

t.run();
