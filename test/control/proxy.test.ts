import { createPrivateKey } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { requestJson } from '../../net/jsonClient';
import { generateRsaKey } from '../../net/pki/x509';
import { freePort } from '../support/hdProcess';
import { FLOWS44 } from './fixtures';
import { INGRESS, StandInScc, startTestProxy, type TestProxy } from './proxySupport';
import { rawRequest, startTestDms, type TestDms } from './support';

const SCHEMA = FLOWS44;

/** Version n hides field `hidden[n]` from guests; analysts are held to tenant 7. */
function policy(hidden: string, extra = ''): string {
  return `package hd.authz
import rego.v1
default allow := true
hidden_fields contains "${hidden}" if input.role == "guest"
constraints contains {"field": "tenant", "value": "7"} if input.role == "analyst"
${extra}`;
}

const TOKEN = 'ab'.repeat(16);
const q = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ query_id: 7, dataset: 'flows', start: 1_700_000_000, end: 1_700_000_600, return_address: { host: '127.0.0.1', port: 6989 }, token: TOKEN, ...extra });

interface Ctx {
  dms: TestDms;
  scc: StandInScc;
  px: TestProxy;
}

const proxy = suite<Ctx>('HD Proxy (real HTTPS, real gRPC to a stand-in SCC)');
proxy.before(async (ctx) => {
  ctx.dms = await startTestDms();
  ctx.scc = await new StandInScc().start();
  const { dms } = ctx;
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
  const dead = await freePort();
  // scc-a comes first and is down: the Proxy must hand over to scc-b.
  await dms.call('PUT', '/v1/nodes/scc-a', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: dead } } });
  await dms.call('PUT', '/v1/nodes/scc-b', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: ctx.scc.port } } });
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: SCHEMA })).status, 200);
  ctx.px = await startTestProxy(dms);
});
proxy.after(async (ctx) => {
  await ctx.px?.close();
  await ctx.scc?.stop();
  await ctx.dms?.close();
});

