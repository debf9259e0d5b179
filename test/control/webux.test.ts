import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ClientTls } from '../../net/jsonClient';
import { registerWithDms } from '../../net/registerWithDms';
import { FLOWS44 } from './fixtures';
import { startWebuxDms, type WebSession, type WebuxDms } from './webuxSupport';

interface Ctx {
  dms: WebuxDms;
  node: ClientTls;
  s: WebSession;
}

const ux = suite<Ctx>('DMS-WebUX: sign-in, CSRF and the admin API behind the pages');
ux.before(async (ctx) => {
  ctx.dms = await startWebuxDms();
  const { dms } = ctx;
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, {});
  const t = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'sn1', role: 'storageNode' })).body as { token: string };
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn1', role: 'storageNode', cluster: 'c1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t.token }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  ctx.node = { ca: dms.server.caCertPem, cert: r.signed_cert_pem, key: r.client_key_pem };
  ctx.s = await dms.signIn();
});
ux.after(async (ctx) => ctx.dms.close());

const err = (b: unknown): string => (b as { error: string }).error;

ux('the page and its modules are served from the DMS with a strict CSP; no CDN is referenced', async ({ dms }) => {
  const page = await dms.web('GET', '/');
  assert.is(page.status, 200);
  assert.match(String(page.headers['content-type']), /text\/html/);
  assert.match(String(page.headers['content-security-policy']), /script-src 'self'/);
  assert.is(page.headers['x-frame-options'], 'DENY');
  assert.not.match(page.text, /https?:\/\/(?!127)/);
  for (const m of ['/app.js', '/vendor/preact.mjs', '/vendor/hooks.mjs', '/vendor/htm.mjs']) {
    const r = await dms.web('GET', m);
    assert.is(r.status, 200, m);
    assert.match(String(r.headers['content-type']), /javascript/, m);
    assert.not.match(r.text, /from\s*["']preact["']/, `${m} has no bare import left`);
  }
});

ux('sign-in: the one-time secret gives an HttpOnly, Secure, SameSite=Strict cookie; it works once, and the file then holds the next one', async ({ dms }) => {
  const file = path.join(dms.dir, 'admin', 'webux-login');
  const secret = readFileSync(file, 'utf8').trim();
  const bad = await dms.web('POST', '/ui/session', { body: { secret: 'not-the-secret' } });
  assert.is(bad.status, 401);
  assert.match((bad.body as { message: string }).message, /webux-login/);
  const ok = await dms.web('POST', '/ui/session', { body: { secret } });
  assert.is(ok.status, 201);
  const cookie = String((ok.headers['set-cookie'] as string[])[0]);
  for (const flag of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/']) assert.ok(cookie.includes(flag), `${flag} in ${cookie}`);
  const again = await dms.web('POST', '/ui/session', { body: { secret } });
  assert.is(again.status, 401, 'a login secret works once');
  assert.is.not(readFileSync(file, 'utf8').trim(), secret);
  assert.is((await dms.web('POST', '/ui/session', { body: {} })).status, 400);
  assert.is((await dms.web('POST', '/ui/session', { raw: '{' })).status, 400);
  // Signing out ends the session.
  const s = { cookie: cookie.split(';')[0], csrf: (ok.body as { csrf: string }).csrf };
  assert.is((await dms.web('GET', '/ui/session', { session: s })).status, 200);
  assert.is((await dms.web('DELETE', '/ui/session', { session: { ...s, csrf: 'wrong' } })).status, 403);
  assert.is((await dms.web('DELETE', '/ui/session', { session: s })).status, 200);
  assert.is((await dms.web('GET', '/v1/nodes', { session: s })).status, 401);
  assert.is((await dms.web('GET', '/ui/session')).status, 401);
});

ux('the admin certificate mints login secrets on the control plane; nodes and anonymous callers cannot', async ({ dms, node }) => {
  assert.is((await dms.call('POST', '/v1/webux/login-secrets', dms.anon, {})).status, 401);
  assert.is((await dms.call('POST', '/v1/webux/login-secrets', node, {})).status, 403);
  const m = await dms.call('POST', '/v1/webux/login-secrets', dms.admin, {});
  assert.is(m.status, 201);
  const r = await dms.web('POST', '/ui/session', { body: { secret: (m.body as { secret: string }).secret } });
  assert.is(r.status, 201);
  assert.is((r.body as { who: string }).who, 'admin');
});

ux('CSRF: a change without the token, with another token, or from another origin is 403; reads need the session only', async ({ dms, s }) => {
  assert.is((await dms.web('GET', '/v1/topology')).status, 401);
  assert.is((await dms.web('GET', '/v1/topology', { headers: { cookie: 'hd_webux_session=forged' } })).status, 401);
  assert.is((await dms.web('GET', '/v1/topology', { headers: { cookie: s.cookie } })).status, 200);
  const put = (headers: Record<string, string>): Promise<{ status: number; body: unknown }> => dms.web('PUT', '/v1/clusters/c1', { body: {}, headers });
  assert.is((await put({ cookie: s.cookie })).status, 403);
  assert.is((await put({ cookie: s.cookie, 'x-csrf-token': 'x' })).status, 403);
  const cross = await put({ cookie: s.cookie, 'x-csrf-token': s.csrf, origin: 'https://evil.example' });
  assert.is(cross.status, 403);
  assert.match((cross.body as { message: string }).message, /cross-origin/);
  assert.is((await put({ cookie: s.cookie, 'x-csrf-token': s.csrf })).status, 200);
  // A client certificate alone opens nothing on the WebUX port.
  assert.is((await dms.web('GET', '/v1/nodes')).status, 401);
});

/** The routes this change adds: method, path, body; each needs an administrator. */
const ADMIN_ROUTES: [string, string, unknown][] = [
  ['GET', '/v1/nodes', undefined],
  ['GET', '/v1/certificates', undefined],
  ['GET', '/v1/bootstrap-tokens', undefined],
  ['DELETE', '/v1/bootstrap-tokens/0123456789abcdef', undefined],
  ['GET', '/v1/admin/datasets', undefined],
  ['POST', '/v1/datasets/validate', { schema: {} }],
  ['POST', '/v1/nodes/sn1/quarantine', { reason: 'x' }],
  ['POST', '/v1/nodes/sn1/release', {}],
  ['POST', '/v1/policy/validate', { rego: 'package hd.authz' }],
  ['POST', '/v1/policy/dry-run', { rego: 'package hd.authz', dataset: 'flows' }],
  ['GET', '/v1/policy/history', undefined],
  ['POST', '/v1/policy/rollback', { version: 1 }],
  ['GET', '/v1/license', undefined],
  ['PUT', '/v1/license', {}],
  ['DELETE', '/v1/license', undefined],
  ['GET', '/v1/metrics/history', undefined],
];

ux('every new admin route: 401 without a certificate, 403 with a node certificate (control plane); 401 without a session (WebUX)', async ({ dms, node }) => {
  for (const [m, r, b] of ADMIN_ROUTES) {
    const method = m as 'GET' | 'POST' | 'PUT' | 'DELETE';
    const anon = await dms.call(method, r, dms.anon, b);
    assert.is(anon.status, 401, `${m} ${r} anonymous: ${JSON.stringify(anon.body)}`);
    const asNode = await dms.call(method, r, node, b);
    assert.is(asNode.status, 403, `${m} ${r} as a node: ${JSON.stringify(asNode.body)}`);
    assert.is((await dms.web(m, r, { body: b })).status, 401, `${m} ${r} on the WebUX without a session`);
  }
});

ux('topology page: nodes with role, state, health, last report and certificate expiry', async ({ dms, node, s }) => {
  assert.is((await dms.call('POST', '/v1/nodes/sn1/health', node, { status: 'ok', detail: { disk: 'fine' } })).status, 200);
  const r = await dms.web('GET', '/v1/nodes', { session: s });
  assert.is(r.status, 200);
  const sn1 = (r.body as { nodes: Record<string, unknown>[] }).nodes.find((n) => n.name === 'sn1') as Record<string, unknown>;
  assert.is(sn1.role, 'storageNode');
  assert.is(sn1.state, 'ready');
  assert.is(sn1.cluster, 'c1');
  assert.ok(Date.parse(sn1.cert_not_after as string) > Date.now());
  assert.ok(sn1.last_seen);
  assert.is((sn1.health as { status: string }).status, 'ok');
  const certs = await dms.web('GET', '/v1/certificates', { session: s });
  const list = (certs.body as { certificates: { node_name: string; role: string }[] }).certificates;
  assert.ok(list.some((c) => c.node_name === 'sn1' && c.role === 'storageNode'));
  assert.ok(list.some((c) => c.role === 'admin'));
});

ux('bootstrap tokens: created on the page, listed with expiry and status, revoked; bad and unknown ids are 400 / 404', async ({ dms, s }) => {
  const made = await dms.web('POST', '/v1/bootstrap-tokens', { session: s, body: { node_name: 'cli1', ttl_s: 600 } });
  assert.is(made.status, 201);
  const list = (await dms.web('GET', '/v1/bootstrap-tokens', { session: s })).body as { tokens: { id: string; node_name: string; status: string; expires_at: string }[] };
  const t = list.tokens.find((x) => x.node_name === 'cli1');
  assert.ok(t && t.status === 'valid' && Date.parse(t.expires_at) > Date.now());
  assert.not.ok(JSON.stringify(list).includes((made.body as { token: string }).token), 'the token itself is never listed');
  assert.is((await dms.web('DELETE', `/v1/bootstrap-tokens/${t.id}`, { session: s })).status, 200);
  assert.is((await dms.web('DELETE', `/v1/bootstrap-tokens/${t.id}`, { session: s })).status, 404);
  assert.is((await dms.web('DELETE', '/v1/bootstrap-tokens/nothex', { session: s })).status, 400);
});

ux('datasets: validation names each problem by path; a valid schema is added and listed with its clusters', async ({ dms, s }) => {
  const bad = await dms.web('POST', '/v1/datasets/validate', { session: s, body: { schema: { ...FLOWS44, fields: [{ name: 'ts', type: 'timestamp', offset: 0, size: 3 }] } } });
  assert.is(bad.status, 200);
  const issues = (bad.body as { valid: boolean; issues: { path: string; message: string }[] }).issues;
  assert.is((bad.body as { valid: boolean }).valid, false);
  assert.ok(issues.some((i) => i.path.startsWith('fields[0]')), JSON.stringify(issues));
  assert.is((await dms.web('POST', '/v1/datasets/validate', { session: s, body: { schema: 3 } })).status, 400);
  assert.is((await dms.web('POST', '/v1/datasets/validate', { session: s, body: { schema: {}, x: 1 } })).status, 400);
  const ok = await dms.web('POST', '/v1/datasets/validate', { session: s, body: { schema: FLOWS44 } });
  assert.is((ok.body as { valid: boolean; record_size: number }).record_size, 44);
  assert.is((await dms.web('PUT', '/v1/datasets/flows', { session: s, body: { schema: FLOWS44, clusters: ['c1'] } })).status, 200);
  const list = (await dms.web('GET', '/v1/admin/datasets', { session: s })).body as { datasets: { id: string; clusters: string[] }[] };
  assert.equal(list.datasets.find((d) => d.id === 'flows')?.clusters, ['c1']);
});

ux('Governance: validation gives line and column, dry run shows the bytes hidden, publish, history and roll-back', async ({ dms, s }) => {
  const broken = await dms.web('POST', '/v1/policy/validate', { session: s, body: { rego: 'package hd.authz\n\nallow if {\n  input.role ==\n}\n' } });
  assert.is(broken.status, 200);
  const issue = (broken.body as { valid: boolean; issues: { line: number; column: number; message: string }[] }).issues[0];
  assert.is(issue.line, 5);
  assert.is(issue.column, 1);
  assert.match(issue.message, /expecting expression/);
  assert.equal((await dms.web('POST', '/v1/policy/validate', { session: s, body: { rego: 'package hd.authz\nallow := true\n' } })).body, { valid: true });
  assert.is((await dms.web('POST', '/v1/policy/validate', { session: s, body: {} })).status, 400);

  const rego = 'package hd.authz\n\nhidden_fields contains "secret" if input.role == "guest"\nhidden_fields contains "src_ip" if input.role == "guest"\n';
  const dry = await dms.web('POST', '/v1/policy/dry-run', { session: s, body: { rego, dataset: 'flows', identity: { role: 'guest', email: 'g@x' }, query: { sub_queries: [{ filters: [{ field: 'src_ip', op: 'eq', value: '10.0.0.1' }] }] } } });
  assert.is(dry.status, 200, JSON.stringify(dry.body));
  const d = dry.body as { allow: boolean; hidden_fields: string[]; field_mask: string; unmatchable_branches: number };
  assert.is(d.allow, true);
  assert.equal(d.hidden_fields, ['src_ip', 'secret']);
  assert.is(d.field_mask, `${'ff'.repeat(8)}${'00'.repeat(4)}${'ff'.repeat(16)}${'00'.repeat(16)}`);
  assert.is(d.unmatchable_branches, 1);
  const admin = (await dms.web('POST', '/v1/policy/dry-run', { session: s, body: { rego, dataset: 'flows', identity: { role: 'admin' } } })).body as { field_mask: string };
  assert.is(admin.field_mask, 'ff'.repeat(44));
  assert.is((await dms.web('POST', '/v1/policy/dry-run', { session: s, body: { rego, dataset: 'nope' } })).status, 404);
  assert.is((await dms.web('POST', '/v1/policy/dry-run', { session: s, body: { rego, dataset: 'flows', identity: 'x' } })).status, 400);
  assert.is((await dms.web('POST', '/v1/policy/dry-run', { session: s, body: { rego, dataset: 'flows', query: { sub_queries: 1 } } })).status, 400);

  const v1 = await dms.web('PUT', '/v1/policy', { session: s, body: { rego: 'package hd.authz\nallow := true\n' } });
  assert.is(v1.status, 200);
  const v2 = await dms.web('PUT', '/v1/policy', { session: s, body: { rego } });
  assert.is((v2.body as { version: number }).version, 2);
  assert.is((await dms.web('PUT', '/v1/policy', { session: s, body: { rego: 'package' } })).status, 400);
  const hist = (await dms.web('GET', '/v1/policy/history', { session: s })).body as { current: number; versions: { version: number }[] };
  assert.is(hist.current, 2);
  assert.equal(hist.versions.map((v) => v.version), [2, 1]);
  const rb = await dms.web('POST', '/v1/policy/rollback', { session: s, body: { version: 1 } });
  assert.is(rb.status, 200);
  assert.is((rb.body as { version: number }).version, 3);
  assert.is(dms.server.state.policy?.rego, 'package hd.authz\nallow := true\n');
  assert.is((await dms.web('POST', '/v1/policy/rollback', { session: s, body: { version: 99 } })).status, 404);
  assert.is((await dms.web('POST', '/v1/policy/rollback', { session: s, body: {} })).status, 400);
});

ux('quarantine and release a Storage Node; the SCC (any node certificate) reads who is quarantined; errors are 400 / 404 / 409', async ({ dms, node, s }) => {
  const q = await dms.web('POST', '/v1/nodes/sn1/quarantine', { session: s, body: { reason: 'bad batch notices', notices: ['bbn 0001 segment hash mismatch'] } });
  assert.is(q.status, 200, JSON.stringify(q.body));
  assert.is(dms.server.state.nodes.sn1.state, 'quarantined');
  const seen = await dms.call('GET', '/v1/quarantine', node);
  assert.equal((seen.body as { quarantined: { name: string; reason: string }[] }).quarantined.map((x) => [x.name, x.reason]), [['sn1', 'bad batch notices']]);
  assert.is((await dms.call('GET', '/v1/quarantine', dms.anon)).status, 401);
  const listed = ((await dms.web('GET', '/v1/nodes', { session: s })).body as { nodes: { name: string; quarantine?: { notices: string[] } }[] }).nodes.find((n) => n.name === 'sn1');
  assert.equal(listed?.quarantine?.notices, ['bbn 0001 segment hash mismatch']);
  // A health report does not lift it.
  await dms.call('POST', '/v1/nodes/sn1/health', node, { status: 'ok' });
  assert.is(dms.server.state.nodes.sn1.state, 'quarantined');
  assert.is((await dms.web('POST', '/v1/nodes/sn1/quarantine', { session: s, body: { reason: 'again' } })).status, 409);
  assert.is((await dms.web('POST', '/v1/nodes/sn1/release', { session: s, body: {} })).status, 200);
  assert.is(dms.server.state.nodes.sn1.state, 'registered');
  assert.equal((await dms.call('GET', '/v1/quarantine', node)).body, { quarantined: [] });
  assert.is((await dms.web('POST', '/v1/nodes/sn1/release', { session: s, body: {} })).status, 409);
  assert.is((await dms.web('POST', '/v1/nodes/ghost/quarantine', { session: s, body: { reason: 'x' } })).status, 404);
  assert.is((await dms.web('POST', '/v1/nodes/ghost/release', { session: s, body: {} })).status, 404);
  assert.is((await dms.web('POST', '/v1/nodes/sn1/quarantine', { session: s, body: {} })).status, 400);
  assert.is((await dms.web('POST', '/v1/nodes/sn1/quarantine', { session: s, body: { reason: 'x', notices: [1] } })).status, 400);
  assert.is((await dms.web('POST', '/v1/nodes/bad%20name/quarantine', { session: s, body: { reason: 'x' } })).status, 400);
  await dms.web('POST', '/v1/bootstrap-tokens', { session: s, body: { node_name: 'px1', role: 'proxy' } });
  assert.is((await dms.web('POST', '/v1/nodes/px1/quarantine', { session: s, body: { reason: 'x' } })).status, 400, 'only Storage Nodes are quarantined');
  assert.is(err((await dms.web('POST', '/v1/nodes/px1/quarantine', { session: s, body: { reason: 'x' } })).body), 'invalid_request');
});

ux.run();
