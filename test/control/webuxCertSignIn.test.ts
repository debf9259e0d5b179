/**
 * Client-certificate sign-in on the WebUX port, with a real TLS client presenting each certificate
 * (docs/webux.md, "Sign-in"): the administrator's certificate opens a session (cookie flags as the
 * secret's); a node's certificate, one from another CA, none at all and a revoked one are refused
 * naming why (GET /ui/certificate says the same before any attempt); the certificate alone opens
 * no /v1/ route; a request without this page's Origin is refused; a session opened with a
 * certificate ends once it is revoked. The browser does the same in webuxCertBrowser.test.ts.
 */
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { generateRsaKey } from '../../net/pki/x509';
import { registerWithDms } from '../../net/registerWithDms';
import { tempDir } from './support';
import { startWebuxDms, type WebAnswer, type WebSession, type WebuxDms } from './webuxSupport';

interface Ctx {
  dms: WebuxDms;
  admin: { cert: string; key: string };
  node: { cert: string; key: string };
  foreign: { cert: string; key: string };
  removeForeign(): void;
}

const t = suite<Ctx>('DMS-WebUX: sign-in with a client certificate');
t.before(async (ctx) => {
  ctx.dms = await startWebuxDms();
  const { dms } = ctx;
  ctx.admin = { cert: dms.admin.cert as string, key: dms.admin.key as string };
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, {});
  const tok = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'sn1', role: 'storageNode' })).body as { token: string };
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn1', role: 'storageNode', cluster: 'c1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: tok.token }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  ctx.node = { cert: r.signed_cert_pem, key: r.client_key_pem };
  // An administrator certificate from a CA that is not this DMS's.
  const dir = tempDir('hd-foreign-ca-');
  ctx.removeForeign = () => dir.remove();
  const other = await CertificateAuthority.open({ dir: dir.dir, keyBits: 2048, commonName: 'Some Other CA' });
  const kp = await generateRsaKey(2048);
  ctx.foreign = { cert: other.issue({ commonName: 'admin', role: 'admin', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3600_000 }).certPem, key: kp.privateKeyPem };
});
t.after(async (ctx) => {
  await ctx.dms.close();
  ctx.removeForeign?.();
});

const msg = (a: WebAnswer): string => (a.body as { message?: string }).message ?? '';

/** POST /ui/session/certificate presenting `client`, from this WebUX's page. */
const certSignIn = (dms: WebuxDms, client?: { cert: string; key: string }, origin: string | null = dms.webUrl): Promise<WebAnswer> =>
  dms.web('POST', '/ui/session/certificate', { body: {}, ...(client && { client }), headers: origin === null ? {} : { origin } });

t("the administrator's certificate signs in: an HttpOnly, Secure, SameSite=Strict session; the certificate alone opens no /v1/ route", async ({ dms, admin }) => {
  const seen = await dms.web('GET', '/ui/certificate', { client: admin });
  assert.is(seen.status, 200);
  assert.equal({ ...(seen.body as Record<string, unknown>), serial: undefined, not_after: undefined, issuer: undefined }, { presented: true, subject: { cn: 'admin', ou: 'admin' }, accepted: true, serial: undefined, not_after: undefined, issuer: undefined });
  assert.is((await dms.web('GET', '/v1/nodes', { client: admin })).status, 401, 'a client certificate alone is no session');
  const r = await certSignIn(dms, admin);
  assert.is(r.status, 201, r.text);
  const cookie = String((r.headers['set-cookie'] as string[])[0]);
  for (const flag of ['HttpOnly', 'Secure', 'SameSite=Strict']) assert.ok(cookie.includes(flag), `${flag} in ${cookie}`);
  const s: WebSession = { cookie: cookie.split(';')[0] as string, csrf: (r.body as { csrf: string }).csrf };
  assert.is((r.body as { who: string }).who, 'admin');
  assert.is((await dms.web('GET', '/v1/nodes', { session: s })).status, 200);
  // CSRF still applies to a certificate's session.
  assert.is((await dms.web('PUT', '/v1/clusters/c1', { session: { ...s, csrf: 'x' }, body: {} })).status, 403);
});

