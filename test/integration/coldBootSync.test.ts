/**
 * Cold-boot synchronisation with real processes (docs/storage-node.md, "Cold-boot
 * synchronisation"): an SCC and two Storage Nodes (each the other's SYNC_PEERS; the SCC knows their
 * observability ports). sn2 is killed, 100 batches are acknowledged by sn1 alone, and the SCC is
 * restarted so its catch-up log cannot help (the gap docs/RELIABILITY.md named). sn2 comes back
 * with its copy rate capped, reports `syncing`, is killed in the middle of its copy and started
 * again: it resumes (copies only what it still lacks), reports `ready`, and then serves every batch
 * alone with verify_hash, byte for byte. Meanwhile the SCC reports it `syncing` and queries through
 * the SCC complete on sn1 without a query reaching sn2.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID } from '../../engine-rs/index';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { ResultListener } from '../../hdwp/resultListener';
import { QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { dispatchQuery, readReplica } from '../chaos/chaosRead';
import { batch, until } from './ingestKit';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const RS = 64;
const BEFORE = 5;
const WHILE_DOWN = 100;
const PER_BATCH = 40;

let cluster: Cluster;
let scc: HdProcess;
let listener: ResultListener;
let listenPort: number;
const sent = new Map<string, Buffer>();

function records(count: number, seed: number): Buffer {
  const b = Buffer.alloc(count * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 131 + seed * 17 + (i >> 7) + (seed >> 3)) & 0xff;
  return b;
}

async function ingest(from: number, n: number): Promise<void> {
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  try {
    for (let i = from; i < from + n; i++) {
      const id = batch(90_000 + i);
      const r = records(PER_BATCH, i);
      assert.ok(await c.streamInsert(id, r), String(c.lastError));
      assert.ok(await c.sendEob(id), `batch ${i}: ${String(c.lastError)}`);
      sent.set(id.toHex(), r);
    }
  } finally {
    await c.stop();
  }
}

async function getJson(port: number, p: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${cluster.host}:${port}${p}`, { signal: AbortSignal.timeout(3000) });
  return (await res.json()) as Record<string, unknown>;
}

const syncOf = async (sn: ClusterSn): Promise<Record<string, unknown> | undefined> => getJson(sn.observabilityPort, '/v1/sync-state').catch(() => undefined);

async function replicaState(name: string): Promise<string | undefined> {
  const h = await getJson(cluster.scc.observabilityPort, '/health').catch(() => undefined);
  const list = (h?.replicas as { replicas?: { name: string; state: string }[] } | undefined)?.replicas ?? [];
  return list.find((r) => r.name === name)?.state;
}

/** hd_sn_query_batches_total summed over outcomes, from a node's /metrics. */
async function queryBatches(sn: ClusterSn): Promise<number> {
  const text = await (await fetch(`http://${cluster.host}:${sn.observabilityPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^hd_sn_query_batches_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

const t = suite('cold-boot synchronisation (real processes)');

t.before(async () => {
  cluster = await startCluster({ storageNodes: 2, recordSize: RS, schemas: [schemaJson], syncPeers: true });
  scc = cluster.scc.proc;
  listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  listenPort = (await listener.listen()).port;
});
t.after(async () => {
  await listener?.close();
  if (scc !== cluster?.scc.proc) await scc?.stop();
  await cluster?.stop();
});

t('a node down while 100 batches were written syncs from its peer (resuming after a kill), then serves them all alone, verified', async () => {
  const sn2 = cluster.sns[1] as ClusterSn;
  // Both in sync first: a node whose peer dies while it is still comparing stays `syncing` (it cannot
  // know it lacks nothing), and the SCC would then have no healthy replica to read from.
  for (const sn of cluster.sns) await until(async () => (await syncOf(sn))?.state === 'ready' && (await replicaState(sn.name)) === 'healthy');
  await ingest(0, BEFORE);
  await sn2.proc.kill9();
  await ingest(BEFORE, WHILE_DOWN);
  // A new SCC: its catch-up log is empty, so only cold-boot synchronisation can bring sn2 back.
  await scc.kill9();
  scc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], cluster.sccEnv);
  await waitForPort(cluster.host, cluster.scc.productionPort, scc);

  // Back, copying a few segments a second: syncing, and the SCC keeps it out of queries.
  await cluster.restartSn(1, { SYNC_MAX_BYTES_PER_S: '15000' });
  const first = await syncOf(sn2);
  assert.is(first?.state, 'syncing', JSON.stringify(first));
  await until(async () => (await replicaState('sn2')) === 'syncing');
  const sn2QueriesBefore = await queryBatches(sn2);
  const dispatch = new QueryDispatchClient(`${cluster.host}:${cluster.scc.queryGrpcPort}`, { deadlineMs: 5000 });
  try {
    const all = { name: 'all', subQueries: [], matches: () => true };
    const q = await dispatchQuery(dispatch, listener, listenPort, sent, all, { timeoutMs: 20_000, verifyHash: true });
    assert.is(q.status, 'complete', JSON.stringify(q));
    assert.is(q.rightBatches, BEFORE + WHILE_DOWN);
    assert.equal(q.wrong, []);
  } finally {
    dispatch.close();
  }
  assert.is(await queryBatches(sn2), sn2QueriesBefore, 'no query batch reached the syncing node');

  // Killed in the middle of its copy, started again without the cap: it resumes.
  await until(async () => Number((await syncOf(sn2))?.copied ?? 0) >= 3);
  await sn2.proc.kill9();
  await cluster.restartSn(1);
  await until(async () => (await syncOf(sn2))?.state === 'ready');
  const done = (await syncOf(sn2)) as Record<string, unknown>;
  // At least 3 were installed before the kill and are kept: the restart copies only the rest.
  assert.ok(Number(done.copied) <= WHILE_DOWN - 3, `resumed: copied ${String(done.copied)} after the restart, not all ${WHILE_DOWN} again`);
  assert.ok(Number(done.copied) > 0, JSON.stringify(done));
  assert.is(done.failures, 0, JSON.stringify(done));
  await until(async () => (await replicaState('sn2')) === 'healthy');

  // Every batch from sn2 alone, with verify_hash: records exactly as sent, no bad batch notice.
  const ids = [...sent.keys()].map((h) => BatchID.fromHex(h));
  const answers = await readReplica(cluster.host, sn2.commandPort, listener, listenPort, ids);
  let whole = 0;
  for (const [hex, r] of sent) {
    const a = answers.get(hex);
    assert.is(a?.kind, 'records', `batch ${hex.slice(0, 16)}…: ${JSON.stringify(a)}`);
    if (a?.kind === 'records') assert.ok(a.records.equals(r), `batch ${hex.slice(0, 16)}… differs`);
    whole++;
  }
  assert.is(whole, BEFORE + WHILE_DOWN);
});

t('a second start of an in-sync node copies nothing and is ready at once', async () => {
  const sn2 = cluster.sns[1] as ClusterSn;
  await cluster.restartSn(1);
  await until(async () => (await syncOf(sn2))?.state === 'ready');
  const r = (await syncOf(sn2)) as Record<string, unknown>;
  assert.is(r.copied, 0, JSON.stringify(r));
});

t.run();
