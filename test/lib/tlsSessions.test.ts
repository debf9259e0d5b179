import tls from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { clientTlsOptions, MtlsIdentity, peerIdentity, serverTlsOptions } from '../../net/mtls';
import { registerWithDms } from '../../net/registerWithDms';
import type { NodeRole } from '../../control/dms/state';
import { TlsSessionCache } from '../../lib/tlsSessions';
import { startTestDms, type TestDms } from '../control/support';

async function enrol(dms: TestDms, name: string, role: NodeRole): Promise<MtlsIdentity> {
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  return MtlsIdentity.fromRegistration(r);
}

const t = suite('TlsSessionCache');

t('the second connection to a mutual-TLS listener resumes; the listener still knows the peer; a new certificate does a full handshake; the oldest session goes first', async () => {
  const dms = await startTestDms();
  const listenerId = await enrol(dms, 'listener', 'sqlServer');
  const sender = await enrol(dms, 'sn-a', 'storageNode');
  const renewed = await enrol(dms, 'sn-b', 'storageNode');
  const peers: (string | undefined)[] = [];
  const server = tls.createServer(serverTlsOptions(listenerId), (s) => {
    const p = peerIdentity(s);
    peers.push(p ? `${p.role}:${p.name}` : undefined);
    s.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const cache = new TlsSessionCache();
  /** Connects through the cache, reads the answer, and resolves whether the session was resumed. */
  const once = (id: MtlsIdentity, via = cache): Promise<boolean> =>
    new Promise((resolve, reject) => {
      const s = via.connect({ ...clientTlsOptions(id), host: '127.0.0.1', port });
      let reused = false;
      s.once('secureConnect', () => (reused = s.isSessionReused()));
      s.on('data', () => undefined);
      s.on('end', () => resolve(reused));
      s.on('error', reject);
    });
  try {
    assert.is(await once(sender), false, 'the first connection is a full handshake');
    assert.is(await once(sender), true, 'the second resumes');
    assert.is(await once(sender), true);
    assert.is(await once(renewed), false, 'another certificate is another session');
    assert.equal(cache.stats, { resumed: 2, full: 2, sessions: 2 });
    // The listener sees the verified peer on resumed connections too (its role check keeps working).
    assert.equal(peers, ['storageNode:sn-a', 'storageNode:sn-a', 'storageNode:sn-a', 'storageNode:sn-b']);
    // A cache of one destination forgets the older session when a second is stored.
    const small = new TlsSessionCache(1);
    assert.is(await once(sender, small), false);
    assert.is(await once(renewed, small), false);
    assert.is(await once(sender, small), false, "sn-a's session was dropped for sn-b's");
    assert.equal(small.stats, { resumed: 0, full: 3, sessions: 1 });
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
    await dms.close();
  }
});

t.run();
