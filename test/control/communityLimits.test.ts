/**
 * The license limits, enforced by the DMS (docs/webux.md, "License"): in community mode the 5th
 * Storage Node's, the 2nd Proxy's first registration and a 2nd cluster are refused with a message
 * naming the license; nodes that registered before keep registering; a license raises the limits,
 * and removing it never stops what runs. `hd up`'s platform fits the community limits.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { COMMUNITY_LIMITS } from '../../control/dms/webux/license';
import { registerWithDms, type RegistrationResult } from '../../net/registerWithDms';
import { platformLayout } from '../../up/layout';
import { startTestDms, tempDir, type TestDms } from './support';
import { testLicense } from './testLicense';

const t = suite<{ dms: TestDms; certs: Map<string, RegistrationResult> }>('license limits enforced by the DMS (community mode: 1 cluster, 4 Storage Nodes, 1 Proxy)');
t.before(async (ctx) => {
  ctx.dms = await startTestDms({}, undefined, { license: 'community' });
  ctx.certs = new Map();
});
t.after(async (ctx) => ctx.dms.close());

/** Registers `name` with a fresh bootstrap token for `role`. */
async function register(ctx: { dms: TestDms; certs: Map<string, RegistrationResult> }, name: string, role: 'storageNode' | 'proxy'): Promise<RegistrationResult> {
  const { dms } = ctx;
  const t = await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role });
  assert.is(t.status, 201, JSON.stringify(t.body));
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, ...(role === 'storageNode' && { cluster: 'c1' }), caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: (t.body as { token: string }).token }, keyBits: 2048 });
  if (r.success) ctx.certs.set(name, r);
  return r;
}

const usage = async (dms: TestDms): Promise<{ mode: string; usage: Record<string, number>; over: string[] }> => (await dms.call('GET', '/v1/license', dms.admin)).body as { mode: string; usage: Record<string, number>; over: string[] };

t('a 2nd cluster is refused (403 license_limit, naming community mode and how to raise it); the 1st is declared again freely', async ({ dms }) => {
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  const c2 = await dms.call('PUT', '/v1/clusters/c2', dms.admin, {});
  assert.is(c2.status, 403);
  assert.is((c2.body as { error: string }).error, 'license_limit');
  assert.match((c2.body as { message: string }).message, /cluster 'c2' is refused: community mode \(no Enterprise License\) allows 1 cluster and c1 is declared; import a license/);
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200, 'declaring c1 again (as every hd up does) passes');
  assert.not.ok(dms.server.state.clusters.c2);
});

t('the 5th Storage Node is refused with a message naming the license; declared-only nodes take no seat; a registered node registers again', async (ctx) => {
  const { dms } = ctx;
  // Declared (as hd up does before starting them) but not registered: no seat is taken.
  assert.is((await dms.call('PUT', '/v1/nodes/sn-declared', dms.admin, { role: 'storageNode', cluster: 'c1' })).status, 200);
  for (const n of ['sn1', 'sn2', 'sn3', 'sn4']) {
    const r = await register(ctx, n, 'storageNode');
    assert.ok(r.success, `${n}: ${r.error_message}`);
  }
  assert.equal((await usage(dms)).usage, { clusters: 1, storage_nodes: 4, proxies: 0 });
  const fifth = await register(ctx, 'sn5', 'storageNode');
  assert.not.ok(fifth.success);
  assert.match(fifth.error_message ?? '', /Storage Node 'sn5' is refused: community mode \(no Enterprise License\) allows 4 Storage Nodes and sn1, sn2, sn3, sn4 hold them; import a license that allows more \(WebUX License page, or PUT \/v1\/license/);
  assert.not.ok(dms.server.state.nodes.sn5?.registered_at, 'no certificate was recorded for sn5');
  const declared = await register(ctx, 'sn-declared', 'storageNode');
  assert.not.ok(declared.success, 'a declared node is refused too when the seats are taken');
  // sn1 restarts and registers again with its certificate: never refused.
  const sn1 = ctx.certs.get('sn1') as RegistrationResult;
  const again = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn1', role: 'storageNode', caCertPem: dms.server.caCertPem, credentials: { certPem: sn1.signed_cert_pem, keyPem: sn1.client_key_pem } });
  assert.ok(again.success, again.error_message);
  // Removing a node frees its seat.
  assert.is((await dms.call('DELETE', '/v1/nodes/sn4', dms.admin)).status, 200);
  assert.ok((await register(ctx, 'sn5', 'storageNode')).success, 'sn5 takes the seat sn4 freed');
});

t('the 2nd Proxy is refused; a license raises the limits; removing the license stops nothing that registered', async (ctx) => {
  const { dms } = ctx;
  assert.ok((await register(ctx, 'px1', 'proxy')).success);
  const second = await register(ctx, 'px2', 'proxy');
  assert.not.ok(second.success);
  assert.match(second.error_message ?? '', /Proxy 'px2' is refused: community mode \(no Enterprise License\) allows 1 Proxy and px1 holds it/);

  // The license verifies with the test key this DMS was given (the test-only WebUX option).
  const lic = await dms.call('PUT', '/v1/license', dms.admin, testLicense({ id: 'L-7', licensee: 'Example Corp', limits: { clusters: 2, storage_nodes: 5, proxies: 2 } }));
  assert.is(lic.status, 200, JSON.stringify(lic.body));
  assert.ok((await register(ctx, 'px2', 'proxy')).success, 'the license allows 2 Proxies');
  assert.ok((await register(ctx, 'sn6', 'storageNode')).success, 'and 5 Storage Nodes');
  assert.is((await dms.call('PUT', '/v1/clusters/c2', dms.admin, {})).status, 200);
  const sn7 = await register(ctx, 'sn7', 'storageNode');
  assert.match(sn7.error_message ?? '', /Storage Node 'sn7' is refused: the Enterprise License L-7 \(Example Corp\) allows 5 Storage Nodes/);
  const c3 = await dms.call('PUT', '/v1/clusters/c3', dms.admin, {});
  assert.match((c3.body as { message: string }).message, /the Enterprise License L-7 \(Example Corp\) allows 2 clusters and c1, c2 are declared/);

  // Back to community mode: over the limits, reported; what registered keeps registering.
  assert.is((await dms.call('DELETE', '/v1/license', dms.admin)).status, 200);
  const u = await usage(dms);
  assert.is(u.mode, 'community');
  assert.equal(u.over, ['clusters', 'storage_nodes', 'proxies']);
  const px2 = ctx.certs.get('px2') as RegistrationResult;
  const again = await registerWithDms({ dmsUrl: dms.url, nodeName: 'px2', role: 'proxy', caCertPem: dms.server.caCertPem, credentials: { certPem: px2.signed_cert_pem, keyPem: px2.client_key_pem } });
  assert.ok(again.success, again.error_message);
  assert.not.ok((await register(ctx, 'px3', 'proxy')).success);
});

t("hd up's platform (one cluster, its Storage Nodes, one Proxy) fits the community limits, so hd up is never refused", () => {
  const dir = tempDir('hd-limits-up-');
  try {
    const layout = platformLayout({ dataDir: dir.dir });
    assert.ok(layout.storageNodes.length <= COMMUNITY_LIMITS.storage_nodes, `${layout.storageNodes.length} Storage Nodes`);
    assert.ok(COMMUNITY_LIMITS.proxies >= 1 && COMMUNITY_LIMITS.clusters >= 1);
  } finally {
    dir.remove();
  }
});

t.run();
