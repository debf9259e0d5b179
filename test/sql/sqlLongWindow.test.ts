/**
 * Open and long time windows (issue #17 item 4) over real processes: a DMS (in this process), an SCC
 * and two Storage Nodes registered with it, a Proxy process and hd_sql in Proxy mode. Four one-minute
 * batches lie years and months apart. `WHERE ts > 0` (the window [1, now]: 29 million intervals) and
 * a statement with no time bound under a lookback of a year answer right, and the Proxy names
 * exactly the batches that exist (its `hd_proxy_window_batches_total` counter moves by the number of
 * batches, resolved from the nodes' batch index, never by enumeration). A constraint the policy
 * enforces still holds over the resolved batches.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { NodeRole } from '../../control/dms/state';
import { registerWithDms } from '../../net/registerWithDms';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { spawnProxyProcess } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { sqlProcessEnv } from './sqlProcessEnv';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const DAY = 86_400;
const YEAR = 365 * DAY;
const NOW = Math.floor(Date.now() / 1000);
const M = NOW - (NOW % 60);
/** Batch starts: two years back (outside a year's lookback), 300 days, 100 days and an hour back. */
const STARTS = [M - 2 * YEAR, M - 300 * DAY, M - 100 * DAY, M - 3600];
const PER_BATCH = 60;
/** Analysts only see dst_port 443 (an enforced constraint); admins see everything. */
const POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\nconstraints contains {"field": "dst_port", "value": "443"} if input.role == "analyst"\n';

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  proxy: HdProcess;
  proxyUrl: string;
  proxyObs: number;
  files: { ca: string; cert: string; key: string };
  remove(): void;
}

async function startSql(ctx: Ctx, role: string, extra: Record<string, string> = {}): Promise<{ sql: HdProcess; pgPort: number }> {
  const [pgPort, ret] = [await freePort(), await freePort()];
  const sql = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv({ pgPort, returnPort: ret, dms: { url: ctx.dms.url, ...ctx.files } }, { HD_PROXY_ENDPOINT: ctx.proxyUrl, HD_SQL_PROXY_ROLE: role, HD_SQL_PROXY_EMAIL: `${role}@example.com`, ...extra }),
  );
  await waitForPort('127.0.0.1', pgPort, sql, 60_000);
  return { sql, pgPort };
}

