/**
 * Issue #19 items 1, 2 and 4 on one registered cluster (a DMS, an SCC and two Storage Nodes as real
 * processes, mutual TLS): datasets of 80, 150 and 4096-byte records registered on the DMS after the
 * nodes started reach the SCC and the Storage Nodes without a restart or a schema file (no SN_TARGETS,
 * no RECORD_SIZE, an empty SCHEMA_DIR); each is ingested and queried with a filter side by side; a
 * batch of the wrong record size is refused naming its dataset's size; the replica set follows the
 * cluster on the DMS; the command port is HTTPS with mutual TLS.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { requestJson } from '../../net/jsonClient';
import type { MtlsIdentity } from '../../net/mtls';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import type { NodeRole } from '../../control/dms/state';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { enrol } from '../security/proxyIdentitySupport';
import { startCluster, type Cluster } from '../support/cluster';
import { startHd } from '../support/hdProcess';
import { getJson, until, type SccHealth } from './ingestKit';

const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 40;
const SIZES = [80, 150, 4096] as const;

/** A schema of `size`-byte records: a timestamp, a counter, the rest padding. */
const schemaOf = (size: number): Record<string, unknown> => ({
  id: `d${size}`,
  name: `d${size}`,
  record_size: size,
  time_field: 'ts',
  time_index_interval: 60,
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'n', type: 'uint32', offset: 8, size: 4 },
  ],
});

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  client: MtlsIdentity;
  remove(): void;
}

const t = suite<Ctx>('record sizes per dataset and configuration from the DMS (real processes)');

