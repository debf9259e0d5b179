/**
 * Issue #19, restart with the DMS down (real processes: a DMS in this process, an SCC and two
 * Storage Nodes as `hd run` processes, mutual TLS). No node has HASH_ALGORITHM,
 * HASH_CHAIN_BLOCK_SIZE, RECORD_SIZE, SN_TARGETS, SYNC_PEERS or `storage_devices`: the DMS elects
 * sha256 over 32-record blocks of 64-byte records (not the defaults sha512, 64, 150) and declares
 * sn1's device (sn2 gets the default one). Every node caches that configuration in its state
 * directory. With the DMS stopped, the Storage Nodes are restarted while the SCC keeps hashing with
 * sha256 (a node on the defaults would refuse every batch), then the SCC too (it needs the cached
 * replica set to start at all); batches ingested then are acknowledged and read back with
 * verify_hash through the SCC, every segment chained as the DMS elected, on the DMS's device. The DMS
 * back: the nodes take its configuration again (`dms_config.source` = `dms`). The DMS restarted
 * with another election: the SCC and the Storage Nodes keep theirs, say so (log, /health
 * `pending_restart`, degraded), and ingest goes on unharmed (docs/scc.md, "Hash election").
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { verifySegment } from '../../engine-rs/index';
import type { NodeRole } from '../../control/dms/state';
import { ResultListener, type BatchResult, type QueryResult } from '../../hdwp/resultListener';
import { DMS_CONFIG_CACHE_FILE } from '../../net/dmsConfigCache';
import { dispatchCredentials } from '../../net/grpcTls';
import type { MtlsIdentity } from '../../net/mtls';
import { QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import type { HdQuery } from '../../query/hdQuery';
import { newQueryToken } from '../../query/token';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { enrol } from '../security/proxyIdentitySupport';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { freePort, startHd, waitForOutput, waitForPort, type HdProcess } from '../support/hdProcess';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { batch, sleep } from './ingestKit';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const RS = 64;
const PER_BATCH = 40;
const ELECTION = { algorithm: 'sha256' as const, chainBlockSize: 32, recordSize: RS };
const OTHER = { algorithm: 'blake3' as const, chainBlockSize: 16, recordSize: RS };
/** Every setting the DMS gives, left empty (an explicit value would win). */
const UNSET = { SYNC_PEERS: '', SN_OBSERVABILITY_PORTS: '', SN_TARGETS: '', HASH_ALGORITHM: '', HASH_CHAIN_BLOCK_SIZE: '', RECORD_SIZE: '' };
/** sn1's device as declared on the DMS (relative: beside its config file). */
const SN1_DEVICE = { name: 'fast', address: 'dms-devices/fast', type: 'ssd' };

let dms: TestDms | undefined;
let dmsDir: { dir: string; remove(): void };
let dmsPort: number;
let remove: () => void;
let cluster: Cluster;
let scc: HdProcess;
let client: MtlsIdentity;
const sent = new Map<string, Buffer>();
let next = 0;

type Health = Record<string, Record<string, unknown> | string>;
async function health(port: number): Promise<Health> {
  return (await (await fetch(`http://${cluster.host}:${port}/health`, { signal: AbortSignal.timeout(3000) })).json()) as Health;
}
const part = async (port: number, name: string): Promise<Record<string, unknown>> => ((await health(port))[name] ?? {}) as Record<string, unknown>;
async function within(what: string, cond: () => Promise<boolean>, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (await cond().catch(() => false)) return;
  assert.unreachable(`never within ${ms} ms: ${what}`);
}
const replicasHealthy = (): Promise<boolean> => part(cluster.scc.observabilityPort, 'replicas').then((r) => r.healthy === 2);

async function startDms(election: typeof ELECTION | typeof OTHER): Promise<TestDms> {
  return startTestDms({ configPollMs: 200, hashElection: election, port: dmsPort }, dmsDir.dir);
}

/** Ingests `n` more batches; each must be acknowledged. */
async function ingest(n: number): Promise<void> {
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  try {
    for (let i = 0; i < n; i++, next++) {
      const id = batch(90_000 + next);
      const records = Buffer.alloc(PER_BATCH * RS, (next % 250) + 1);
      assert.ok(await c.streamInsert(id, records), String(c.lastError));
      assert.ok(await c.sendEob(id), `batch ${next}: ${String(c.lastError)}`);
      sent.set(id.toHex(), records);
    }
  } finally {
    await c.stop();
  }
}

