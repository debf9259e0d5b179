/**
 * Bad batch notices reach the DMS by themselves (issue #20): on a registered cluster of real
 * processes (a DMS, an SCC and two Storage Nodes, mutual TLS) one segment of sn2 is cut short; the
 * queries that place that batch on sn2 get a bbn from it, the SCC reads the batch from sn1 instead
 * (every query is answered whole) and reports the notice, with sn2's name, to the DMS
 * (nodes/scc/badBatchReporter.ts), where `GET /v1/bad-batch-notices` lists it under sn2 and nothing
 * under sn1.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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

const t = suite<Ctx>('bad batch notices end to end: a real SCC reports a corrupted segment of one node to the DMS (real processes)');

t.before(async (ctx) => {
  ctx.dms = await startTestDms({ configPollMs: 200 });
  const { dms } = ctx;
  const dir = tempDir('hd-bbn-');
  writeFileSync(path.join(dir.dir, 'ca.pem'), dms.server.caCertPem);
  ctx.remove = () => dir.remove();
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({
    storageNodes: 2,
    dms: { url: dms.url, caFile: path.join(dir.dir, 'ca.pem'), token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } },
    sccEnv: { SN_TARGETS: '', RECORD_SIZE: '', QUERY_GRPC_ROLES: 'proxy,client' },
  });
  ctx.client = await enrol(dms, 'bbn-client', 'client');
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


/** The segment files under `dir`, by batch id (file name `<hex>.hdseg`). */
function segments(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) for (const [k, v] of segments(p)) out.set(k, v);
    else if (name.endsWith('.hdseg')) out.set(name.slice(0, -'.hdseg'.length), p);
  }
  return out;
}

interface Reported {
  batch_id: string;
  dataset: string;
  code: number;
  reason: string;
  count: number;
  reported_by: string;
}

t('a corrupted segment on sn2: queries stay whole, and the DMS lists the bbn under sn2 with batch, dataset, code and reason', async (ctx) => {
  const { dms, cluster } = ctx;
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  await until('both replicas healthy', async () => (await stateOf(ctx, 'sn1')) === 'healthy' && (await stateOf(ctx, 'sn2')) === 'healthy');
  await ingest(ctx, 2);
  await until('sn2 holds both batches', async () => (await held(ctx, sn2)) === 2);
  const onSn2 = segments(sn2.dir);
  assert.is(onSn2.size, 2, [...onSn2.values()].join(', '));
  // Both of sn2's segments cut short: the query spreads its two batches over both nodes, so one is asked of sn2.
  for (const file of onSn2.values()) {
    const seg = readFileSync(file);
    writeFileSync(file, seg.subarray(0, Math.floor(seg.length / 2)));
  }
  assert.equal((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body, { nodes: {} });

  // Placement rotates over the replicas: within a few queries the cut batch is asked of sn2.
  let listed: Record<string, Reported[]> = {};
  for (let i = 0; i < 8 && !listed.sn2; i++) {
    assert.is(await queryAll(ctx), 2);
    for (let k = 0; k < 30 && !listed.sn2; k++) {
      await sleep(100);
      listed = ((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body as { nodes: Record<string, Reported[]> }).nodes;
    }
  }
  assert.ok(listed.sn2, 'the bbn of sn2 never reached the DMS');
  assert.is(listed.sn1, undefined, 'sn1 holds every batch whole; nothing is reported of it');
  const [n] = listed.sn2 as [Reported];
  assert.ok(onSn2.has(n.batch_id), `a batch sn2 held: ${n.batch_id}`);
  assert.is(new Set(listed.sn2.map((x) => x.batch_id)).size, listed.sn2.length, 'one record per batch and code');
  assert.is(n.dataset, 'q80');
  assert.is(n.code, 13, `code 13 (batch unreadable): ${JSON.stringify(n)}`);
  assert.match(n.reason, /^13 /);
  assert.not.match(n.reason, /is not held by node/);
  assert.is(n.reported_by, 'scc-test');
  assert.ok((await queryBatches(ctx, sn1, 'eob')) > 0);

  // The administrator quarantines sn2 without typing notices: the record carries the reported one.
  const q = await dms.call('POST', '/v1/nodes/sn2/quarantine', dms.admin, { reason: 'corrupted segment' });
  assert.is(q.status, 200, JSON.stringify(q.body));
  const notices = (q.body as { quarantine: { notices: string[] } }).quarantine.notices;
  assert.is(notices.length, listed.sn2.length);
  assert.match(notices[0], / q80 batch [0-9a-f]{16}… code 13: /);
});

t.run();