t.before(async (ctx) => {
  ctx.dms = await startTestDms({ configPollMs: 200 });
  const { dms } = ctx;
  const dir = tempDir('hd-record-sizes-');
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  ctx.remove = () => dir.remove();
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  assert.is((await dms.call('PUT', '/v1/clusters/c2', dms.admin, { primary: false })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  // No SN_TARGETS, no RECORD_SIZE, an empty SCHEMA_DIR: everything comes from the DMS.
  ctx.cluster = await startCluster({
    storageNodes: 2,
    dms: { url: dms.url, caFile, token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } },
    sccEnv: { SN_TARGETS: '', RECORD_SIZE: '', QUERY_GRPC_ROLES: 'proxy,client' },
  });
  ctx.client = await enrol(dms, 'sizes-client', 'client');
  // Registered after every node started: no restart, no schema file.
  for (const size of SIZES) assert.is((await dms.call('PUT', `/v1/datasets/d${size}`, dms.admin, { schema: schemaOf(size) })).status, 200);
});

t.after(async (ctx) => {
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

const health = (ctx: Ctx): Promise<SccHealth> => getJson(`http://${ctx.cluster.host}:${ctx.cluster.scc.observabilityPort}/health`);

t('the SCC took its replica set from the DMS (no SN_TARGETS)', async (ctx) => {
  const h = await health(ctx);
  assert.equal(h.replicas.replicas.map((r) => r.name).sort(), ['sn1', 'sn2']);
});

t('80-, 150- and 4096-byte datasets side by side: ingested, and queried with a filter the Storage Nodes compile from the DMS schema', async (ctx) => {
  const { cluster } = ctx;
  for (const size of SIZES) {
    await using ingest = new PlatformIngestClient();
    ingest.loadDatasetSchema(JSON.stringify(schemaOf(size)));
    ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
    for (let b = 0; b < 2; b++) {
      const id = ingest.generateBatchIdTime(T0 + b * 60, T0 + b * 60 + 60);
      const recs = Array.from({ length: PER_BATCH }, (_, i) => ingest.convertRecordToBinary({ ts: String(T0 + b * 60 + i), n: String(i) }));
      assert.ok(await ingest.streamInsert(id, recs), `d${size}: ${String(ingest.lastError)}`);
      assert.ok(await ingest.sendEob(id), `d${size}: ${String(ingest.lastError)}`);
    }
  }
  const m = ctx.client.material;
  for (const size of SIZES) {
    await using q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, dispatchTls: { ca: m.caPem, cert: m.certPem, key: m.keyPem } });
    q.loadDatasetSchema(JSON.stringify(schemaOf(size)));
    q.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
    const window = { start_time: T0, end_time: T0 + 119 };
    const all = await q.executeDataset(window);
    assert.is(all.numRows, 2 * PER_BATCH, `d${size}: every record`);
    const some = await q.executeDataset({ ...window, sub_queries: [{ filters: [{ field: 'n', op: 'ge', value: '30' }] }] });
    assert.is(some.numRows, 2 * 10, `d${size}: the filter ran on the Storage Nodes`);
    assert.equal([...new Set(some.toArray().map((r) => Number((r.toJSON() as { n: unknown }).n)))].sort((a, b) => a - b), [30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
  }
});

t("records of another size than their dataset's schema are refused at the eob, naming the size", async (ctx) => {
  const { cluster } = ctx;
  await using ingest = new PlatformIngestClient();
  // A 150-byte schema under the 80-byte dataset's id.
  ingest.loadDatasetSchema(JSON.stringify({ ...schemaOf(150), id: 'd80', name: 'd80' }));
  ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const id = ingest.generateBatchIdTime(T0 + 600, T0 + 660);
  const recs = Array.from({ length: 3 }, (_, i) => ingest.convertRecordToBinary({ ts: String(T0 + 600 + i), n: '1' }));
  const ok = (await ingest.streamInsert(id, recs)) && (await ingest.sendEob(id));
  assert.not.ok(ok, 'the batch was acknowledged');
  assert.match(String(ingest.lastError), /records of 150 bytes; dataset 'd80' takes 80-byte records \(its schema on the DMS has 80-byte records\)/);
});

t('changing the cluster of a Storage Node on the DMS changes the SCC replica set without a restart', async (ctx) => {
  const { dms, cluster } = ctx;
  const sn2 = cluster.sns[1];
  const addresses = { production: { host: cluster.host, port: sn2?.productionPort }, control: { host: cluster.host, port: sn2?.commandPort } };
  const names = async (): Promise<string[]> => (await health(ctx)).replicas.replicas.map((r) => r.name).sort();
  assert.is((await dms.call('PUT', '/v1/nodes/sn2', dms.admin, { role: 'storageNode', cluster: 'c2', addresses })).status, 200);
  await until(async () => (await names()).join() === 'sn1');
  assert.is((await dms.call('PUT', '/v1/nodes/sn2', dms.admin, { role: 'storageNode', cluster: 'c1', addresses })).status, 200);
  await until(async () => (await names()).join() === 'sn1,sn2');
  // The returning node takes new batches (it counts for their acknowledgement once healthy).
  await using ingest = new PlatformIngestClient();
  ingest.loadDatasetSchema(JSON.stringify(schemaOf(80)));
  ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const id = ingest.generateBatchIdTime(T0 + 1200, T0 + 1260);
  assert.ok(await ingest.streamInsert(id, [ingest.convertRecordToBinary({ ts: String(T0 + 1200), n: '7' })]), String(ingest.lastError));
  assert.ok(await ingest.sendEob(id), String(ingest.lastError));
  await until(async () => {
    const r = (await (await fetch(`http://${cluster.host}:${sn2?.observabilityPort}/v1/batches?dataset=d80`)).json()) as { batches?: unknown[] };
    return r.batches?.length === 3;
  });
});

t('the command port of a registered SCC is HTTPS with mutual TLS: no certificate of the DMS-CA, no handshake', async (ctx) => {
  const { cluster, dms } = ctx;
  const url = `https://${cluster.host}:${cluster.scc.commandPort}/v1/query/stop`;
  const m = ctx.client.material;
  const ok = await requestJson('POST', url, { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: 'scc-test' }, {});
  assert.is(ok.status, 410);
  assert.is((ok.body as { replacement: string }).replacement, 'CancelQuery');
  const noCert = await requestJson('POST', url, { ca: dms.server.caCertPem, servername: 'scc-test' }, {}).then(
    (a) => `answered ${a.status}`,
    (err: unknown) => String(err),
  );
  assert.not.match(noCert, /^answered/, 'a client without a certificate was answered');
  const plain = await fetch(`http://${cluster.host}:${cluster.scc.commandPort}/v1/query/stop`, { method: 'POST' }).then(
    (r) => `answered ${r.status}`,
    (err: unknown) => String(err),
  );
  assert.not.match(plain, /^answered/, 'plain HTTP was answered');
});

t('an SCC with neither SN_TARGETS nor DMS_URL does not start, saying why', async () => {
  const p = startHd(['run', 'pipelines/scc.yaml', '--quiet'], { SN_TARGETS: '', DMS_URL: '', PRODUCTION_PORT: '0', COMMAND_PORT: '0', OBSERVABILITY_PORT: '0', QUERY_GRPC_PORT: '0' });
  const code = await p.exited;
  assert.is.not(code, 0);
  assert.match(p.output(), /SN_TARGETS is required without DMS_URL/);
});

t.run();