/** Every batch sent, read through the SCC's gRPC dispatch with verify_hash: each must come back byte-identical. */
async function readAllVerified(): Promise<void> {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  const dispatch = new QueryDispatchClient(`${cluster.host}:${cluster.scc.queryGrpcPort}`, { credentials: dispatchCredentials(client.material, 'scc-test'), deadlineMs: 10_000 });
  try {
    const q: HdQuery = { queryId: 100 + next, dataset: 'flows', batchIds: [...sent.keys()], subQueries: [], targets: [], verifyHash: true, queryQos: 4, returnAddress: { host: '127.0.0.1', port }, token: newQueryToken() };
    const results: QueryResult[] = [];
    const open = listener.open({ queryId: q.queryId, token: q.token }, (r) => void results.push(r));
    const reply = await dispatch.dispatch(q);
    assert.is(reply.batches, sent.size);
    await within('every batch answered', async () => open.completed.size + open.batchErrors().length === sent.size, 30_000);
    assert.equal(open.batchErrors(), [], 'no batch fails verify_hash');
    const got = new Map(results.filter((r): r is BatchResult => r.kind === 'batch').map((r) => [r.batchId.toHex(), Buffer.concat(r.records)]));
    for (const [hex, records] of sent) assert.ok(got.get(hex)?.equals(records), `batch ${hex.slice(-8)} byte-identical`);
  } finally {
    dispatch.close();
    await listener.close();
  }
}

/** Every batch sent is on `sn`, in `dir`, chained with sha256 over 32-record blocks. */
async function chainedAsElected(sn: ClusterSn, dir: string): Promise<void> {
  const listed = (await (await fetch(`http://${cluster.host}:${sn.observabilityPort}/v1/batches?dataset=flows`)).json()) as { batches: { batch_id: string; path: string }[] };
  assert.equal(listed.batches.map((b) => b.batch_id).sort(), [...sent.keys()].sort(), `${sn.name} holds every acknowledged batch`);
  for (const e of listed.batches) {
    assert.ok(e.path.startsWith(dir), `${sn.name}: ${e.path} is on ${dir}`);
    const v = await verifySegment(e.path);
    assert.ok(v.ok, `${sn.name} ${e.path}: ${JSON.stringify(v)}`);
    // sha256 closes with 32 bytes; 40 records in blocks of 32 make 2 blocks (the defaults: 64 bytes, 1 block).
    if (v.ok) assert.equal({ hash: v.closingHash.length, blocks: v.blocks }, { hash: 32, blocks: 2 });
  }
}

const t = suite('restart with the DMS down: nodes start from their cached DMS configuration (real processes)');

t.before(async () => {
  dmsDir = tempDir('hd-dmsdown-dms-');
  dmsPort = await freePort();
  dms = await startDms(ELECTION);
  const d = dms;
  const dir = tempDir('hd-dmsdown-');
  remove = dir.remove;
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, d.server.caCertPem);
  assert.is((await d.call('PUT', '/v1/clusters/c1', d.admin, { primary: true })).status, 200);
  // sn1's device is declared on the DMS; sn2 has none declared (the default device).
  assert.is((await d.call('PUT', '/v1/nodes/sn1', d.admin, { role: 'storageNode', cluster: 'c1', devices: [SN1_DEVICE] })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await d.call('POST', '/v1/bootstrap-tokens', d.admin, { node_name: name, role })).body as { token: string }).token;
  cluster = await startCluster({
    recordSize: RS,
    // No storage_devices in config.json (undefined is left out of the JSON).
    snConfig: { storage_devices: undefined },
    dms: { url: d.url, caFile, token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1', ...UNSET } },
    sccEnv: { QUERY_GRPC_ROLES: 'proxy,client' },
  });
  scc = cluster.scc.proc;
  client = await enrol(d, 'dmsdown-client', 'client');
});

t.after(async () => {
  if (scc !== cluster?.scc.proc) await scc?.stop();
  await cluster?.stop();
  await dms?.close();
  dmsDir?.remove();
  remove?.();
});

t("registered: the DMS's election and devices are in force, and cached in each state directory", async () => {
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  for (const [sn, devices, from] of [
    [sn1, ['fast'], 'dms'],
    [sn2, ['d0'], 'default'],
  ] as const) {
    const s = await part(sn.observabilityPort, 'settings');
    assert.equal([s.hash_algorithm, s.hash_chain_block_size, s.record_size, s.devices, (s.from as Record<string, unknown>).hash, (s.from as Record<string, unknown>).devices], ['sha256', 32, RS, devices, 'dms', from], JSON.stringify(s));
    await within(`${sn.name}'s cache file`, async () => existsSync(path.join(sn.dir, `${sn.name}.identity`, DMS_CONFIG_CACHE_FILE)));
  }
  await within("the SCC's cache file", async () => existsSync(path.join(cluster.scc.stateDir as string, DMS_CONFIG_CACHE_FILE)));
  const e = await part(cluster.scc.observabilityPort, 'hash_election');
  assert.equal([e.algorithm, e.chain_block_size, e.record_size, e.from, e.status], ['sha256', 32, RS, { algorithm: 'dms', chain_block_size: 'dms', record_size: 'dms' }, 'ok']);
  await within('both replicas healthy', replicasHealthy);
  await ingest(3);
});