async function query(pgPort: number, text: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'hd', database: 'hd' });
  await c.connect();
  try {
    return (await c.query(text)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

/** The Proxy's `hd_proxy_window_batches_total` by `resolved_by`. */
async function named(ctx: Ctx): Promise<{ batch_index: number; enumeration: number }> {
  const text = await (await fetch(`http://127.0.0.1:${ctx.proxyObs}/metrics`)).text();
  const of = (how: string): number => Number(new RegExp(`hd_proxy_window_batches_total\\{resolved_by="${how}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return { batch_index: of('batch_index'), enumeration: of('enumeration') };
}

/** Runs `text` and says how many batch ids the Proxy named for it, and how. */
async function counted(ctx: Ctx, pgPort: number, text: string): Promise<{ rows: Record<string, unknown>[]; batchIndex: number; enumeration: number }> {
  const before = await named(ctx);
  const rows = await query(pgPort, text);
  const after = await named(ctx);
  return { rows, batchIndex: after.batch_index - before.batch_index, enumeration: after.enumeration - before.enumeration };
}

const lw = suite<Ctx>('open and long windows through hd_sql and a Proxy process: the batches that exist, not every interval');
lw.before(async (ctx) => {
  try {
    await setUp(ctx);
  } catch (err) {
    console.error('before failed:', err);
    throw err;
  }
});
async function setUp(ctx: Ctx): Promise<void> {
  ctx.dms = await startTestDms();
  const { dms } = ctx;
  const t = tempDir('hd-long-window-');
  ctx.remove = t.remove;
  const caFile = path.join(t.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
  const tokenFor = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [schemaJson], dms: { url: dms.url, caFile, token: tokenFor, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } } });
  const { cluster } = ctx;
  {
    await using ingest = new PlatformIngestClient();
    ingest.loadDatasetSchema(schemaJson);
    ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
    for (const s of STARTS) {
      const id = ingest.generateBatchIdTime(s, s + 60);
      const recs = Array.from({ length: PER_BATCH }, (_, i) => ingest.convertRecordToBinary({ ts: String(s + i), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: i % 2 === 0 ? '443' : '53', proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' }));
      assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
      assert.ok(await ingest.sendEob(id), String(ingest.lastError));
    }
  }
  for (const sn of cluster.sns) {
    for (;;) {
      const r = (await (await fetch(`http://${cluster.host}:${sn.observabilityPort}/v1/batches?dataset=flows`)).json()) as { batches: unknown[] };
      if (r.batches.length === STARTS.length) break;
      await new Promise((res) => setTimeout(res, 50));
    }
  }
  // The topology the Proxy reads: the SCC (registered: mutual TLS) and the nodes' observability ports.
  const scc = await dms.call('PUT', '/v1/nodes/scc-test', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: cluster.host, port: cluster.scc.productionPort }, grpc: { host: cluster.host, port: cluster.scc.queryGrpcPort } } });
  assert.ok(scc.status < 300, JSON.stringify(scc.body));
  for (const sn of cluster.sns) {
    const r = await dms.call('PUT', `/v1/nodes/${sn.name}`, dms.admin, { role: 'storageNode', cluster: 'c1', addresses: { observability: { host: cluster.host, port: sn.observabilityPort } } });
    assert.ok(r.status < 300, JSON.stringify(r.body));
  }
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: JSON.parse(schemaJson) })).status, 200);
  assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY })).status, 200);
  const proxy = await spawnProxyProcess(dms, caFile, 'proxy-lw');
  ctx.proxy = proxy.proc;
  ctx.proxyUrl = proxy.url;
  ctx.proxyObs = proxy.obs;
  const sqlToken = await tokenFor('hd-sql', 'sqlServer');
  const reg = await registerWithDms({ dmsUrl: dms.url, nodeName: 'hd-sql', role: 'sqlServer', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: sqlToken }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  ctx.files = { ca: caFile, cert: path.join(t.dir, 'sql.crt'), key: path.join(t.dir, 'sql.key') };
  writeFileSync(ctx.files.cert, reg.signed_cert_pem);
  writeFileSync(ctx.files.key, reg.client_key_pem, { mode: 0o600 });
}
lw.after(async (ctx) => {
  await ctx.proxy?.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

lw('ts > 0 and no time bound with a year of lookback: right answers, one batch id named per batch that exists', async (ctx) => {
  const { sql, pgPort } = await startSql(ctx, 'admin', { HD_SQL_DEFAULT_LOOKBACK_SEC: String(YEAR) });
  try {
    const all = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(ts)::BIGINT AS lo, max(ts)::BIGINT AS hi FROM flows WHERE ts > 0');
    assert.equal(all.rows, [{ n: PER_BATCH * STARTS.length, lo: String(STARTS[0]), hi: String((STARTS[3] as number) + PER_BATCH - 1) }]);
    assert.is(all.batchIndex, STARTS.length, 'one id per batch that exists');
    assert.is(all.enumeration, 0);

    const lookback = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(ts)::BIGINT AS lo FROM flows');
    assert.equal(lookback.rows, [{ n: PER_BATCH * 3, lo: String(STARTS[1]) }], 'the batch two years back is outside the lookback');
    assert.is(lookback.batchIndex, 3);
    assert.is(lookback.enumeration, 0);

    const none = await counted(ctx, pgPort, `SELECT count(*)::INTEGER AS n FROM flows WHERE ts > ${NOW + 10 * YEAR}`);
    assert.equal(none.rows, [{ n: 0 }], 'a window where no batch exists reads nothing');
    assert.is(none.batchIndex, 0);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

lw('an enforced constraint still holds over the resolved batches', async (ctx) => {
  const { sql, pgPort } = await startSql(ctx, 'analyst');
  try {
    const r = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(dst_port)::INTEGER AS lo, max(dst_port)::INTEGER AS hi FROM flows WHERE ts > 0');
    assert.equal(r.rows, [{ n: (PER_BATCH / 2) * STARTS.length, lo: 443, hi: 443 }]);
    assert.is(r.batchIndex, STARTS.length);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

lw.run();
