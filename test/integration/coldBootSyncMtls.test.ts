/**
 * Cold-boot synchronisation in a cluster registered with a DMS (real processes): the segments
 * travel over mutual TLS between the Storage Nodes' DMS-CA certificates, the SCC asks the nodes'
 * sync state over TLS too, and a plain-HTTP request for a segment is refused. sn2 is killed, 10
 * batches are acknowledged by sn1 alone, the SCC is restarted (its catch-up log is gone), and sn2
 * comes back, copies the 10 batches, reports ready and holds them verified.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { verifySegment } from '../../engine-rs/index';
import type { NodeRole } from '../../control/dms/state';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { batch, until } from './ingestKit';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const RS = 64;
const N = 10;

let dms: TestDms;
let remove: () => void;
let cluster: Cluster;
let scc: HdProcess;

async function getJson(port: number, p: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://${cluster.host}:${port}${p}`, { signal: AbortSignal.timeout(3000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
const syncOf = async (sn: ClusterSn): Promise<Record<string, unknown> | undefined> => (await getJson(sn.observabilityPort, '/v1/sync-state').catch(() => undefined))?.body;
async function replicaState(name: string): Promise<string | undefined> {
  const h = await getJson(cluster.scc.observabilityPort, '/health').catch(() => undefined);
  return ((h?.body.replicas as { replicas?: { name: string; state: string }[] } | undefined)?.replicas ?? []).find((r) => r.name === name)?.state;
}

const t = suite('cold-boot synchronisation over mutual TLS (DMS-registered cluster)');
t.before(async () => {
  dms = await startTestDms();
  const dir = tempDir('hd-cbs-mtls-');
  remove = dir.remove;
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
  const tokenFor = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  cluster = await startCluster({ recordSize: RS, schemas: [schemaJson], syncPeers: true, dms: { url: dms.url, caFile, token: tokenFor, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } } });
  scc = cluster.scc.proc;
});
t.after(async () => {
  if (scc !== cluster?.scc.proc) await scc?.stop();
  await cluster?.stop();
  await dms?.close();
  remove?.();
});

t('a node down while 10 batches were written copies them from its peer over mutual TLS; plain HTTP gets no segment', async () => {
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  // Both in sync first: a node whose peer dies while it is still comparing stays `syncing` (it cannot
  // know it lacks nothing), and the SCC would then have no healthy replica to read from.
  for (const sn of cluster.sns) await until(async () => (await syncOf(sn))?.state === 'ready' && (await replicaState(sn.name)) === 'healthy');
  await sn2.proc.kill9();
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const ids = [];
  try {
    for (let i = 0; i < N; i++) {
      const id = batch(70_000 + i);
      assert.ok(await c.streamInsert(id, Buffer.alloc(20 * RS, i + 1)), String(c.lastError));
      assert.ok(await c.sendEob(id), String(c.lastError));
      ids.push(id);
    }
  } finally {
    await c.stop();
  }
  // Over plain HTTP a registered node serves no segment.
  const plain = await getJson(sn1.observabilityPort, `/v1/segment?dataset=flows&batch_id=${(ids[0] as (typeof ids)[0]).toHex()}`);
  assert.is(plain.status, 403);
  assert.match(String(plain.body.error), /only over mutual TLS/);

  await scc.kill9();
  scc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], cluster.sccEnv);
  await waitForPort(cluster.host, cluster.scc.productionPort, scc);
  await cluster.restartSn(1);
  await until(async () => (await syncOf(sn2))?.state === 'ready');
  const r = (await syncOf(sn2)) as Record<string, unknown>;
  assert.is(r.copied, N, JSON.stringify(r));
  assert.is(r.failures, 0, JSON.stringify(r));
  await until(async () => (await replicaState('sn2')) === 'healthy');
  const listed = (await getJson(sn2.observabilityPort, '/v1/batches?dataset=flows')).body.batches as { path: string }[];
  assert.is(listed.length, N);
  for (const e of listed) assert.ok((await verifySegment(e.path)).ok, e.path);
});

t.run();
