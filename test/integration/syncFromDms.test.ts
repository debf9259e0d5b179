/**
 * Issue #19, configuration from the DMS for cold-boot synchronisation and the hash election (real
 * processes: a DMS, an SCC and two Storage Nodes, mutual TLS). No node is given SYNC_PEERS,
 * SN_OBSERVABILITY_PORTS, SN_TARGETS, HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE or RECORD_SIZE: the
 * DMS elects sha256 over 32-record blocks of 64-byte records, and every node takes that election and
 * its peers from the DMS. sn2 is killed while batches are written, the SCC restarted (its catch-up
 * log gone), and sn2, started again, copies what it missed from sn1 (found on the DMS), while the
 * SCC (which found sn2's observability port on the DMS) reports it `syncing`; afterwards every
 * batch is on sn2 verified, chained as the DMS elected. The precedence itself (a setting wins over
 * the DMS, the DMS over the default) is checked on `runSettingsOf`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { verifySegment, type BatchID } from '../../engine-rs/index';
import type { NodeRole } from '../../control/dms/state';
import type { DmsNodeConfig } from '../../net/dmsConfigFeed';
import { runSettingsOf } from '../../roles/services/storageNode';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { batch, until } from './ingestKit';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const RS = 64;
const BEFORE = 3;
const WHILE_DOWN = 20;
const PER_BATCH = 40;
/** Not the defaults (sha512, 64, 150), so a node that ignored the DMS would show. */
const ELECTION = { algorithm: 'sha256' as const, chainBlockSize: 32, recordSize: RS };
/** Every setting the DMS now gives, left empty (an explicit value would win). */
const UNSET = { SYNC_PEERS: '', SN_OBSERVABILITY_PORTS: '', SN_TARGETS: '', HASH_ALGORITHM: '', HASH_CHAIN_BLOCK_SIZE: '', RECORD_SIZE: '' };

let dms: TestDms;
let remove: () => void;
let cluster: Cluster;
let scc: HdProcess;

async function getJson(port: number, p: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${cluster.host}:${port}${p}`, { signal: AbortSignal.timeout(3000) });
  return (await res.json()) as Record<string, unknown>;
}
const syncOf = async (sn: ClusterSn): Promise<Record<string, unknown> | undefined> => getJson(sn.observabilityPort, '/v1/sync-state').catch(() => undefined);
async function replicaState(name: string): Promise<string | undefined> {
  const h = await getJson(cluster.scc.observabilityPort, '/health').catch(() => undefined);
  return ((h?.replicas as { replicas?: { name: string; state: string }[] } | undefined)?.replicas ?? []).find((r) => r.name === name)?.state;
}

async function ingest(from: number, n: number): Promise<BatchID[]> {
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const ids: BatchID[] = [];
  try {
    for (let i = from; i < from + n; i++) {
      const id = batch(50_000 + i);
      assert.ok(await c.streamInsert(id, Buffer.alloc(PER_BATCH * RS, (i % 250) + 1)), String(c.lastError));
      assert.ok(await c.sendEob(id), `batch ${i}: ${String(c.lastError)}`);
      ids.push(id);
    }
  } finally {
    await c.stop();
  }
  return ids;
}

const t = suite('sync peers, observability ports and hash election from the DMS (real processes)');

t.before(async () => {
  dms = await startTestDms({ configPollMs: 200, hashElection: ELECTION });
  const dir = tempDir('hd-sync-dms-');
  remove = dir.remove;
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  cluster = await startCluster({
    recordSize: RS,
    schemas: [schemaJson],
    dms: { url: dms.url, caFile, token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1', ...UNSET } },
  });
  scc = cluster.scc.proc;
});

t.after(async () => {
  if (scc !== cluster?.scc.proc) await scc?.stop();
  await cluster?.stop();
  await dms?.close();
  remove?.();
});

t("each Storage Node runs on the DMS's hash election", async () => {
  for (const sn of cluster.sns) {
    const h = await getJson(sn.observabilityPort, '/health');
    const s = h.settings as Record<string, unknown> | undefined;
    assert.ok(s, `no 'settings' part in ${sn.name}'s /health: ${JSON.stringify(h).slice(0, 400)}`);
    // Sync peers are not compared here: at a first start the other node may not have registered yet (nothing to copy then).
    assert.equal({ a: s.hash_algorithm, b: s.hash_chain_block_size, r: s.record_size, hash: (s.from as Record<string, unknown>).hash, rs: (s.from as Record<string, unknown>).recordSize }, { a: 'sha256', b: 32, r: RS, hash: 'dms', rs: 'dms' });
  }
});

