/**
 * The WebUX in headless Chromium against a real cluster (issue #20): a DMS serving the WebUX, an
 * SCC and two Storage Nodes, registered, mutual TLS (the harness of quarantine.test.ts). The
 * administrator signs in, sees both Storage Nodes and the SCC with their health, quarantines sn2
 * from the page and a query then avoids it (its query counter does not move), and releases it from
 * the page (the SCC catches it up and it is healthy again). The Metrics page then draws the ingest
 * the test made, from the nodes' own /metrics as the DMS scraped them. Screenshots go to
 * HD_WEBUX_SCREENSHOTS_DIR or a temporary directory (as webuxBrowser.test.ts does).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { browserPath, screenshotsDir, startWebuxDms, type WebuxDms } from '../control/webuxSupport';
import type { ClusterSn } from '../support/cluster';
import { held, ingest, queryAll, queryBatches, startRegisteredCluster, stateOf, until, type RegisteredCluster } from './registeredClusterKit';

const shots = screenshotsDir();
const exe = browserPath();
const t = suite<Ctx>('DMS-WebUX in headless Chromium on a real cluster: topology, quarantine from the page, queries avoid the node');

interface Ctx extends RegisteredCluster<WebuxDms> {
  browser: Browser;
}

if (exe) t.before(async (ctx) => {
  await startRegisteredCluster(ctx, await startWebuxDms({ metricsIntervalMs: 300 }, { configPollMs: 200 }), 'hd-webux-cluster-', 'webux-client');
  ctx.browser = await chromium.launch({ executablePath: exe as string, args: ['--no-sandbox', '--ignore-certificate-errors'] });
  mkdirSync(shots, { recursive: true });
});

if (exe) t.after(async (ctx) => {
  await ctx.browser?.close();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});



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

if (exe)
  t('Metrics page: after an ingest, the graphs of the Storage Nodes and the SCC show points (records/s above zero) and the replica states', async (ctx) => {
    const { dms, browser } = ctx;
    await ingest(ctx, 2);
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${dms.webUrl}/`);
    await page.fill('#secret', readFileSync(path.join(dms.dir, 'admin', 'webux-login'), 'utf8').trim());
    await page.click('#sign-in');
    await page.waitForSelector('#tab-metrics');
    await page.click('#tab-metrics');
    // A chart's data-max is its largest value: above zero once a scrape after the ingest has a rate.
    for (const node of ['sn1', 'sn2', 'scc-test']) {
      const chart = `svg[data-node="${node}"][data-chart="ingest_records_per_s"]`;
      await until(`${node}'s ingest chart above zero`, async () => Number(await page.getAttribute(chart, 'data-max', { timeout: 1000 })) > 0);
      assert.ok(Number(await page.getAttribute(`${chart} polyline`, 'data-points')) >= 2, `${node}: a line of points`);
    }
    await page.waitForSelector('svg[data-node="sn1"][data-chart="query_batches_per_s"]');
    await page.waitForSelector('svg[data-node="sn1"][data-chart="disk_free_bytes"]');
    // Attached, not "visible": a steady count draws a flat line, whose box has no height.
    const healthy = 'svg[data-node="scc-test"][data-chart="replicas"] polyline[data-series="replicas.healthy"]';
    await page.waitForSelector(healthy, { state: 'attached' });
    assert.ok(Number(await page.getAttribute(healthy, 'data-points')) >= 2, 'the replica states have a line of points');
    await page.screenshot({ path: path.join(shots, 'metrics.png'), fullPage: true });
    await page.close();
  });

t.run();