proxy('without a policy the Proxy answers 503 not_ready (fail closed)', async ({ px }) => {
  const r = await px.query(q());
  assert.is(r.status, 503);
  assert.is((r.body as { error: string }).error, 'not_ready');
});
proxy('POST /v1/proxy/config: the DMS installs a policy; anyone else is refused; a policy that does not compile is refused with the compiler message and the old one stays', async ({ px }) => {
  const config = `${px.url}/v1/proxy/config`;
  assert.is((await requestJson('POST', config, px.anon, { version: 1, rego: policy('src_ip') })).status, 401);
  const asProxy = px.proxy.identity.material;
  const forbidden = await requestJson('POST', config, { ca: asProxy.caPem, cert: asProxy.certPem, key: asProxy.keyPem }, { version: 1, rego: policy('src_ip') });
  assert.is(forbidden.status, 403);
  const ok = await requestJson('POST', config, px.dms, { version: 1, rego: policy('src_ip') });
  assert.equal(ok.body, { installed: 1, previous: 0 });
  const bad = await requestJson('POST', config, px.dms, { version: 2, rego: 'package hd.authz\nallow := \n' });
  assert.is(bad.status, 400);
  assert.is((bad.body as { error: string }).error, 'invalid_policy');
  assert.match((bad.body as { message: string }).message, /the policy does not compile: [\s\S]*policy\.rego:\d+:\d+[\s\S]*expecting expression/);
  const wrongPkg = await requestJson('POST', config, px.dms, { version: 2, rego: 'package other\nallow := true\n' });
  assert.match((wrongPkg.body as { message: string }).message, /package hd\.authz/);
  const stale = await requestJson('POST', config, px.dms, { version: 1, rego: policy('secret') });
  assert.is(stale.status, 409);
  assert.is(((await requestJson('GET', `${px.url}/v1/proxy/policy`, px.dms)).body as { version: number }).version, 1);
  for (const body of ['{', '[]', '{"version": 3}', '{"version": 0, "rego": "x"}', '{"version": 3, "rego": "x", "extra": 1}', '{"version": 3, "rego": 5}', '{"version": 3, "rego": "package hd.authz", "data": [1]}']) {
    const r = await rawRequest('POST', config, px.dms, body);
    assert.is(r.status, 400, body);
    assert.ok(['invalid_json', 'invalid_request'].includes((r.body as { error: string }).error), `${body}: ${JSON.stringify(r.body)}`);
  }
  assert.is(px.proxy.policyVersion, 1);
});
proxy('a query is rewritten by the policy, its window named as batches, dispatched (the first SCC being down) and answered with the result event', async ({ px, scc }) => {
  const before = scc.queries.length;
  const r = await px.query(q({ sub_queries: [{ filters: [{ field: 'src_ip', op: 'eq', value: '167772161' }] }, { filters: [{ field: 'bytes', op: 'gt', value: '10' }] }] }));
  assert.is(r.status, 200, JSON.stringify(r.body));
  const ev = r.body as Record<string, unknown> & { batch_ids: string[]; rewrite: { hidden_fields: string[]; field_mask: string; unmatchable_branches: number }; dispatch: { scc: string; batches: number } };
  // 600 s at 60 s a batch, not on boundaries: floor(start) .. ceil(end) inclusive is 12 batches.
  assert.is(ev.batch_ids.length, 12);
  assert.is(ev.query_id, 7);
  assert.equal(ev.would_exclude_batches, []);
  assert.is(ev.bloomrf_mode, 'off');
  assert.is(ev.policy_version, 1);
  assert.equal(ev.identity, { role: 'guest', email: 'g@example.com' });
  assert.equal(ev.rewrite.hidden_fields, ['src_ip']);
  assert.is(ev.rewrite.unmatchable_branches, 1);
  assert.is(ev.dispatch.scc, 'scc-b');
  assert.is(ev.dispatch.batches, 12);
  assert.is(scc.queries.length, before + 1);
  const sent = scc.queries[scc.queries.length - 1] as { sub_queries: { filters: { field: string; op: string; value: string }[] }[]; field_mask: string; batch_ids: string[]; token: string };
  assert.is(sent.field_mask, ev.rewrite.field_mask);
  assert.ok(Buffer.from(sent.field_mask, 'hex').subarray(8, 12).equals(Buffer.alloc(4)));
  assert.equal(sent.sub_queries[0].filters.map((f) => [f.op, f.value]), [['masked_eq', '00000000'], ['masked_eq', 'ffffffff']]);
  assert.equal(sent.sub_queries[1].filters, [{ field: 'bytes', op: 'gt', value: '10' }]);
  assert.equal(sent.batch_ids, ev.batch_ids);
  assert.is(sent.token, TOKEN);
  // An analyst's query carries the tenant constraint in every branch.
  const a = await px.query(q({ batch_ids: [ev.batch_ids[0]], start: undefined, end: undefined }), { ...INGRESS, 'x-forwarded-role': 'analyst', 'x-forwarded-email': 'a@example.com' });
  assert.is(a.status, 200, JSON.stringify(a.body));
  const sentA = scc.queries[scc.queries.length - 1] as { sub_queries: { filters: unknown[] }[]; field_mask?: string };
  assert.equal(sentA.sub_queries, [{ filters: [{ field: 'tenant', op: 'masked_eq', value: '07000000', mask: 'ffffffff' }] }]);
  assert.is(sentA.field_mask, undefined);
});
proxy('errors: no identity 401, unknown dataset 404, malformed or invalid queries 400 naming the key', async ({ px }) => {
  const none = await px.query(q(), {});
  assert.is(none.status, 401);
  assert.match((none.body as { message: string }).message, /X-Forwarded-Role and X-Forwarded-Email/);
  const unknown = await px.query(q({ dataset: 'nope' }));
  assert.equal(unknown.body, { error: 'unknown_dataset', message: "dataset 'nope' is not known to the Proxy (the DMS distributes none by that name)" });
  assert.is(unknown.status, 404);
  assert.is((await px.query(q({ dataset: 'Network flows' }))).status, 200);
  const cases: [Record<string, unknown>, RegExp][] = [
    [q({ token: 'zz' }), /token: expected 32 hex digits/],
    [q({ batch_ids: ['ab'] }), /either 'batch_ids' or a window/],
    [q({ end: 1_600_000_000 }), /'end' .* is before 'start'/],
    [q({ start: 'soon' }), /'start' must be Unix seconds/],
    [q({ start: undefined, end: undefined }), /names no batch/],
    [q({ sub_queries: Array.from({ length: 17 }, () => ({ filters: [{ field: 'bytes', op: 'eq', value: '1' }] })) }), /too many branches: 17 sub-queries, the limit is 16/],
    [q({ sub_queries: [{ filters: [] }] }), /an empty sub-query is refused/],
    [q({ surprise: 1 }), /surprise: unknown key/],
    [q({ query_id: -1 }), /query_id/],
    [q({ start: 0, end: 60 * 200_000 }), /the limit is 100000/],
  ];
  for (const [body, want] of cases) {
    const r = await px.query(body);
    assert.is(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(r.body)}`);
    assert.is((r.body as { error: string }).error, 'invalid_query');
    assert.match((r.body as { message: string }).message, want);
  }
  for (const bad of ['{', '{"query_id":', '']) {
    const r = await rawRequest('POST', `${px.url}/v1/query`, px.anon, bad);
    assert.is(r.status, 400);
    assert.is((r.body as { error: string }).error, 'invalid_json');
  }
  assert.is(((await rawRequest('POST', `${px.url}/v1/query`, px.anon, '[1]')).body as { error: string }).error, 'unauthenticated');
});
proxy("the SCC's answers map to HTTP: INVALID_ARGUMENT 400, DEADLINE_EXCEEDED 504, RESOURCE_EXHAUSTED 503, UNAVAILABLE everywhere 502", async ({ px, scc }) => {
  const cases: [grpc.status, number, string][] = [
    [grpc.status.INVALID_ARGUMENT, 400, 'invalid_query'],
    [grpc.status.FAILED_PRECONDITION, 400, 'invalid_query'],
    [grpc.status.DEADLINE_EXCEEDED, 504, 'query_timeout'],
    [grpc.status.RESOURCE_EXHAUSTED, 503, 'not_ready'],
    [grpc.status.UNAVAILABLE, 502, 'upstream_unavailable'],
  ];
  try {
    for (const [code, http, error] of cases) {
      scc.answer = { code, details: `told to answer ${grpc.status[code]}` };
      const r = await px.query(q());
      assert.is(r.status, http, grpc.status[code]);
      assert.is((r.body as { error: string }).error, error);
      assert.match((r.body as { message: string }).message, /scc-b|no SCC took the query/);
    }
  } finally {
    scc.answer = 'ok';
  }
});
proxy("GET /v1/topology gives the primary cluster's SCC targets (discover_scc_targets)", async ({ px }) => {
  const r = await requestJson('GET', `${px.url}/v1/topology`, px.anon);
  const t = r.body as { primary_cluster: string; scc_targets: { name: string }[]; datasets: string[] };
  assert.is(t.primary_cluster, 'c1');
  assert.equal(t.scc_targets.map((s) => s.name), ['scc-a', 'scc-b']);
  assert.equal(t.datasets, ['flows']);
});
proxy('an atomic policy swap during a stream of queries: each query sees one version whole, never a mix', async ({ px }) => {
  const config = `${px.url}/v1/proxy/config`;
  const hiddenOf: Record<number, string> = {};
  const fields = ['secret', 'dst_ip', 'bytes', 'src_ip', 'tenant'];
  const start = px.proxy.policyVersion;
  const inflight: Promise<{ status: number; body: unknown }>[] = [];
  for (let i = 0; i < 5; i++) {
    const v = start + 1 + i;
    hiddenOf[v] = fields[i];
    for (let k = 0; k < 8; k++) inflight.push(px.query(q({ query_id: v * 100 + k })));
    // A policy that also names an unknown field and a data-driven rule: nothing partial may mix in.
    const r = await requestJson('POST', config, px.dms, { version: v, rego: policy(fields[i], `hidden_fields contains f if { input.role == "guest"; some f in data.extra }`), data: { extra: [`x${v}`] } });
    assert.is(r.status, 200);
  }
  const results = await Promise.all(inflight);
  hiddenOf[start] = 'src_ip';
  const seen = new Set<number>();
  for (const r of results) {
    assert.is(r.status, 200, JSON.stringify(r.body));
    const ev = r.body as { policy_version: number; rewrite: { hidden_fields: string[] } };
    seen.add(ev.policy_version);
    assert.equal(ev.rewrite.hidden_fields, [hiddenOf[ev.policy_version]], `version ${ev.policy_version}`);
  }
  assert.ok(seen.size >= 2, `queries saw versions ${[...seen].join(', ')}`);
  assert.is(px.proxy.policyVersion, start + 5);
});
proxy('POST /v1/query/cancel relays CancelQuery to the SCC that took the query; bad bodies are 400, an unknown query 404, no identity 401', async ({ px, scc }) => {
  const cancel = (body: unknown, headers: Record<string, string> = { ...INGRESS, 'x-forwarded-role': 'guest', 'x-forwarded-email': 'g@example.com' }) => requestJson('POST', `${px.url}/v1/query/cancel`, px.anon, body, { headers });
  const placed = await px.query(q({ query_id: 4242, token: 'cd'.repeat(16) }));
  assert.is(placed.status, 200, JSON.stringify(placed.body));
  const sccName = (placed.body as { dispatch: { scc: string } }).dispatch.scc;
  assert.is(sccName, 'scc-b');
  const ok = await cancel({ query_id: 4242, token: 'cd'.repeat(16), scc: sccName });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body, { cancelled: true, scc: 'scc-b', nodes: 1 });
  assert.equal(scc.cancels.at(-1), { queryId: 4242, token: 'cd'.repeat(16) });
  // Without `scc`, every SCC of the primary cluster is asked: scc-a is down, so a query no SCC knows
  // cannot be called absent (502), while one scc-b has is still cancelled there.
  assert.equal((await cancel({ query_id: 4242, token: 'CD'.repeat(16) })).body, { cancelled: true, scc: 'scc-b', nodes: 1 });
  const unreachable = await cancel({ query_id: 99, token: 'ee'.repeat(16) });
  assert.is(unreachable.status, 502);
  assert.match((unreachable.body as { message: string }).message, /could not reach scc-a .* to cancel query 99/);
  const unknown = await cancel({ query_id: 99, token: 'ee'.repeat(16), scc: 'scc-b' });
  assert.is(unknown.status, 404);
  assert.match((unknown.body as { message: string }).message, /no query 99 with that token runs on scc-b/);
  const wrongToken = await cancel({ query_id: 4242, token: 'ee'.repeat(16), scc: 'scc-b' });
  assert.is(wrongToken.status, 404, 'the token is the proof: a wrong one cancels nothing');
  const noScc = await cancel({ query_id: 4242, token: 'cd'.repeat(16), scc: 'scc-z' });
  assert.is(noScc.status, 404);
  assert.match((noScc.body as { message: string }).message, /no SCC named 'scc-z' in the primary cluster \(known: scc-a, scc-b\)/);
  assert.is((await cancel({ query_id: 4242, token: 'cd'.repeat(16) }, {})).status, 401);
  for (const body of [[], { query_id: 1 }, { token: 'cd'.repeat(16) }, { query_id: -1, token: 'cd'.repeat(16) }, { query_id: 2 ** 32, token: 'cd'.repeat(16) }, { query_id: 1.5, token: 'cd'.repeat(16) }, { query_id: 1, token: 'xyz' }, { query_id: 1, token: 'cd'.repeat(16), extra: true }, { query_id: 1, token: 'cd'.repeat(16), scc: 5 }]) {
    const r = await cancel(body);
    assert.is(r.status, 400, JSON.stringify(body));
    assert.is((r.body as { error: string }).error, 'invalid_request', JSON.stringify(r.body));
  }
  const notJson = await rawRequest('POST', `${px.url}/v1/query/cancel`, px.anon, '{');
  assert.is(notJson.status, 400);
});
proxy('a policy that cannot decide fails closed: 500 policy_error, nothing dispatched', async ({ px, scc }) => {
  const v = px.proxy.policyVersion + 1;
  const slow = 'hidden_fields contains "bytes" if { input.role == "slow"; count([1 | some x in numbers.range(1, 3000); some y in numbers.range(1, 3000)]) > 0 }';
  assert.is((await requestJson('POST', `${px.url}/v1/proxy/config`, px.dms, { version: v, rego: policy('src_ip', slow) })).status, 200);
  const before = scc.queries.length;
  const r = await px.query(q(), { ...INGRESS, 'x-forwarded-role': 'slow', 'x-forwarded-email': 's@x' });
  assert.is(r.status, 500);
  assert.is((r.body as { error: string }).error, 'policy_error');
  assert.is(scc.queries.length, before);
});
proxy('with JWT verification on, identities come from verified bearer tokens; forwarded headers count only from an ingress', async ({ dms }) => {
  const issuer = await generateRsaKey(2048);
  const jwtPx = await startTestProxy(dms, 'proxy-jwt', { jwt: { issuer: 'https://idp.example', publicKeyPem: issuer.publicKeyPem, audience: 'hd', roleClaim: 'role', emailClaim: 'email' } });
  try {
    await requestJson('POST', `${jwtPx.url}/v1/proxy/config`, jwtPx.dms, { version: 1, rego: policy('secret') });
    const sign = (claims: Record<string, unknown>, exp = '5m', iss = 'https://idp.example'): Promise<string> =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).setIssuer(iss).setAudience('hd').setIssuedAt().setExpirationTime(exp).sign(createPrivateKey(issuer.privateKeyPem));
    const tok = await sign({ role: 'guest', email: 'jwt@example.com' });
    const ok = await jwtPx.query(q(), { authorization: `Bearer ${tok}`, 'x-forwarded-role': 'admin', 'x-forwarded-email': 'evil@x' });
    assert.is(ok.status, 200, JSON.stringify(ok.body));
    assert.equal((ok.body as { identity: unknown }).identity, { role: 'guest', email: 'jwt@example.com' });
    assert.equal((ok.body as { rewrite: { hidden_fields: string[] } }).rewrite.hidden_fields, ['secret']);
    const headersOnly = await jwtPx.query(q(), { 'x-forwarded-role': 'admin', 'x-forwarded-email': 'evil@x' });
    assert.is(headersOnly.status, 401);
    // The ingress may still forward identities (it proves itself with the shared secret).
    const fromIngress = await jwtPx.query(q(), { ...INGRESS, 'x-forwarded-role': 'guest', 'x-forwarded-email': 'i@x' });
    assert.equal((fromIngress.body as { identity: unknown }).identity, { role: 'guest', email: 'i@x' });
    const expired = await jwtPx.query(q(), { authorization: `Bearer ${await sign({ role: 'guest' }, '-1m')}` });
    assert.match((expired.body as { message: string }).message, /expired/);
    const other = await jwtPx.query(q(), { authorization: `Bearer ${await sign({ role: 'guest' }, '5m', 'https://evil')}` });
    assert.is(other.status, 401);
    const noRole = await jwtPx.query(q(), { authorization: `Bearer ${await sign({ email: 'x@y' })}` });
    assert.match((noRole.body as { message: string }).message, /no 'role' claim/);
  } finally {
    await jwtPx.close();
  }
});

proxy.run();