t('a node killed while batches are written syncs on restart from the peer the DMS names (no SYNC_PEERS), chained as elected', async () => {
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  await until(async () => (await replicaState('sn2')) === 'healthy');
  const ids = await ingest(0, BEFORE);
  await sn2.proc.kill9();
  ids.push(...(await ingest(BEFORE, WHILE_DOWN)));
  // A new SCC (started on its stored certificate): its catch-up log is empty, so only cold-boot sync can bring sn2 back.
  await scc.kill9();
  scc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], cluster.sccEnv);
  await waitForPort(cluster.host, cluster.scc.productionPort, scc);
  // Copying a few segments a second, so the SCC's sync probe (on the port from the DMS) sees it syncing.
  await cluster.restartSn(1, { SYNC_MAX_BYTES_PER_S: '8000' });
  const first = await syncOf(sn2);
  assert.is(first?.state, 'syncing', JSON.stringify(first));
  assert.equal(first?.peers, ['sn1']);
  const settings = (await getJson(sn2.observabilityPort, '/health')).settings as { from: Record<string, unknown>; sync_peers: string[] };
  assert.equal([settings.from.syncPeers, settings.sync_peers], ['dms', ['sn1']]);
  await until(async () => (await replicaState('sn2')) === 'syncing');
  await until(async () => (await syncOf(sn2))?.state === 'ready');
  const done = (await syncOf(sn2)) as Record<string, unknown>;
  assert.is(done.copied, WHILE_DOWN, JSON.stringify(done));
  assert.is(done.failures, 0, JSON.stringify(done));
  await until(async () => (await replicaState('sn2')) === 'healthy');

  for (const sn of [sn1, sn2]) {
    const listed = (await getJson(sn.observabilityPort, '/v1/batches?dataset=flows')).batches as { batch_id: string; path: string }[];
    assert.equal(listed.map((b) => b.batch_id).sort(), ids.map((id) => id.toHex()).sort(), `${sn.name} holds every acknowledged batch`);
    for (const e of listed) {
      const v = await verifySegment(e.path);
      assert.ok(v.ok, `${sn.name} ${e.path}: ${JSON.stringify(v)}`);
      // sha256 closes with 32 bytes; 40 records in blocks of 32 make 2 blocks (the defaults would give 64 bytes, 1 block).
      if (v.ok) assert.equal({ hash: v.closingHash.length, blocks: v.blocks, records: v.records }, { hash: 32, blocks: 2, records: PER_BATCH });
    }
  }
});

const precedence = suite('runSettingsOf: the precedence of settings, the DMS and the defaults');
const dmsWith = (replicas: DmsNodeConfig['replicas']): DmsNodeConfig => ({ datasets: new Map(), recordSizes: new Map(), replicas, hashElection: ELECTION, devices: [], pollMs: 200 });
const none = { hash_algorithm: undefined, hash_chain_block_size: undefined, record_size: undefined, sync_peers: [] };
const replicas = [
  { name: 'sn1', host: '10.0.0.1', control_port: 1, prod_port: 2, observability: { host: '10.1.0.1', port: 8080 } },
  { name: 'sn2', host: '10.0.0.2', control_port: 1, prod_port: 2, observability: { host: '10.1.0.2', port: 8081 } },
  { name: 'sn3', host: '10.0.0.3', control_port: 1, prod_port: 2 },
];

precedence('unset: the DMS; every other registered replica with an observability address is a peer', () => {
  const r = runSettingsOf(none, 'sn1', dmsWith(replicas));
  assert.equal([r.algorithm, r.blockSize, r.recordSize], ['sha256', 32, RS]);
  assert.equal(r.syncPeers, [{ name: 'sn2', host: '10.1.0.2', port: 8081 }]);
});

precedence('set: the settings win over the DMS', () => {
  const r = runSettingsOf({ hash_algorithm: 'blake3', hash_chain_block_size: 16, record_size: 99, sync_peers: [{ name: 'x', host: 'h', port: 1 }] }, 'sn1', dmsWith(replicas));
  assert.equal([r.algorithm, r.blockSize, r.recordSize, r.syncPeers.map((p) => p.name)], ['blake3', 16, 99, ['x']]);
  assert.equal(r.from, { hash: 'settings', recordSize: 'settings', syncPeers: 'settings' });
});

precedence('not registered: the defaults, no peers', () => {
  const r = runSettingsOf(none, 'sn1', undefined);
  assert.equal([r.algorithm, r.blockSize, r.recordSize, r.syncPeers], ['sha512', 64, 150, []]);
});

precedence('an election of an algorithm this build lacks is refused, naming it', () => {
  assert.throws(() => runSettingsOf(none, 'sn1', { ...dmsWith([]), hashElection: { algorithm: 'md5', chainBlockSize: 64, recordSize: 150 } }), /elected hash algorithm 'md5'/);
});

precedence.run();
t.run();
