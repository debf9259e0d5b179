/**
 * Security issue #14, item 3: the Proxy takes X-Forwarded-Role / X-Forwarded-Email only from an
 * authenticating ingress. Against real Proxy processes (`hd run pipelines/proxy.yaml`, registered
 * with a test DMS; one configured as `hd up` configures it — default ingress roles and an ingress
 * secret — and one that also verifies JWTs) in front of a stand-in SCC that records every query it
 * is sent:
 *
 * - the red team's attack — no certificate, no token, `X-Forwarded-Role: admin` — is 401 and
 *   nothing is dispatched (no data can flow), on every route that takes an identity;
 * - spoofing with a DMS-CA certificate of a role that may not assert identities (`client`,
 *   `storageNode`) is 403, with a certificate of another CA or a wrong secret 401;
 * - a real ingress is accepted: an `ingress` certificate, hd_sql's `sqlServer` certificate, the
 *   shared secret, or a verified JWT (whose claims win over any forwarded header).
 */
import { createPrivateKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { INGRESS_SECRET_HEADER } from '../../control/proxy/identity';
import { generateRsaKey } from '../../net/pki/x509';
import type { NodeRole } from '../../control/dms/state';
import { INGRESS, spawnProxyProcess, StandInScc } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { FLOWS44 } from '../control/fixtures';
import type { HdProcess } from '../support/hdProcess';
import { enrol } from './proxyIdentitySupport';

const POLICY = `package hd.authz
import rego.v1
default allow := true
hidden_fields contains "src_ip" if input.role != "admin"
`;
const TOKEN = 'ab'.repeat(16);
const QUERY = { query_id: 7, dataset: 'flows', start: 1_700_000_000, end: 1_700_000_059, return_address: { host: '127.0.0.1', port: 6989 }, token: TOKEN };
const SPOOF = { 'x-forwarded-role': 'admin', 'x-forwarded-email': 'attacker@example.com' };

interface Ctx {
  dms: TestDms;
  scc: StandInScc;
  /** Configured as `hd up` configures it (ingress roles and secret, no JWT). */
  proxy: { proc: HdProcess; url: string };
  /** Also verifies JWTs (PROXY_JWT_*). */
  jwtProxy: { proc: HdProcess; url: string };
  /** Signs a JWT of the configured issuer. */
  sign(claims: Record<string, unknown>): Promise<string>;
  /** TLS material of certificates of each role, issued by the DMS. */
  certs: Map<string, ClientTls>;
  anon: ClientTls;
  remove(): void;
}

interface Ev {
  identity: { role: string; email: string };
  rewrite: { hidden_fields: string[]; field_mask: string | null };
}

const t = suite<Ctx>('security #14.3: identity headers only from an authenticating ingress (a real Proxy process)');
t.before(async (ctx) => {
  ctx.dms = await startTestDms();
  const { dms } = ctx;
  const dir = tempDir('hd-sec-identity-');
  ctx.remove = dir.remove;
  ctx.scc = await new StandInScc().start();
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  await dms.call('PUT', '/v1/nodes/scc-a', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: ctx.scc.port } } });
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: FLOWS44 })).status, 200);
  assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY })).status, 200);
  const issuer = await generateRsaKey(2048);
  const keyFile = path.join(dir.dir, 'jwt.pub.pem');
  writeFileSync(keyFile, issuer.publicKeyPem);
  ctx.sign = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).setIssuer('https://idp.example').setAudience('hd').setIssuedAt().setExpirationTime('5m').sign(createPrivateKey(issuer.privateKeyPem));
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  ctx.proxy = await spawnProxyProcess(dms, caFile, 'proxy-sec', 500);
  ctx.jwtProxy = await spawnProxyProcess(dms, caFile, 'proxy-sec-jwt', 500, { PROXY_JWT_ISSUER: 'https://idp.example', PROXY_JWT_KEY_FILE: keyFile, PROXY_JWT_AUDIENCE: 'hd' });
  ctx.anon = { ca: dms.server.caCertPem };
  ctx.certs = new Map();
  for (const role of ['ingress', 'sqlServer', 'client', 'storageNode'] as NodeRole[]) {
    const m = (await enrol(dms, `sec-${role.toLowerCase()}`, role)).material;
    ctx.certs.set(role, { ca: m.caPem, cert: m.certPem, key: m.keyPem });
  }
  // The Proxies answer once they have read the policy and the SCC from the DMS.
  const ready = async (url: string, headers: Record<string, string>): Promise<void> => {
    for (let i = 0; ; i++) {
      const r = await requestJson('POST', `${url}/v1/query`, ctx.anon, QUERY, { headers });
      if (r.status === 200) return;
      if (i > 200) throw new Error(`the Proxy at ${url} never answered a query: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  };
  await ready(ctx.proxy.url, { ...INGRESS, ...SPOOF });
  await ready(ctx.jwtProxy.url, { authorization: `Bearer ${await ctx.sign({ role: 'guest', email: 'g@x' })}` });
});
t.after(async (ctx) => {
  await ctx.proxy?.proc.stop();
  await ctx.jwtProxy?.proc.stop();
  await ctx.scc?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

const post = (ctx: Ctx, tls: ClientTls, headers: Record<string, string>, route = '/v1/query', body: unknown = QUERY, url = ctx.proxy.url): Promise<JsonAnswer> => requestJson('POST', `${url}${route}`, tls, body, { headers });
const message = (r: JsonAnswer): string => String((r.body as { message?: unknown }).message);

t('the red team: no certificate, no token, X-Forwarded-Role: admin → 401 and nothing dispatched', async (ctx) => {
  const before = ctx.scc.queries.length;
  const r = await post(ctx, ctx.anon, SPOOF);
  assert.is(r.status, 401, JSON.stringify(r.body));
  assert.is((r.body as { error: string }).error, 'unauthenticated');
  assert.match(message(r), /only from an authenticating ingress/);
  assert.match(message(r), /PROXY_INGRESS_ROLES/);
  // The other routes that take an identity refuse it the same way.
  assert.is((await post(ctx, ctx.anon, SPOOF, '/v1/query/cancel', { query_id: 7, token: TOKEN })).status, 401);
  assert.is((await requestJson('GET', `${ctx.proxy.url}/v1/datasets`, ctx.anon, undefined, { headers: SPOOF })).status, 401);
  // At the Proxy that verifies JWTs: a bearer that is not a JWT of the issuer does not open the door, nor do headers alone.
  assert.is((await post(ctx, ctx.anon, { ...SPOOF, authorization: 'Bearer not-a-jwt' }, '/v1/query', QUERY, ctx.jwtProxy.url)).status, 401);
  assert.is((await post(ctx, ctx.anon, SPOOF, '/v1/query', QUERY, ctx.jwtProxy.url)).status, 401);
  assert.is(ctx.scc.queries.length, before, 'no query reached the SCC: no record can flow');
});

t('spoofing with a certificate of a role that may not assert identities is 403; another CA, a wrong secret 401', async (ctx) => {
  const before = ctx.scc.queries.length;
  for (const role of ['client', 'storageNode']) {
    const r = await post(ctx, ctx.certs.get(role) as ClientTls, SPOOF);
    assert.is(r.status, 403, `${role}: ${JSON.stringify(r.body)}`);
    assert.match(message(r), new RegExp(`holds a ${role} certificate, and only ingress, sqlServer certificates may assert identities`));
  }
  const other = await startTestDms();
  try {
    const foreign = (await enrol(other, 'sec-foreign', 'ingress')).material;
    // Trusts our CA for the server, presents a certificate of another CA: not verified, so no ingress.
    const r = await post(ctx, { ca: ctx.dms.server.caCertPem, cert: foreign.certPem, key: foreign.keyPem }, SPOOF);
    assert.is(r.status, 401, JSON.stringify(r.body));
  } finally {
    await other.close();
  }
  const wrong = await post(ctx, ctx.anon, { ...SPOOF, [INGRESS_SECRET_HEADER]: 'not-the-secret-but-long-enough' });
  assert.is(wrong.status, 401);
  assert.match(message(wrong), /ingress secret .* is wrong/);
  // The right certificate with a wrong secret is still refused: a secret sent is always checked.
  assert.is((await post(ctx, ctx.certs.get('ingress') as ClientTls, { ...SPOOF, [INGRESS_SECRET_HEADER]: 'x'.repeat(40) })).status, 401);
  assert.is(ctx.scc.queries.length, before, 'nothing was dispatched');
});

t('a real ingress is accepted: ingress and sqlServer certificates, the shared secret, a verified JWT', async (ctx) => {
  const cases: [string, ClientTls, Record<string, string>, { role: string; email: string }, string?][] = [
    ['ingress certificate', ctx.certs.get('ingress') as ClientTls, { 'x-forwarded-role': 'guest', 'x-forwarded-email': 'g@example.com' }, { role: 'guest', email: 'g@example.com' }],
    ["hd_sql's sqlServer certificate", ctx.certs.get('sqlServer') as ClientTls, SPOOF, { role: 'admin', email: 'attacker@example.com' }],
    ['shared secret', ctx.anon, { ...INGRESS, 'x-forwarded-role': 'guest', 'x-forwarded-email': 's@example.com' }, { role: 'guest', email: 's@example.com' }],
    ['JWT (claims win over forwarded headers)', ctx.anon, { authorization: `Bearer ${await ctx.sign({ role: 'guest', email: 'jwt@example.com' })}`, ...SPOOF }, { role: 'guest', email: 'jwt@example.com' }, ctx.jwtProxy.url],
    ['ingress certificate at the JWT-verifying Proxy', ctx.certs.get('ingress') as ClientTls, { 'x-forwarded-role': 'guest', 'x-forwarded-email': 'i@example.com' }, { role: 'guest', email: 'i@example.com' }, ctx.jwtProxy.url],
  ];
  for (const [what, tls, headers, who, url] of cases) {
    const before = ctx.scc.queries.length;
    const r = await post(ctx, tls, headers, '/v1/query', QUERY, url);
    assert.is(r.status, 200, `${what}: ${JSON.stringify(r.body)}`);
    const ev = r.body as Ev;
    assert.equal(ev.identity, who, what);
    // The policy is applied to that identity: only admin sees src_ip.
    assert.equal(ev.rewrite.hidden_fields, who.role === 'admin' ? [] : ['src_ip'], what);
    assert.is(ctx.scc.queries.length, before + 1, `${what}: dispatched`);
  }
  const ds = await requestJson('GET', `${ctx.proxy.url}/v1/datasets`, ctx.certs.get('sqlServer') as ClientTls, undefined, { headers: SPOOF });
  assert.is(ds.status, 200);
});

t.run();
