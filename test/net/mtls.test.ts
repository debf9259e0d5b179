import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { clientTlsOptions, MtlsError, MtlsIdentity, peerIdentity, serverTlsOptions } from '../../net/mtls';
import { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { certificateInfo, generateRsaKey, normalizeSerial } from '../../net/pki/x509';
import { registerWithDms } from '../../net/registerWithDms';
import { CertificateRenewer } from '../../net/renewal';
import type { NodeRole } from '../../control/dms/state';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { batch, recordsOf, startServer } from '../sources/hdwpKit';
import { startTestDms, tempDir, type TestDms } from '../control/support';

interface Ctx {
  dms: TestDms;
  ca: CertificateAuthority;
  sn: MtlsIdentity;
  scc: MtlsIdentity;
}

async function enrol(dms: TestDms, name: string, role: NodeRole): Promise<MtlsIdentity> {
  const t = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string };
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t.token }, keyBits: 2048, addresses: { control: { host: '127.0.0.1', port: 1 } } });
  assert.ok(r.success, r.error_message);
  return MtlsIdentity.fromRegistration(r);
}

/** Connects as the SCC to an HDWP server; resolves with the eob's record count or the refusal. */
async function sendOneBatch(port: number, opts: tls.ConnectionOptions | undefined, n = 1): Promise<number | HdwpStreamError> {
  try {
    const c = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'flows', recordSize: 16, ...(opts && { tls: opts }), connectTimeoutMs: 5000 });
    await c.sendRecords(batch(n), recordsOf(16, 100, n));
    const ack = await c.sendEob(batch(n), 100);
    await c.close();
    return ack.recordCount;
  } catch (err) {
    if (err instanceof HdwpStreamError) return err;
    throw err;
  }
}

/** The serial of the certificate a TLS server presents now. */
function servedSerial(port: number, opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ ...opts, host: '127.0.0.1', port }, () => {
      resolve(normalizeSerial(s.getPeerCertificate().serialNumber));
      s.destroy();
    });
    s.once('error', reject);
  });
}

/**
 * Connects with each client option set to a probe TLS server with the same options, except that it
 * lets the handshake finish so the verification error can be read: what the real listener refuses on.
 */
async function refusalReasons(serverOpts: tls.TlsOptions, clients: tls.ConnectionOptions[]): Promise<string[]> {
  const errors: string[] = [];
  let onSocket: ((s: tls.TLSSocket) => void) | undefined;
  const probe = tls.createServer({ ...serverOpts, rejectUnauthorized: false }, (s) => {
    onSocket?.(s);
    s.destroy();
  });
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const port = (probe.address() as net.AddressInfo).port;
  for (const c of clients) {
    const seen = new Promise<string>((resolve) => (onSocket = (s) => resolve(s.authorized ? 'authorized' : String(s.authorizationError))));
    const s = tls.connect({ ...c, host: '127.0.0.1', port });
    s.on('error', () => undefined);
    s.resume();
    errors.push(await seen);
    s.destroy();
  }
  probe.close();
  return errors;
}

const mtls = suite<Ctx>('mutual TLS on HDWP with DMS-CA material');
mtls.before(async (ctx) => {
  ctx.dms = await startTestDms();
  ctx.ca = await CertificateAuthority.open({ dir: path.join(ctx.dms.dir, 'ca') });
  ctx.sn = await enrol(ctx.dms, 'sn-1', 'storageNode');
  ctx.scc = await enrol(ctx.dms, 'scc-1', 'scc');
});
mtls.after(async (ctx) => ctx.dms.close());

