import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { NodeIdentity } from '../../net/nodeIdentity';
import { createCsr } from '../../net/pki/csr';
import { generateRsaKey } from '../../net/pki/x509';
import { registerWithDms } from '../../net/registerWithDms';
import { startTestDms, tempDir, type TestDms } from './support';

interface Ctx {
  dms: TestDms;
}

const mtu = suite<Ctx>('registration: the instance-wide MTU mode (a DMS with MTU_MODE=jumbo)');
mtu.before(async (ctx) => {
  ctx.dms = await startTestDms({ mtuMode: 'jumbo' });
  const { dms } = ctx;
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  for (const [name, role] of [
    ['scc-m', 'scc'],
    ['sn-m', 'storageNode'],
    ['sn-id', 'storageNode'],
  ]) {
    assert.is((await dms.call('PUT', `/v1/nodes/${name}`, dms.admin, { role, cluster: 'c1' })).status, 200);
  }
});
mtu.after(async (ctx) => ctx.dms.close());

async function token(dms: TestDms, node: string): Promise<string> {
  const r = await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: node });
  assert.is(r.status, 201);
  return (r.body as { token: string }).token;
}

mtu('an SCC declaring another mode, or none (standard), is refused with 409 and what to change; the token stays usable', async ({ dms }) => {
  const t = await token(dms, 'scc-m');
  const other = await registerWithDms({ dmsUrl: dms.url, nodeName: 'scc-m', role: 'scc', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t }, keyBits: 2048, mtuMode: 'standard' });
  assert.not.ok(other.success);
  assert.is(other.error_code, 'conflict');
  assert.match(other.error_message, /conflict: scc 'scc-m' runs MTU mode standard \(1200-byte datagrams\) but this instance runs jumbo \(8500-byte datagrams\); the MTU mode is instance-wide: set MTU_MODE=jumbo on the node, or change MTU_MODE on the DMS and restart every node of the instance/);
  const none = await registerWithDms({ dmsUrl: dms.url, nodeName: 'scc-m', role: 'scc', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t }, keyBits: 2048 });
  assert.match(none.error_message, /runs MTU mode standard \(1200-byte datagrams, the default: it declared none\)/);
  const ok = await registerWithDms({ dmsUrl: dms.url, nodeName: 'scc-m', role: 'scc', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t }, keyBits: 2048, mtuMode: 'jumbo' });
  assert.ok(ok.success, ok.error_message);
  assert.is(ok.mtu_mode, 'jumbo', 'the registration answer names the instance mode');
  assert.is(dms.server.state.nodes['scc-m'].state, 'registered');
});
mtu('the raw route: 409 conflict for a Storage Node in another mode, 400 for a mode that is none; a client needs no mode', async ({ dms }) => {
  const kp = await generateRsaKey(2048);
  const csr = createCsr('sn-m', kp.privateKeyPem, kp.publicKeyPem);
  let r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'sn-m', role: 'storageNode', csr_pem: csr, bootstrap_token: await token(dms, 'sn-m'), mtu_mode: 'standard' });
  assert.is(r.status, 409);
  assert.is((r.body as { error: string }).error, 'conflict');
  assert.match((r.body as { message: string }).message, /storageNode 'sn-m' runs MTU mode standard/);
  r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'sn-m', role: 'storageNode', csr_pem: csr, bootstrap_token: await token(dms, 'sn-m'), mtu_mode: '9000' });
  assert.is(r.status, 400);
  assert.match((r.body as { message: string }).message, /'mtu_mode' must be one of standard, jumbo, got "9000"/);
  const client = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-m', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await token(dms, 'cl-m') }, keyBits: 2048 });
  assert.ok(client.success, client.error_message);
});
mtu("a node's identity stops at a conflict: its stored certificate refused for the mode does not fall back to a token", async ({ dms }) => {
  const state = tempDir('hd-mtu-id-');
  const lines: string[] = [];
  const options = (mtuMode: 'standard' | 'jumbo', bootstrapToken: string): Parameters<typeof NodeIdentity.start>[0] => ({
    nodeName: 'sn-id',
    role: 'storageNode',
    dmsUrl: dms.url,
    caCertPem: dms.server.caCertPem,
    credentials: { bootstrapToken },
    stateDir: state.dir,
    keyBits: 2048,
    mtuMode,
    log: (l) => lines.push(l),
  });
  try {
    await (await NodeIdentity.start(options('jumbo', await token(dms, 'sn-id')))).stop();
    const unused = await token(dms, 'sn-id');
    try {
      await NodeIdentity.start(options('standard', unused));
      assert.unreachable('a node in another MTU mode started');
    } catch (err) {
      assert.match((err as Error).message, /storageNode 'sn-id' cannot register with the DMS at .*: the DMS refused the registration \(conflict: storageNode 'sn-id' runs MTU mode standard/);
    }
    assert.not.ok(lines.some((l) => l.includes('registering with the configured credential')), lines.join('\n'));
    const again = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn-id', role: 'storageNode', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: unused }, keyBits: 2048, mtuMode: 'jumbo' });
    assert.ok(again.success, `the token was not spent: ${again.error_message}`);
  } finally {
    state.remove();
  }
});
mtu.run();
