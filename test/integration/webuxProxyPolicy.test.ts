/**
 * A policy published from the WebUX, enforced by a real Proxy (issue #20): a DMS serving the
 * WebUX, a registered SCC and Storage Node (`hd run`), and a Proxy process registered with the DMS.
 * Under the policy the DMS starts with (allow everything) a guest reading through the Proxy sees
 * the `secret` field; the administrator then writes a policy hiding it from everyone but admins in
 * the Governance page of headless Chromium, validates and publishes it; the page shows the Proxy
 * installed it, and the same guest read through the Proxy now gets `secret` as zeros (the rewrite
 * masks its bytes with 0x00) while the other fields, and an admin's read, are intact.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { NodeRole } from '../../control/dms/state';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { INGRESS, spawnProxyProcess } from '../control/proxySupport';
import { tempDir } from '../control/support';
import { browserPath, screenshotsDir, startWebuxDms, type WebuxDms } from '../control/webuxSupport';
import { startCluster, type Cluster } from '../support/cluster';
import type { HdProcess } from '../support/hdProcess';

const LEDGER = {
  id: 'ledger',
  name: 'ledger',
  record_size: 24,
  time_field: 'ts',
  time_index_interval: 60,
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'secret', type: 'uint64', offset: 8, size: 8 },
    { name: 'amount', type: 'uint32', offset: 16, size: 4 },
  ],
};
const SCHEMA_JSON = JSON.stringify(LEDGER);
const OPEN_POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\n';
const HIDING_POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\nhidden_fields contains "secret" if input.role != "admin"\n';
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 20;
const WINDOW = { start_time: T0, end_time: T0 + 2 * 60 - 1 };

interface Ctx {
  dms: WebuxDms;
  cluster: Cluster;
  proxy: { proc: HdProcess; url: string };
  browser: Browser;
  remove(): void;
}

const shots = screenshotsDir();
const exe = browserPath();
const t = suite<Ctx>('DMS-WebUX in headless Chromium: a policy published from the Governance page is enforced by a real Proxy');

/** Every row a `role` identity reads through the Proxy (the ingress secret makes the client the ingress). */
async function readAs(ctx: Ctx, role: string): Promise<Record<string, unknown>[]> {
  await using q = new PlatformQueryClient(ctx.proxy.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
  q.loadDatasetSchema(SCHEMA_JSON);
  for (const [k, v] of Object.entries({ ...INGRESS, 'x-forwarded-role': role, 'x-forwarded-email': `${role}@example.com` })) q.addControlHeader(k, v);
  return (await q.executeDataset(WINDOW)).toArray().map((r) => r.toJSON() as Record<string, unknown>);
}

if (!exe) console.error('SKIPPED: webuxProxyPolicy.test.ts needs Chromium; scripts/chromium.sh install could not install it');
else {
  t.before(async (ctx) => {
    ctx.dms = await startWebuxDms({ metricsIntervalMs: 0 }, { configPollMs: 200, policyRetryMs: 200 });
    const { dms } = ctx;
    const dir = tempDir('hd-webux-proxy-');
    ctx.remove = () => dir.remove();
    const caFile = path.join(dir.dir, 'ca.pem');
    writeFileSync(caFile, dms.server.caCertPem);
    assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
    assert.is((await dms.call('PUT', '/v1/datasets/ledger', dms.admin, { schema: LEDGER })).status, 200);
    assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: OPEN_POLICY })).status, 200);
    const token = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
    ctx.cluster = await startCluster({ recordSize: 24, storageNodes: 1, schemas: [SCHEMA_JSON], dms: { url: dms.url, caFile, token, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } } });
    {
      await using ingest = new PlatformIngestClient();
      ingest.loadDatasetSchema(SCHEMA_JSON);
      ingest.setSccTargets([`${ctx.cluster.host}:${ctx.cluster.scc.productionPort}`]);
      for (let b = 0; b < 2; b++) {
        const id = ingest.generateBatchIdTime(T0 + b * 60, T0 + b * 60 + 60);
        const recs = Array.from({ length: PER_BATCH }, (_, i) => ingest.convertRecordToBinary({ ts: String(T0 + b * 60 + i), secret: String(1_000_000 + b * 100 + i), amount: String(i) }));
        assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
        assert.ok(await ingest.sendEob(id), String(ingest.lastError));
      }
    }
    ctx.proxy = await spawnProxyProcess(dms, caFile, 'proxy-ux', 300);
    // The Proxy serves once it read the SCC from the DMS and installed the policy.
    for (let i = 0; ; i++) {
      const rows = await readAs(ctx, 'admin').catch((err: unknown) => String(err));
      if (typeof rows !== 'string' && rows.length === 2 * PER_BATCH && dms.server.state.nodes['proxy-ux']?.policy_version === 1) break;
      if (i > 100) throw new Error(`the Proxy never served the ingested rows: ${typeof rows === 'string' ? rows : `${rows.length} rows`}`);
      await new Promise((res) => setTimeout(res, 200));
    }
    ctx.browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox', '--ignore-certificate-errors'] });
    mkdirSync(shots, { recursive: true });
  });
  t.after(async (ctx) => {
    await ctx.browser?.close();
    await ctx.proxy?.proc.stop();
    await ctx.cluster?.stop();
    await ctx.dms?.close();
    ctx.remove?.();
  });

  t('publish a policy hiding `secret` from the page: the Proxy installs it, and a guest reading through it gets zeros there', async (ctx) => {
    const { dms, browser } = ctx;
    const before = await readAs(ctx, 'guest');
    assert.is(before.length, 2 * PER_BATCH);
    assert.ok(before.every((r) => BigInt(r.secret as bigint) >= 1_000_000n), 'under the open policy a guest sees the secret');

    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${dms.webUrl}/`);
    await page.fill('#secret', readFileSync(path.join(dms.dir, 'admin', 'webux-login'), 'utf8').trim());
    await page.click('#sign-in');
    await page.click('#tab-governance');
    await page.waitForSelector('#policy-version:text-is("1")');
    await page.fill('#rego', HIDING_POLICY);
    await page.click('#validate-policy');
    await page.waitForSelector('#policy-check.ok');
    await page.click('#publish-policy');
    await page.waitForSelector('#publish-result');
    assert.match((await page.textContent('#publish-result')) ?? '', /Version 2: proxy-ux installed/);
    await page.screenshot({ path: path.join(shots, 'governance-proxy.png'), fullPage: true });
    await page.close();
    assert.is(dms.server.state.nodes['proxy-ux']?.policy_version, 2);

    const guest = await readAs(ctx, 'guest');
    assert.is(guest.length, 2 * PER_BATCH, 'a hidden field masks values, it drops no row');
    for (const r of guest) assert.is(BigInt(r.secret as bigint), 0n, `secret ${String(r.secret)} reached a guest`);
    assert.equal([...new Set(guest.map((r) => Number(r.amount)))].sort((a, b) => a - b), Array.from({ length: PER_BATCH }, (_, i) => i), 'the other fields are intact');
    const admin = await readAs(ctx, 'admin');
    assert.ok(admin.every((r) => BigInt(r.secret as bigint) >= 1_000_000n), 'an admin still sees it');
  });
}

t.run();