t("refused with the reason: a node's certificate (403), another CA's (401), none (401); GET /ui/certificate says why beforehand", async ({ dms, node, foreign }) => {
  const asNode = await certSignIn(dms, node);
  assert.is(asNode.status, 403);
  assert.match(msg(asNode), /certificate sign-in refused: the certificate of 'sn1' is a storageNode certificate: only an administrator certificate \(OU=admin\) signs in/);
  const nodeSeen = (await dms.web('GET', '/ui/certificate', { client: node })).body as { accepted: boolean; reason: string; subject: { ou: string } };
  assert.is(nodeSeen.accepted, false);
  assert.is(nodeSeen.subject.ou, 'storageNode');
  const other = await certSignIn(dms, foreign);
  assert.is(other.status, 401);
  assert.match(msg(other), /the certificate of 'admin' was not issued by this DMS's CA \(issuer 'Some Other CA'/);
  const none = await certSignIn(dms);
  assert.is(none.status, 401);
  assert.match(msg(none), /presented no client certificate/);
  assert.equal(((await dms.web('GET', '/ui/certificate')).body as { presented: boolean }).presented, false);
});

t('a request without this page\'s Origin is refused (403): a certificate the browser presents to any site cannot be used to sign in from another page', async ({ dms, admin }) => {
  const cross = await certSignIn(dms, admin, 'https://evil.example');
  assert.is(cross.status, 403);
  assert.match(msg(cross), /taken only from this WebUX's page/);
  assert.is((await certSignIn(dms, admin, null)).status, 403);
});

t("DMS-CA certificates the DMS does not vouch for: an expired one (401) and an administrator one it never recorded (403)", async ({ dms }) => {
  // The DMS's own CA, opened from its data directory (unsealed in tests), issues outside the DMS's records.
  const ca = await CertificateAuthority.open({ dir: path.join(dms.dir, 'ca') });
  const kp = await generateRsaKey(2048);
  const expired = { cert: ca.issue({ commonName: 'admin', role: 'admin', publicKeyPem: kp.publicKeyPem, lifetimeMs: 60_000 }, Date.now() - 3600_000).certPem, key: kp.privateKeyPem };
  const old = await certSignIn(dms, expired);
  assert.is(old.status, 401);
  assert.match(msg(old), /the certificate of 'admin' expired at/);
  const unrecorded = { cert: ca.issue({ commonName: 'admin', role: 'admin', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3600_000 }).certPem, key: kp.privateKeyPem };
  const unknown = await certSignIn(dms, unrecorded);
  assert.is(unknown.status, 403);
  assert.match(msg(unknown), /the administrator certificate [0-9a-f]+ is not in this DMS's records/);
});

t("a revoked administrator certificate is refused (403), and the sessions it opened end", async ({ dms, admin }) => {
  const r = await certSignIn(dms, admin);
  const s: WebSession = { cookie: String((r.headers['set-cookie'] as string[])[0]).split(';')[0] as string, csrf: (r.body as { csrf: string }).csrf };
  const secret = await dms.signIn();
  const serial = (r.body as { certificate: string }).certificate;
  assert.is((await dms.web('POST', '/v1/certificates/revoke', { session: secret, body: { serial, reason: 'lost laptop' } })).status, 200);
  const after = await dms.web('GET', '/v1/nodes', { session: s });
  assert.is(after.status, 401);
  assert.match(msg(after), /this session was opened with has been revoked/);
  const again = await certSignIn(dms, admin);
  assert.is(again.status, 403);
  assert.match(msg(again), new RegExp(`the certificate ${serial} of 'admin' was revoked at .* \\(lost laptop\\)`));
  assert.is((await dms.web('GET', '/v1/nodes', { session: secret })).status, 200, "the secret's session is not tied to the certificate");
});

t.run();
