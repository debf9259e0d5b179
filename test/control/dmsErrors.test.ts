import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ClientTls } from '../../net/jsonClient';
import { registerWithDms } from '../../net/registerWithDms';
import { rawRequest, startTestDms, type TestDms } from './support';

interface Ctx {
  dms: TestDms;
  node: ClientTls;
}

const errs = suite<Ctx>('DMS-Core error answers');
errs.before(async (ctx) => {
  ctx.dms = await startTestDms();
  const { dms } = ctx;
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, {});
  const t = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'n1', role: 'storageNode' })).body as { token: string };
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'n1', role: 'storageNode', cluster: 'c1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t.token }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  ctx.node = { ca: dms.server.caCertPem, cert: r.signed_cert_pem, key: r.client_key_pem };
});
errs.after(async (ctx) => ctx.dms.close());

/** Every route taking a JSON body, with a caller allowed to reach its body parser. */
const JSON_ROUTES: [string, string, 'admin' | 'node' | 'anon'][] = [
  ['POST', '/v1/register', 'anon'],
  ['POST', '/v1/certificates/renew', 'node'],
  ['POST', '/v1/bootstrap-tokens', 'admin'],
  ['PUT', '/v1/clusters/c2', 'admin'],
  ['PUT', '/v1/nodes/n2', 'admin'],
  ['PUT', '/v1/datasets/d1', 'admin'],
  ['POST', '/v1/certificates/revoke', 'admin'],
  ['POST', '/v1/nodes/n1/health', 'node'],
  ['PUT', '/v1/policy', 'admin'],
];

