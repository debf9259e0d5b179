/**
 * The WebUX in a real browser: headless Chromium from Debian's packages (scripts/chromium.sh),
 * driven by playwright-core pointed at that binary. Signs in, sees the topology, validates and
 * publishes a policy, quarantines a node, imports a license; saves a screenshot of each page to a
 * temporary directory, or to HD_WEBUX_SCREENSHOTS_DIR (`HD_WEBUX_SCREENSHOTS_DIR=docs/webux`
 * refreshes the ones docs/webux.md embeds; a test run leaves the tree as it was).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HD_LICENSE_PUBLIC_KEY } from '../../control/dms/webux/license';
import { registerWithDms } from '../../net/registerWithDms';
import { FLOWS44 } from './fixtures';
import { browserPath, screenshotsDir, startWebuxDms, type WebuxDms } from './webuxSupport';

const shots = screenshotsDir();

const exe = browserPath();
const b = suite<{ dms: WebuxDms; browser: Browser }>('DMS-WebUX in headless Chromium');
if (!exe) {
  console.error('SKIPPED: webuxBrowser.test.ts needs Chromium; scripts/chromium.sh install could not install it (apt-get install chromium needs root)');
} else {
  b.before(async (ctx) => {
    // The vendor key, as a deployed DMS has it: the License page captured for the docs is what a user sees.
    ctx.dms = await startWebuxDms({ licensePublicKeyPem: HD_LICENSE_PUBLIC_KEY });
    const { dms } = ctx;
    await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
    await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: FLOWS44 });
    const t = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'sn1', role: 'storageNode' })).body as { token: string };
    const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn1', role: 'storageNode', cluster: 'c1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t.token }, keyBits: 2048 });
    assert.ok(r.success, r.error_message);
    await dms.call('POST', '/v1/nodes/sn1/health', { ca: dms.server.caCertPem, cert: r.signed_cert_pem, key: r.client_key_pem }, { status: 'ok' });
    ctx.browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox', '--ignore-certificate-errors'] });
    mkdirSync(shots, { recursive: true });
  });
  b.after(async (ctx) => {
    await ctx.browser?.close();
    await ctx.dms?.close();
  });

  b('sign in, topology, quarantine, Governance publish, license: each page works and is captured', async ({ dms, browser }) => {
    const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
    await page.goto(`${dms.webUrl}/`);
    await page.fill('#secret', readFileSync(path.join(dms.dir, 'admin', 'webux-login'), 'utf8').trim());
    await page.screenshot({ path: path.join(shots, 'sign-in.png') });
    await page.click('#sign-in');
    await page.waitForSelector('tr[data-node="sn1"]');
    assert.match(await page.textContent('tr[data-node="sn1"]') ?? '', /storageNode.*c1.*ready/);
    await page.screenshot({ path: path.join(shots, 'topology.png') });

    await page.fill('input[data-reason="sn1"]', 'bad batch notices from verify_hash');
    await page.click('button[data-quarantine="sn1"]');
    await page.waitForSelector('button[data-release="sn1"]');
    assert.is(dms.server.state.nodes.sn1.state, 'quarantined');
    await page.screenshot({ path: path.join(shots, 'quarantine.png') });
    await page.click('button[data-release="sn1"]');
    await page.waitForSelector('button[data-quarantine="sn1"]');

    await page.click('#tab-governance');
    await page.fill('#rego', 'package hd.authz\n\nhidden_fields contains "secret" if input.role == "guest"\nallow if {\n');
    await page.click('#validate-policy');
    assert.match(await page.textContent('#policy-check') ?? '', /line \d+, column \d+/);
    await page.fill('#rego', 'package hd.authz\n\nhidden_fields contains "secret" if input.role == "guest"\n');
    await page.click('#dry-run');
    await page.waitForSelector('#dry-result');
    assert.match(await page.textContent('#dry-result') ?? '', /hidden: secret/);
    await page.click('#publish-policy');
    await page.waitForSelector('#publish-result');
    assert.is(dms.server.state.policy?.version, 1);
    await page.screenshot({ path: path.join(shots, 'governance.png'), fullPage: true });

    await page.click('#tab-license');
    await page.waitForSelector('#license-state');
    assert.match((await page.textContent('#license-state')) ?? '', /community.*A new cluster, or the first registration of a Storage Node or Proxy, beyond these is refused.*verified with the vendor key built into HD/s);
    await page.fill('#license-file', '{"license": {"id": "x"}, "signature": "AA=="}');
    await page.click('#import-license');
    await page.waitForSelector('[data-test="error"]');
    assert.match(await page.textContent('[data-test="error"]') ?? '', /license refused/);
    await page.screenshot({ path: path.join(shots, 'license.png') });
    for (const tab of ['datasets', 'certificates', 'tokens']) {
      await page.click(`#tab-${tab}`);
      await page.waitForSelector(`table#${tab === 'datasets' ? 'datasets' : tab === 'tokens' ? 'tokens' : 'certificates'} tbody tr`);
      await page.screenshot({ path: path.join(shots, `${tab}.png`) });
    }
  });
}
b.run();
