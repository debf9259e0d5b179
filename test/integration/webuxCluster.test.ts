/**
 * The WebUX in headless Chromium against a real cluster (issue #20): a DMS serving the WebUX, an
 * SCC and two Storage Nodes, registered, mutual TLS (the harness of quarantine.test.ts). The
 * administrator signs in, sees both Storage Nodes and the SCC with their health, quarantines sn2
 * from the page and a query then avoids it (its query counter does not move), and releases it from
 * the page (the SCC catches it up and it is healthy again). Screenshots go to
 * HD_WEBUX_SCREENSHOTS_DIR or a temporary directory (as webuxBrowser.test.ts does).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { MtlsIdentity } from '../../net/mtls';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import type { NodeRole } from '../../control/dms/state';
import { tempDir } from '../control/support';
import { startWebuxDms, type WebuxDms } from '../control/webuxSupport';
import { enrol } from '../security/proxyIdentitySupport';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { getJson, sleep, type SccHealth } from './ingestKit';

const root = path.resolve(__dirname, '../..');
const shots = process.env.HD_WEBUX_SCREENSHOTS_DIR ? path.resolve(root, process.env.HD_WEBUX_SCREENSHOTS_DIR) : path.join(os.tmpdir(), 'hd-webux-screenshots');

function browserPath(): string | undefined {
  try {
    execFileSync('bash', [path.join(root, 'scripts/chromium.sh'), 'install'], { stdio: ['ignore', 'ignore', 'inherit'] });
    return execFileSync('bash', [path.join(root, 'scripts/chromium.sh'), 'path'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}
const exe = browserPath();
const t = suite<Ctx>('DMS-WebUX in headless Chromium on a real cluster: topology, quarantine from the page, queries avoid the node');

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
  dms: WebuxDms;
  browser: Browser;
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


if (exe) t.before(async (ctx) => {
  ctx.dms = await startWebuxDms({}, { configPollMs: 200 });
  const { dms } = ctx;
  const dir = tempDir('hd-webux-cluster-');
  writeFileSync(path.join(dir.dir, 'ca.pem'), dms.server.caCertPem);
  ctx.remove = () => dir.remove();
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({
    storageNodes: 2,
    dms: { url: dms.url, caFile: path.join(dir.dir, 'ca.pem'), token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } },
    sccEnv: { SN_TARGETS: '', RECORD_SIZE: '', QUERY_GRPC_ROLES: 'proxy,client' },
  });
  ctx.client = await enrol(dms, 'webux-client', 'client');
  assert.is((await dms.call('PUT', '/v1/datasets/q80', dms.admin, { schema })).status, 200);
  ctx.batches = 0;
  ctx.browser = await chromium.launch({ executablePath: exe as string, args: ['--no-sandbox', '--ignore-certificate-errors'] });
  mkdirSync(shots, { recursive: true });
});

if (exe) t.after(async (ctx) => {
  await ctx.browser?.close();
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


if (!exe) console.error('SKIPPED: webuxCluster.test.ts needs Chromium; scripts/chromium.sh install could not install it');
else
  t('sign in, real nodes with health, quarantine sn2 from the page: a query avoids it; release from the page', async (ctx) => {
    const { dms, cluster, browser } = ctx;
    const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
    await until('both replicas healthy', async () => (await stateOf(ctx, 'sn1')) === 'healthy' && (await stateOf(ctx, 'sn2')) === 'healthy');
    await ingest(ctx, 2);
    await until('sn2 holds both batches', async () => (await held(ctx, sn2)) === 2);

    const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
    await page.goto(`${dms.webUrl}/`);
    await page.fill('#secret', readFileSync(path.join(dms.dir, 'admin', 'webux-login'), 'utf8').trim());
    await page.click('#sign-in');
    // The real nodes, as they registered, with the health they report (ok: ready).
    for (const name of ['sn1', 'sn2']) await page.waitForSelector(`tr[data-node="${name}"] .state.ok`, { timeout: 30_000 });
    assert.match((await page.textContent('tr[data-node="sn1"]')) ?? '', /sn1\s*storageNode\s*c1\s*ready\s*ok.*production 127\.0\.0\.1:\d+/);
    assert.match((await page.textContent('tr[data-node="scc-test"]')) ?? '', /scc-test\s*scc/);
    await page.screenshot({ path: path.join(shots, 'cluster-topology.png'), fullPage: true });

    await page.fill('input[data-reason="sn2"]', 'quarantined from the browser test');
    await page.click('button[data-quarantine="sn2"]');
    await page.waitForSelector('button[data-release="sn2"]');
    await until('the SCC has sn2 quarantined', async () => (await stateOf(ctx, 'sn2')) === 'quarantined');
    await page.screenshot({ path: path.join(shots, 'cluster-quarantine.png'), fullPage: true });
    const sn2Before = await queryBatches(ctx, sn2);
    const sn1Before = await queryBatches(ctx, sn1, 'eob');
    assert.is(await queryAll(ctx), 2);
    assert.is(await queryBatches(ctx, sn2), sn2Before, "sn2's query counter moved while it was quarantined");
    assert.is((await queryBatches(ctx, sn1, 'eob')) - sn1Before, 2, 'sn1 answered every batch');

    await page.click('button[data-release="sn2"]');
    await page.waitForSelector('button[data-quarantine="sn2"]');
    await until('sn2 healthy again', async () => (await stateOf(ctx, 'sn2')) === 'healthy');
    await page.close();
  });

t.run();
