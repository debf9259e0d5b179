/**
 * Certificate sign-in in headless Chromium (docs/webux.md, "Sign-in"). Chromium takes client
 * certificates from an NSS database and picks one through a dialog or an enterprise policy, which a
 * test cannot drive headlessly without root-owned policy files; so the certificate is given through
 * playwright's `clientCertificates`: playwright makes the TLS connection to the WebUX presenting it,
 * and the browser renders what comes back. The WebUX's TLS client authentication is thus real (the
 * DMS verifies the certificate on the handshake; webuxCertSignIn.test.ts does the same with Node's
 * TLS client), and the pages are the browser's.
 *
 * An administrator certificate signs in with one click and sees the topology; a Storage Node's
 * certificate and one from another CA get the sign-in page saying why they cannot sign in, with the
 * login secret still offered.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { generateRsaKey } from '../../net/pki/x509';
import { registerWithDms } from '../../net/registerWithDms';
import { tempDir } from './support';
import { browserPath, screenshotsDir, startWebuxDms, type WebuxDms } from './webuxSupport';

interface Ctx {
  dms: WebuxDms;
  browser: Browser;
  node: { cert: string; key: string };
  foreign: { cert: string; key: string };
  remove(): void;
}

const shots = screenshotsDir();
const exe = browserPath();
const t = suite<Ctx>('DMS-WebUX in headless Chromium: sign-in with a client certificate');

if (!exe) console.error('SKIPPED: webuxCertBrowser.test.ts needs Chromium; scripts/chromium.sh install could not install it');
else {
  t.before(async (ctx) => {
    ctx.dms = await startWebuxDms();
    const { dms } = ctx;
    await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
    const tok = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'sn1', role: 'storageNode' })).body as { token: string };
    const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn1', role: 'storageNode', cluster: 'c1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: tok.token }, keyBits: 2048 });
    assert.ok(r.success, r.error_message);
    ctx.node = { cert: r.signed_cert_pem, key: r.client_key_pem };
    const dir = tempDir('hd-foreign-ca-');
    ctx.remove = () => dir.remove();
    const other = await CertificateAuthority.open({ dir: dir.dir, keyBits: 2048, commonName: 'Some Other CA' });
    const kp = await generateRsaKey(2048);
    ctx.foreign = { cert: other.issue({ commonName: 'admin', role: 'admin', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3600_000 }).certPem, key: kp.privateKeyPem };
    ctx.browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox', '--ignore-certificate-errors'] });
    mkdirSync(shots, { recursive: true });
  });
  t.after(async (ctx) => {
    await ctx.browser?.close();
    await ctx.dms?.close();
    ctx.remove?.();
  });

  /** A page whose connections to the WebUX present `client`. */
  const pageWith = async ({ browser, dms }: Ctx, client: { cert: string; key: string }): Promise<Page> => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 820 }, ignoreHTTPSErrors: true, clientCertificates: [{ origin: dms.webUrl, cert: Buffer.from(client.cert), key: Buffer.from(client.key) }] });
    return context.newPage();
  };

  t('the administrator certificate signs in with one click and sees the topology', async (ctx) => {
    const { dms } = ctx;
    const page = await pageWith(ctx, { cert: dms.admin.cert as string, key: dms.admin.key as string });
    await page.goto(`${dms.webUrl}/`);
    await page.waitForSelector('#cert-sign-in');
    assert.match((await page.textContent('#cert-card')) ?? '', /presented admin \(OU=admin/);
    await page.screenshot({ path: path.join(shots, 'sign-in-certificate.png') });
    await page.click('#cert-sign-in');
    await page.waitForSelector('tr[data-node="sn1"]');
    assert.match((await page.textContent('header')) ?? '', /admin/);
    await page.context().close();
  });

  t("a Storage Node's certificate and another CA's are refused on the sign-in page, saying why; the login secret is still offered", async (ctx) => {
    const { dms } = ctx;
    const cases: [{ cert: string; key: string }, RegExp, string][] = [
      [ctx.node, /the certificate of 'sn1' is a storageNode certificate: only an administrator certificate \(OU=admin\) signs in/, 'sign-in-refused.png'],
      [ctx.foreign, /the certificate of 'admin' was not issued by this DMS's CA \(issuer 'Some Other CA'/, ''],
    ];
    for (const [client, why, shot] of cases) {
      const page = await pageWith(ctx, client);
      await page.goto(`${dms.webUrl}/`);
      await page.waitForSelector('#cert-refusal');
      assert.match((await page.textContent('#cert-refused')) ?? '', /This certificate cannot sign in/);
      assert.match((await page.textContent('#cert-refusal')) ?? '', why);
      assert.is(await page.$('#cert-sign-in'), null, 'no sign-in button for a refused certificate');
      assert.ok(await page.$('#secret'), 'the login secret is still offered');
      if (shot) await page.screenshot({ path: path.join(shots, shot) });
      await page.context().close();
    }
  });
}

t.run();