mtls('a client with our certificate is accepted, and the server learns its name and role', async ({ sn, scc }) => {
  let peer: ReturnType<typeof peerIdentity>;
  const { server, port } = await startServer({ tls: serverTlsOptions(sn), role: 'storageNode' });
  const probe = tls.createServer({ ...serverTlsOptions(sn) }, (s) => {
    peer = peerIdentity(s);
    s.end();
  });
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  try {
    assert.is(await sendOneBatch(port, clientTlsOptions(scc, 'sn-1')), 100);
    await new Promise<void>((resolve, reject) => {
      const s = tls.connect({ ...clientTlsOptions(scc, 'sn-1'), host: '127.0.0.1', port: (probe.address() as net.AddressInfo).port }, () => undefined);
      s.on('close', () => resolve());
      s.on('error', reject);
      s.resume();
    });
    assert.equal({ name: peer?.name, role: peer?.role }, { name: 'scc-1', role: 'scc' });
  } finally {
    await server.close();
    probe.close();
  }
});
mtls('a certificate from another CA, an expired one, a revoked one and no certificate at all are refused in the handshake', async ({ dms, ca, sn }) => {
  const { server, port, seen } = await startServer({ tls: serverTlsOptions(sn), role: 'storageNode' });
  const t = tempDir();
  try {
    // Another CA: a well-formed certificate for the same name, signed by a root we do not trust.
    const foreignCa = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    const kp = await generateRsaKey(2048);
    const foreign = foreignCa.issue({ commonName: 'scc-1', role: 'scc', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000 });
    const foreignOpts = { ...clientTlsOptions(sn, 'sn-1'), secureContext: undefined, key: kp.privateKeyPem, cert: foreign.certPem };
    const e1 = await sendOneBatch(port, foreignOpts);
    assert.instance(e1, HdwpStreamError);
    // Expired: ours, but its validity ended an hour ago.
    const expired = ca.issue({ commonName: 'scc-1', role: 'scc', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000 }, Date.now() - 2 * 3_600_000);
    assert.ok(certificateInfo(expired.certPem).notAfter.getTime() < Date.now());
    const e2 = await sendOneBatch(port, { ...clientTlsOptions(sn, 'sn-1'), secureContext: undefined, key: kp.privateKeyPem, cert: expired.certPem });
    assert.instance(e2, HdwpStreamError);
    // Revoked: accepted first, refused once the DMS revoked it and the server holds the new list.
    const scc2 = await enrol(dms, 'scc-2', 'scc');
    assert.is(await sendOneBatch(port, clientTlsOptions(scc2, 'sn-1'), 2), 100);
    const rv = await dms.call('POST', '/v1/certificates/revoke', dms.admin, { node_name: 'scc-2' });
    assert.is(rv.status, 200);
    sn.update({ crlPem: String((await dms.call('GET', '/v1/crl', dms.anon)).body) });
    const e3 = await sendOneBatch(port, clientTlsOptions(scc2, 'sn-1'), 3);
    assert.instance(e3, HdwpStreamError);
    // No certificate: TLS without a client certificate, and plain TCP.
    const e4 = await sendOneBatch(port, { ca: sn.material.caPem, servername: 'sn-1', checkServerIdentity: () => undefined });
    assert.instance(e4, HdwpStreamError);
    const e5 = await sendOneBatch(port, undefined);
    assert.instance(e5, HdwpStreamError);
    // None of them reached the HDWP layer: only scc-2's first, accepted connection did.
    assert.is(seen.conns.length, 1);
    // Why each was refused, as the server's TLS layer saw it (same options, a probe listener).
    const reasons = await refusalReasons(serverTlsOptions(sn), [
      foreignOpts,
      { ...clientTlsOptions(sn, 'sn-1'), secureContext: undefined, key: kp.privateKeyPem, cert: expired.certPem },
      clientTlsOptions(scc2, 'sn-1'),
      { ca: sn.material.caPem, servername: 'sn-1', checkServerIdentity: () => undefined },
    ]);
    assert.equal(reasons, ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_HAS_EXPIRED', 'CERT_REVOKED', 'UNABLE_TO_GET_ISSUER_CERT']);
  } finally {
    t.remove();
    await server.close();
  }
});
mtls('a client refuses a server that is not the node it wanted, or whose certificate was revoked', async ({ dms, sn, scc }) => {
  const { server, port } = await startServer({ tls: serverTlsOptions(sn), role: 'storageNode' });
  try {
    const wrongName = await sendOneBatch(port, clientTlsOptions(scc, 'sn-2'));
    assert.instance(wrongName, HdwpStreamError);
    assert.match((wrongName as Error).message, /sn-2/);
    const victim = await enrol(dms, 'sn-9', 'storageNode');
    const { server: s9, port: p9 } = await startServer({ tls: serverTlsOptions(victim), role: 'storageNode' });
    assert.is(await sendOneBatch(p9, clientTlsOptions(scc, 'sn-9')), 100);
    await dms.call('POST', '/v1/certificates/revoke', dms.admin, { node_name: 'sn-9' });
    const client = new MtlsIdentity({ ...scc.material, crlPem: String((await dms.call('GET', '/v1/crl', dms.anon)).body) });
    const refused = await sendOneBatch(p9, clientTlsOptions(client, 'sn-9'));
    assert.instance(refused, HdwpStreamError);
    assert.match((refused as Error).message, /revoked/);
    await s9.close();
  } finally {
    await server.close();
  }
});
mtls('an identity refuses material that does not fit together', async ({ sn, scc }) => {
  assert.throws(() => new MtlsIdentity({ ...sn.material, keyPem: scc.material.keyPem }), (e: Error) => e instanceof MtlsError && /does not belong/.test(e.message));
  const t = tempDir();
  try {
    const other = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    assert.throws(() => new MtlsIdentity({ ...sn.material, caPem: other.certPem }), /not issued by the CA bundle/);
  } finally {
    t.remove();
  }
});
mtls('certificates renew under load without a restart: open streams go on, new connections get the new certificates', async ({ dms, sn, scc }) => {
  const { server, port } = await startServer({ tls: serverTlsOptions(sn), role: 'storageNode' });
  const events: string[] = [];
  const snRenewer = new CertificateRenewer({ identity: sn, dmsUrl: dms.url, crlRefreshMs: 0, onEvent: (e) => events.push(`sn:${e.kind}`) });
  const sccRenewer = new CertificateRenewer({ identity: scc, dmsUrl: dms.url, crlRefreshMs: 0, rotateKey: true, keyBits: 2048, onEvent: (e) => events.push(`scc:${e.kind}`) });
  try {
    const oldServed = await servedSerial(port, clientTlsOptions(scc, 'sn-1'));
    assert.is(oldServed, sn.certificate.serial);
    const oldClientSerial = scc.certificate.serial;
    const stream = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'flows', recordSize: 16, tls: clientTlsOptions(scc, 'sn-1') });
    // Batches keep flowing on the open stream while both sides renew, and new connections open meanwhile.
    let sent = 0;
    const load = (async () => {
      for (let i = 0; i < 40; i++) {
        await stream.sendRecords(batch(100 + i), recordsOf(16, 500, i));
        assert.is((await stream.sendEob(batch(100 + i), 500)).recordCount, 500);
        sent++;
      }
    })();
    const side = (async () => {
      const got: (number | HdwpStreamError)[] = [];
      for (let i = 0; i < 6; i++) got.push(await sendOneBatch(port, clientTlsOptions(scc, 'sn-1'), 200 + i));
      return got;
    })();
    await snRenewer.renewNow();
    await sccRenewer.renewNow();
    await load;
    const sideResults = await side;
    assert.is(sent, 40);
    assert.equal(sideResults, [100, 100, 100, 100, 100, 100]);
    await stream.close();
    const newServed = await servedSerial(port, clientTlsOptions(scc, 'sn-1'));
    assert.is(newServed, sn.certificate.serial);
    assert.is.not(newServed, oldServed);
    assert.is.not(scc.certificate.serial, oldClientSerial);
    assert.is(await sendOneBatch(port, clientTlsOptions(scc, 'sn-1'), 300), 100);
    assert.equal(events, ['sn:renewed', 'scc:renewed']);
  } finally {
    snRenewer.stop();
    sccRenewer.stop();
    await server.close();
  }
});
mtls('a renewer schedules itself two thirds into the lifetime, retries a refused renewal and refreshes the revocation list', async ({ dms }) => {
  const id = await enrol(dms, 'cl-r', 'client');
  const events: string[] = [];
  const renewer = new CertificateRenewer({ identity: id, dmsUrl: dms.url, renewAfter: new Date(Date.now() + 50), retryMs: 20, crlRefreshMs: 0, onEvent: (e) => events.push(e.kind) });
  renewer.start();
  const first = id.certificate.serial;
  while (id.certificate.serial === first) await new Promise((r) => setTimeout(r, 20));
  renewer.stop();
  assert.equal(events, ['renewed']);
  // Quarantined: the DMS refuses the renewal; the renewer reports it and keeps the old certificate.
  await dms.call('PUT', '/v1/nodes/cl-r', dms.admin, { role: 'client', state: 'quarantined' });
  const before = id.certificate.serial;
  let refused: unknown;
  try {
    await renewer.renewNow();
  } catch (err) {
    refused = err;
  }
  renewer.stop();
  assert.match(String(refused), /forbidden: node 'cl-r' is quarantined/);
  assert.is(id.certificate.serial, before);
  await dms.call('POST', '/v1/certificates/revoke', dms.admin, { node_name: 'scc-1' }).catch(() => undefined);
  await renewer.refreshCrl();
  assert.ok(id.material.crlPem?.includes('BEGIN X509 CRL'));
});

mtls.run();
