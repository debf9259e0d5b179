import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { requestJson } from '../../net/jsonClient';
import { freePort, startHd, type HdProcess } from '../support/hdProcess';
import { INGRESS, spawnProxyProcess, StandInScc } from './proxySupport';
import { startTestDms, tempDir } from './support';

const SCHEMA = { id: 'flows', record_size: 16, time_field: 'ts', time_index_interval: 60, fields: [{ name: 'ts', type: 'timestamp', offset: 0, size: 8 }, { name: 'secret', type: 'uint64', offset: 8, size: 8 }] };
const rego = (hidden: string): string => `package hd.authz\nimport rego.v1\nhidden_fields contains "${hidden}" if input.role == "guest"\n`;
const QUERY = { query_id: 1, dataset: 'flows', start: 1_700_000_000, end: 1_700_000_100, return_address: { host: '127.0.0.1', port: 6989 }, token: 'cd'.repeat(16) };

function getJson(port: number, route: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route }, (res) => {
      let t = '';
      res.on('data', (d: Buffer) => (t += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(t) as Record<string, unknown> }));
    }).on('error', reject);
  });
}

const push = suite('policy updates reach running Proxies (hd run pipelines/proxy.yaml, real process)');
push('PUT /v1/policy is compiled, stored, pushed to the running Proxy and used by its next query; a Proxy that was down gets it when it comes back', async () => {
  const dms = await startTestDms({ policyRetryMs: 200, policyPushTimeoutMs: 2000 });
  const scc = await new StandInScc().start();
  const t = tempDir();
  let proxy: HdProcess | undefined;
  const caFile = path.join(t.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  const startProxy = async (): Promise<{ hd: HdProcess; url: string; obs: number }> => {
    const { proc, url, obs } = await spawnProxyProcess(dms, caFile, 'proxy-p', 200);
    return { hd: proc, url, obs };
  };
  const query = (url: string) => requestJson('POST', `${url}/v1/query`, dms.anon, QUERY, { headers: { ...INGRESS, 'x-forwarded-role': 'guest', 'x-forwarded-email': 'g@x' } });
  try {
    await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
    await dms.call('PUT', '/v1/nodes/scc-1', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: scc.port } } });
    await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: SCHEMA });
    let p = await startProxy();
    proxy = p.hd;
    assert.is((await query(p.url)).status, 503);
    assert.equal((await getJson(p.obs, '/health')).body.policy, { status: 'degraded', version: 0 });

    const v1 = await dms.call('PUT', '/v1/policy', dms.admin, { rego: rego('secret') });
    assert.equal(v1.body, { version: 1, proxies: [{ proxy: 'proxy-p', result: 'installed' }] });
    let r = await query(p.url);
    assert.is(r.status, 200, JSON.stringify(r.body));
    assert.is((r.body as { policy_version: number }).policy_version, 1);
    assert.equal((r.body as { rewrite: { hidden_fields: string[] } }).rewrite.hidden_fields, ['secret']);
    assert.is(dms.server.state.nodes['proxy-p'].policy_version, 1);

    // A policy that does not compile is refused by the DMS and never pushed.
    const bad = await dms.call('PUT', '/v1/policy', dms.admin, { rego: 'package hd.authz\nallow := \n' });
    assert.is(bad.status, 400);
    assert.is((bad.body as { error: string }).error, 'invalid_policy');
    const v2 = await dms.call('PUT', '/v1/policy', dms.admin, { rego: rego('ts') });
    assert.equal(v2.body, { version: 2, proxies: [{ proxy: 'proxy-p', result: 'installed' }] });
    r = await query(p.url);
    assert.is((r.body as { policy_version: number }).policy_version, 2);
    assert.equal((r.body as { rewrite: { hidden_fields: string[] } }).rewrite.hidden_fields, ['ts']);
    assert.equal((await getJson(p.obs, '/health')).body.policy, { version: 2 });

    // The Proxy goes away: the push fails and is retried; back up, it has the policy at once.
    assert.is(await p.hd.stop(), 0);
    const v3 = await dms.call('PUT', '/v1/policy', dms.admin, { rego: rego('secret') });
    const res = (v3.body as { proxies: { result: string; message?: string }[] }).proxies;
    assert.is(res[0].result, 'failed');
    assert.match(res[0].message ?? '', /ECONNREFUSED/);
    assert.is(dms.server.state.nodes['proxy-p'].policy_version, 2);
    p = await startProxy();
    proxy = p.hd;
    r = await query(p.url);
    assert.is((r.body as { policy_version: number }).policy_version, 3);
    // The retry loop marks it acknowledged too.
    while ((dms.server.state.nodes['proxy-p'].policy_version ?? 0) < 3) await new Promise((x) => setTimeout(x, 50));
    const stored = await dms.call('GET', '/v1/policy', dms.admin);
    assert.is((stored.body as { version: number }).version, 3);
  } finally {
    await proxy?.stop();
    await scc.stop();
    await dms.close();
    t.remove();
  }
});
push('a Proxy whose registration is refused exits with the reason; bad settings name their variable', async () => {
  const dms = await startTestDms();
  const t = tempDir();
  try {
    const caFile = path.join(t.dir, 'ca.pem');
    writeFileSync(caFile, dms.server.caCertPem);
    const hd = startHd(['run', 'pipelines/proxy.yaml', '--quiet'], { NODE_NAME: 'px', COMMAND_INTERFACE: '127.0.0.1', COMMAND_PORT: String(await freePort()), OBSERVABILITY_PORT: '-1', DMS_URL: dms.url, PLATFORM_CA_CERT_PEM: caFile, PLATFORM_BOOTSTRAP_TOKEN: `hdbt.${'Q'.repeat(43)}`, PLATFORM_KEY_BITS: '2048' });
    assert.is(await hd.exited, 1);
    assert.match(hd.output(), /registration with the DMS at .* failed: the DMS refused the registration \(unauthenticated: bootstrap_token is unknown/);
    const bad = startHd(['run', 'pipelines/proxy.yaml', '--quiet'], { PLATFORM_CA_CERT_PEM: caFile, PROXY_DISPATCH_TLS: 'maybe', PLATFORM_KEY_BITS: '512' });
    assert.is(await bad.exited, 1);
    assert.match(bad.output(), /setting 'dispatch_tls' expects true or false, got "maybe" \(from PROXY_DISPATCH_TLS\)/);
    assert.match(bad.output(), /setting 'key_bits' expects an integer 2048\.\.16384, got "512" \(from PLATFORM_KEY_BITS\)/);
  } finally {
    await dms.close();
    t.remove();
  }
});

push.run();