t('DMS down: Storage Nodes restarted under a running SCC take the cached election and devices', async () => {
  await (dms as TestDms).close();
  dms = undefined;
  for (const i of [0, 1]) {
    const sn = cluster.sns[i] as ClusterSn;
    await cluster.restartSn(i);
    await waitForOutput(sn.proc, /starting from the configuration it gave at/);
    assert.match(sn.proc.output(), /the DMS cannot be reached: starting from the configuration it gave at \S+ \(cached in .*dms-config\.json\)/);
    const h = await health(sn.observabilityPort);
    const s = h.settings as Record<string, unknown>;
    assert.equal([s.hash_algorithm, s.hash_chain_block_size, (s.from as Record<string, unknown>).hash, (s.from as Record<string, unknown>).devices], ['sha256', 32, 'dms-cache', i === 0 ? 'dms-cache' : 'default'], JSON.stringify(s));
    assert.equal([(h.dms_config as Record<string, unknown>).source, (h.dms_config as Record<string, unknown>).dms_reachable], ['dms-cache', false]);
  }
  await within('both replicas healthy again', replicasHealthy);
  // The SCC still hashes with sha256: a node back on the defaults (sha512) would refuse these.
  await ingest(3);
});

t('DMS down: the SCC restarted starts from its cached replica set and election; ingest and verify_hash reads work', async () => {
  await scc.stop();
  scc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], cluster.sccEnv);
  await waitForPort(cluster.host, cluster.scc.productionPort, scc);
  await waitForOutput(scc, /starting from the configuration it gave at/);
  const h = await health(cluster.scc.observabilityPort);
  const e = h.hash_election as Record<string, unknown>;
  assert.equal([e.algorithm, e.chain_block_size, e.record_size, e.from], ['sha256', 32, RS, { algorithm: 'dms-cache', chain_block_size: 'dms-cache', record_size: 'dms-cache' }]);
  assert.is((h.dms_config as Record<string, unknown>).source, 'dms-cache');
  assert.equal(((h.settings as Record<string, unknown>).from as Record<string, unknown>).replicas, 'dms-cache');
  await within('both replicas healthy under the restarted SCC', replicasHealthy);
  await ingest(3);
  await readAllVerified();
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  await chainedAsElected(sn1, path.join(sn1.dir, 'dms-devices', 'fast'));
  await chainedAsElected(sn2, path.join(sn2.dir, 'sn2.d0'));
});

t('the DMS back: every node takes its configuration from the DMS again', async () => {
  dms = await startDms(ELECTION);
  for (const port of [cluster.scc.observabilityPort, ...cluster.sns.map((s) => s.observabilityPort)]) {
    await within(`node on ${port} reads the DMS again`, async () => (await part(port, 'dms_config')).source === 'dms');
    assert.is((await part(port, 'dms_config')).dms_reachable, true);
  }
  assert.match(scc.output(), /the DMS answers again: its configuration replaces the cached one/);
});

t('another election on the DMS: refused while running, visibly (log, /health pending_restart), ingest unharmed', async () => {
  await (dms as TestDms).close();
  dms = await startDms(OTHER);
  const want = { algorithm: 'blake3', chain_block_size: 16, record_size: RS };
  await within('the SCC reports the election it refuses', async () => JSON.stringify((await part(cluster.scc.observabilityPort, 'hash_election')).pending_restart) === JSON.stringify({ in_force: { algorithm: 'sha256', chain_block_size: 32, record_size: RS }, at_restart: want }));
  const e = await part(cluster.scc.observabilityPort, 'hash_election');
  assert.equal([e.status, e.algorithm], ['degraded', 'sha256']);
  assert.match(scc.output(), /the DMS now gives hash_election \{"algorithm":"blake3","chain_block_size":16,"record_size":64\}; this node keeps \{"algorithm":"sha256","chain_block_size":32,"record_size":64\} until it restarts/);
  for (const sn of cluster.sns) {
    await within(`${sn.name} reports the election it refuses`, async () => ((await part(sn.observabilityPort, 'settings')).pending_restart as Record<string, unknown> | undefined)?.hash_election !== undefined);
    assert.is((await part(sn.observabilityPort, 'settings')).status, 'degraded');
  }
  await ingest(2);
  await readAllVerified();
  const [sn1] = cluster.sns as [ClusterSn];
  await chainedAsElected(sn1, path.join(sn1.dir, 'dms-devices', 'fast'));
  assert.ok(readdirSync(path.join(sn1.dir, 'dms-devices', 'fast', 'flows')).length >= sent.size);
});

t.run();