errs('malformed JSON on every JSON route is 400 invalid_json; a JSON array is 400 invalid_request', async (ctx) => {
  const { dms } = ctx;
  const tlsOf = (w: 'admin' | 'node' | 'anon'): ClientTls => (w === 'admin' ? dms.admin : w === 'node' ? ctx.node : dms.anon);
  for (const [method, route, who] of JSON_ROUTES) {
    for (const bad of ['{', '{"a":', 'nul', '{"x": 1,}', '\u0000\u0001']) {
      const r = await rawRequest(method, `${dms.url}${route}`, tlsOf(who), bad);
      assert.is(r.status, 400, `${method} ${route} with ${JSON.stringify(bad)}: ${JSON.stringify(r.body)}`);
      assert.is((r.body as { error: string }).error, 'invalid_json', `${method} ${route}`);
    }
    const arr = await rawRequest(method, `${dms.url}${route}`, tlsOf(who), '[1,2]');
    assert.is(arr.status, 400, `${method} ${route} with an array`);
    assert.is((arr.body as { error: string }).error, 'invalid_request', `${method} ${route}: ${JSON.stringify(arr.body)}`);
    const extra = await rawRequest(method, `${dms.url}${route}`, tlsOf(who), '{"surprise": 1}');
    assert.is(extra.status, 400, `${method} ${route} with an unknown key`);
  }
});
errs('a body that is not JSON is 415; a body over 1 MiB is 413; an unknown route is 404', async ({ dms }) => {
  const r = await rawRequest('POST', `${dms.url}/v1/register`, dms.anon, 'node_name=x', 'application/x-www-form-urlencoded');
  assert.is(r.status, 415);
  assert.is((r.body as { error: string }).error, 'unsupported_media_type');
  const big = await rawRequest('POST', `${dms.url}/v1/register`, dms.anon, JSON.stringify({ node_name: 'x'.repeat(1100 * 1024) }));
  assert.is(big.status, 413);
  assert.is((big.body as { error: string }).error, 'payload_too_large');
  const nf = await dms.call('GET', '/v1/nothing', dms.anon);
  assert.equal(nf.body, { error: 'not_found', message: 'no route GET /v1/nothing' });
});
errs('administrator routes: 401 without a certificate, 403 with a node certificate', async ({ dms, node }) => {
  const routes: [ 'GET' | 'POST' | 'PUT' | 'DELETE', string, unknown][] = [
    ['POST', '/v1/bootstrap-tokens', { node_name: 'x' }],
    ['PUT', '/v1/clusters/c9', {}],
    ['PUT', '/v1/nodes/x', { role: 'scc' }],
    ['DELETE', '/v1/nodes/n1', undefined],
    ['PUT', '/v1/datasets/x', { schema: {} }],
    ['DELETE', '/v1/datasets/x', undefined],
    ['POST', '/v1/certificates/revoke', { node_name: 'n1' }],
    ['PUT', '/v1/policy', { rego: 'package hd.authz' }],
    ['GET', '/v1/policy', undefined],
  ];
  for (const [m, r, b] of routes) {
    const anon = await dms.call(m, r, dms.anon, b);
    assert.is(anon.status, 401, `${m} ${r}`);
    assert.is((anon.body as { error: string }).error, 'unauthenticated');
    const asNode = await dms.call(m, r, node, b);
    assert.is(asNode.status, 403, `${m} ${r}`);
    assert.match((asNode.body as { message: string }).message, /for admin( or proxy)? certificates; 'n1' holds a storageNode certificate/);
  }
  for (const r of ['/v1/topology', '/v1/datasets', '/v1/datasets/x']) assert.is((await dms.call('GET', r, dms.anon)).status, 401, r);
});
errs('bad values name the key: unknown cluster, bad role, bad state, bad token ttl, bad devices, bad addresses', async ({ dms }) => {
  const cases: [ 'POST' | 'PUT', string, unknown, RegExp][] = [
    ['PUT', '/v1/nodes/x', { role: 'scc', cluster: 'nope' }, /'cluster': no cluster 'nope'/],
    ['PUT', '/v1/nodes/x', { role: 'king' }, /'role' must be one of scc, storageNode/],
    ['PUT', '/v1/nodes/x', { role: 'scc', state: 'sleepy' }, /'state' must be one of/],
    ['PUT', '/v1/nodes/x', { role: 'scc', devices: [{ name: 'd' }] }, /'address' is required/],
    ['PUT', '/v1/nodes/x', { role: 'scc', addresses: { control: { host: 'h', port: 70000 } } }, /'control.port' must be an integer 1..65535/],
    ['PUT', '/v1/nodes/bad name', { role: 'scc' }, /the name in the path must be/],
    ['POST', '/v1/bootstrap-tokens', { node_name: 'x', ttl_s: 0 }, /'ttl_s' must be an integer 1..604800/],
    ['POST', '/v1/bootstrap-tokens', {}, /'node_name' is required/],
    ['PUT', '/v1/clusters/c1', { primary: 'yes' }, /'primary' must be true or false/],
    ['POST', '/v1/certificates/revoke', { serial: 'ab', node_name: 'n1' }, /exactly one of 'serial' and 'node_name'/],
    ['POST', '/v1/register', { node_name: 'n', role: 'client' }, /'csr_pem' is required/],
    ['POST', '/v1/register', { node_name: '../etc', role: 'client', csr_pem: 'x' }, /'node_name' must be 1..64 letters/],
    ['PUT', '/v1/policy', { rego: 'package hd.authz\nallow := \n' }, /the policy does not compile: [\s\S]*expecting expression/],
    ['PUT', '/v1/policy', { rego: 'package hd.authz', data: 'x' }, /'data' must be a JSON object/],
  ];
  for (const [m, r, b, want] of cases) {
    const a = await dms.call(m, r, r === '/v1/register' ? dms.anon : dms.admin, b);
    assert.is(a.status, 400, `${m} ${r} ${JSON.stringify(b)}: ${JSON.stringify(a.body)}`);
    assert.match((a.body as { message: string }).message, want);
  }
});
errs('schemas: an invalid schema is 400 invalid_schema listing its problems; an id that is not the path is refused; unknown datasets are 404 unknown_dataset', async ({ dms, node }) => {
  let r = await dms.call('PUT', '/v1/datasets/bad', dms.admin, { schema: { id: 'bad', record_size: 0, fields: [] } });
  assert.is(r.status, 400);
  assert.is((r.body as { error: string }).error, 'invalid_schema');
  assert.match((r.body as { message: string }).message, /record_size/);
  const good = { id: 'flows', record_size: 8, time_field: 'ts', fields: [{ name: 'ts', type: 'timestamp', offset: 0, size: 8 }] };
  r = await dms.call('PUT', '/v1/datasets/other', dms.admin, { schema: good });
  assert.match((r.body as { message: string }).message, /the schema's id is 'flows' but the path names 'other'/);
  r = await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: good, clusters: ['zz'] });
  assert.match((r.body as { message: string }).message, /unknown cluster zz/);
  assert.is((await dms.call('GET', '/v1/datasets/nope', node)).status, 404);
  assert.is(((await dms.call('DELETE', '/v1/datasets/nope', dms.admin)).body as { error: string }).error, 'unknown_dataset');
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: good })).status, 200);
  assert.is(((await dms.call('GET', '/v1/datasets/flows', node)).body as { record_size: number }).record_size, 8);
});
errs('nodes: a role change is 409, an unknown node is 404 unknown_node, a revocation of nothing is 404', async ({ dms }) => {
  assert.is((await dms.call('PUT', '/v1/nodes/n1', dms.admin, { role: 'scc' })).status, 409);
  assert.is(((await dms.call('DELETE', '/v1/nodes/ghost', dms.admin)).body as { error: string }).error, 'unknown_node');
  const r = await dms.call('POST', '/v1/certificates/revoke', dms.admin, { node_name: 'ghost' });
  assert.is(r.status, 404);
  assert.is((await dms.call('POST', '/v1/certificates/revoke', dms.admin, { serial: 'abcdef' })).status, 404);
});
errs('health reports: own node only, known states only; they move the node state and a quarantine holds', async ({ dms, node }) => {
  assert.is((await dms.call('POST', '/v1/nodes/other/health', node, { status: 'ok' })).status, 403);
  assert.is((await dms.call('POST', '/v1/nodes/n1/health', node, { status: 'great' })).status, 400);
  const ok = await dms.call('POST', '/v1/nodes/n1/health', node, { status: 'ok', detail: { devices: 2 } });
  assert.equal(ok.body, { name: 'n1', state: 'ready' });
  await dms.call('PUT', '/v1/nodes/n1', dms.admin, { role: 'storageNode', state: 'quarantined' });
  assert.equal((await dms.call('POST', '/v1/nodes/n1/health', node, { status: 'ok' })).body, { name: 'n1', state: 'quarantined' });
  const topo = (await dms.call('GET', '/v1/topology', node)).body as { clusters: { storage_nodes: { name: string; state: string }[] }[] };
  assert.is(topo.clusters[0].storage_nodes[0].state, 'quarantined');
});
errs('deleting a node revokes its certificates: the next call with one is 401', async ({ dms, node }) => {
  const del = await dms.call('DELETE', '/v1/nodes/n1', dms.admin);
  assert.is(del.status, 200);
  assert.is((del.body as { revoked: string[] }).revoked.length, 1);
  const r = await dms.call('GET', '/v1/topology', node);
  assert.is(r.status, 401);
  assert.match((r.body as { message: string }).message, /was revoked/);
  const crl = await dms.call('GET', '/v1/crl', dms.anon);
  assert.match(String(crl.body), /BEGIN X509 CRL/);
});

errs.run();
