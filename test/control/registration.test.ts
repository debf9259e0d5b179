import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { createCsr } from '../../net/pki/csr';
import { certificateInfo, generateRsaKey } from '../../net/pki/x509';
import { registerWithDms } from '../../net/registerWithDms';
import { startTestDms, tempDir, type TestDms } from './support';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';

async function k8sToken(keyPem: string, claims: { sub?: string; pod?: string; iss?: string; aud?: string; expSecondsFromNow?: number }): Promise<string> {
  const payload: Record<string, unknown> = {};
  if (claims.pod) payload['kubernetes.io'] = { namespace: 'hd', pod: { name: claims.pod, uid: 'u1' }, serviceaccount: { name: 'hd-node' } };
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(claims.iss ?? ISSUER)
    .setAudience(claims.aud ?? 'hd-dms')
    .setSubject(claims.sub ?? 'system:serviceaccount:hd:hd-node')
    .setIssuedAt(now - 10)
    .setExpirationTime(now + (claims.expSecondsFromNow ?? 600))
    .sign(createPrivateKey(keyPem));
}

interface Ctx {
  dms: TestDms;
  issuerKey: { privateKeyPem: string; publicKeyPem: string };
}

const reg = suite<Ctx>('registration v2 (real HTTPS)');
reg.before(async (ctx) => {
  ctx.issuerKey = await generateRsaKey(2048);
  ctx.dms = await startTestDms({ k8s: { issuer: ISSUER, publicKeyPem: ctx.issuerKey.publicKeyPem, audience: 'hd-dms', serviceAccounts: ['hd/hd-node=ingester'] } });
  const { dms } = ctx;
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  assert.is((await dms.call('PUT', '/v1/nodes/scc-1', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.2', port: 6987 }, grpc: { host: '127.0.0.2', port: 6990 } } })).status, 200);
  assert.is(
    (await dms.call('PUT', '/v1/nodes/sn-1', dms.admin, { role: 'storageNode', cluster: 'c1', devices: [{ name: 'd0', address: '0000:01:00.0', type: 'nvme' }], hash_offload_platform: 'cpu' })).status,
    200,
  );
  const schema = { id: 'flows', record_size: 16, time_field: 'ts', fields: [{ name: 'ts', type: 'timestamp', offset: 0, size: 8 }, { name: 'v', type: 'uint64', offset: 8, size: 8 }] };
  const put = await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema });
  assert.is(put.status, 200, JSON.stringify(put.body));
});
reg.after(async (ctx) => ctx.dms.close());

async function token(dms: TestDms, node: string, ttl?: number): Promise<string> {
  const r = await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: node, ...(ttl !== undefined && { ttl_s: ttl }) });
  assert.is(r.status, 201);
  return (r.body as { token: string }).token;
}

reg('a bootstrap token registers a Storage Node: certificate, schema, targets, devices, hash election', async ({ dms }) => {
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn-1', role: 'storageNode', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await token(dms, 'sn-1') }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  const info = certificateInfo(r.signed_cert_pem);
  assert.is(info.commonName, 'sn-1');
  assert.is(info.organizationalUnit, 'storageNode');
  assert.ok(r.client_key_pem.includes('PRIVATE KEY'));
  assert.is(JSON.parse(r.schema_json).id, 'flows');
  assert.is(r.record_size, 16);
  assert.equal(r.scc_targets, [{ name: 'scc-1', host: '127.0.0.2', port: 6987, grpc_port: 6990 }]);
  assert.equal(r.devices, [{ name: 'd0', address: '0000:01:00.0', type: 'nvme' }]);
  assert.equal(r.hash_election, { algorithm: 'sha512', chain_block_size: 64, record_size: 150, computed_by: 'scc', offload: 'cpu' });
  assert.is(r.cluster, 'c1');
  assert.ok(r.crl_pem.includes('BEGIN X509 CRL'));
  assert.ok(Date.parse(r.renew_after) < Date.parse(r.not_after));
  assert.is(dms.server.state.nodes['sn-1'].state, 'registered');
});
reg('a bootstrap token is single-use: the second use is refused (401)', async ({ dms }) => {
  const t = await token(dms, 'cl-1');
  const ok = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t }, keyBits: 2048 });
  assert.ok(ok.success, ok.error_message);
  const again = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-1', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t }, keyBits: 2048 });
  assert.not.ok(again.success);
  assert.match(again.error_message, /unauthenticated: bootstrap_token was already used/);
  assert.is(again.signed_cert_pem, '');
});
reg('an expired, unknown or malformed bootstrap token is refused (401)', async ({ dms }) => {
  const t = await token(dms, 'cl-2', 1);
  await new Promise((r) => setTimeout(r, 1100));
  const kp = await generateRsaKey(2048);
  const csr = createCsr('cl-2', kp.privateKeyPem, kp.publicKeyPem);
  let r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'cl-2', role: 'client', csr_pem: csr, bootstrap_token: t });
  assert.is(r.status, 401);
  assert.match((r.body as { message: string }).message, /expired/);
  r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'cl-2', role: 'client', csr_pem: csr, bootstrap_token: `hdbt.${'A'.repeat(43)}` });
  assert.is(r.status, 401);
  assert.match((r.body as { message: string }).message, /unknown/);
  r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'cl-2', role: 'client', csr_pem: csr, bootstrap_token: 'let-me-in' });
  assert.is(r.status, 401);
  r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'cl-2', role: 'client', csr_pem: csr });
  assert.equal(r.body, { error: 'unauthenticated', message: 'no credential: present a client certificate from DMS-CA, a bootstrap_token, or a k8s_token' });
});
reg("a token for another node, and a CSR for a different name, are refused (403 name_mismatch); the token stays unused", async ({ dms }) => {
  const t = await token(dms, 'cl-3');
  const kp = await generateRsaKey(2048);
  let r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'cl-4', role: 'client', csr_pem: createCsr('cl-4', kp.privateKeyPem, kp.publicKeyPem), bootstrap_token: t });
  assert.is(r.status, 403);
  assert.is((r.body as { error: string }).error, 'name_mismatch');
  r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'cl-3', role: 'client', csr_pem: createCsr('scc-1', kp.privateKeyPem, kp.publicKeyPem), bootstrap_token: t });
  assert.is(r.status, 403);
  assert.match((r.body as { message: string }).message, /csr_pem is for 'scc-1', not for node 'cl-3'/);
  const ok = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-3', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t }, overrideKeyPem: kp.privateKeyPem });
  assert.ok(ok.success, ok.error_message);
  assert.is(ok.client_key_pem, kp.privateKeyPem);
});
reg("a role other than the token's (the declared one) is refused (403); a CSR with a small key is refused (400 invalid_csr)", async ({ dms }) => {
  const t = await token(dms, 'scc-1');
  const kp = await generateRsaKey(2048);
  let r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'scc-1', role: 'storageNode', csr_pem: createCsr('scc-1', kp.privateKeyPem, kp.publicKeyPem), bootstrap_token: t });
  assert.is(r.status, 403);
  assert.match((r.body as { message: string }).message, /the bootstrap token is for a scc node, not a storageNode/);
  const small = await generateRsaKey(1024);
  r = await dms.call('POST', '/v1/register', dms.anon, { node_name: 'scc-1', role: 'scc', csr_pem: createCsr('scc-1', small.privateKeyPem, small.publicKeyPem), bootstrap_token: t });
  assert.is(r.status, 400);
  assert.is((r.body as { error: string }).error, 'invalid_csr');
});
reg('a Kubernetes service-account token registers the pod it names; wrong issuer, expiry, account or name are refused', async ({ dms, issuerKey }) => {
  const good = await k8sToken(issuerKey.privateKeyPem, { pod: 'ingester-0' });
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'ingester-0', role: 'ingester', caCertPem: dms.server.caCertPem, credentials: { k8sToken: good }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  assert.is(certificateInfo(r.signed_cert_pem).organizationalUnit, 'ingester');
  // Service-account tokens are not single-use; the pod may register again after a restart.
  const again = await registerWithDms({ dmsUrl: dms.url, nodeName: 'ingester-0', role: 'ingester', caCertPem: dms.server.caCertPem, credentials: { k8sToken: good }, keyBits: 2048 });
  assert.ok(again.success, again.error_message);
  const cases: [string, string, RegExp][] = [
    [await k8sToken(issuerKey.privateKeyPem, { pod: 'ingester-1' }), 'ingester-0', /403|name_mismatch/],
    [await k8sToken(issuerKey.privateKeyPem, { pod: 'ingester-0', iss: 'https://evil' }), 'ingester-0', /unauthenticated: k8s_token refused: claim iss/],
    [await k8sToken(issuerKey.privateKeyPem, { pod: 'ingester-0', expSecondsFromNow: -60 }), 'ingester-0', /expired/],
    [await k8sToken(issuerKey.privateKeyPem, { pod: 'ingester-0', sub: 'system:serviceaccount:other:x' }), 'ingester-0', /forbidden: service account other\/x/],
    [await k8sToken((await generateRsaKey(2048)).privateKeyPem, { pod: 'ingester-0' }), 'ingester-0', /unauthenticated: k8s_token refused/],
  ];
  for (const [tok, name, want] of cases) {
    const bad = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role: 'ingester', caCertPem: dms.server.caCertPem, credentials: { k8sToken: tok }, keyBits: 2048 });
    assert.not.ok(bad.success);
    assert.match(bad.error_message, want);
  }
});
reg('a pre-issued certificate from DMS-CA registers (and wins over a token); certificates from another CA, expired or revoked do not', async ({ dms }) => {
  const first = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-5', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await token(dms, 'cl-5') }, keyBits: 2048 });
  assert.ok(first.success);
  // The certificate is used; the (bogus) token is not even sent.
  const viaCert = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-5', caCertPem: dms.server.caCertPem, credentials: { certPem: first.signed_cert_pem, keyPem: first.client_key_pem, bootstrapToken: 'bogus' } });
  assert.ok(viaCert.success, viaCert.error_message);
  assert.is.not(certificateInfo(viaCert.signed_cert_pem).serial, certificateInfo(first.signed_cert_pem).serial);
  // Registering under another name with this certificate is refused.
  const otherName = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-6', caCertPem: dms.server.caCertPem, credentials: { certPem: first.signed_cert_pem, keyPem: first.client_key_pem } });
  assert.match(otherName.error_message, /name_mismatch: the certificate is for node 'cl-5'/);
  // Another CA's certificate is no credential at all.
  const t = tempDir();
  try {
    const foreign = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    const kp = await generateRsaKey(2048);
    const fc = foreign.issue({ commonName: 'cl-5', role: 'client', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000 });
    const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-5', caCertPem: dms.server.caCertPem, credentials: { certPem: fc.certPem, keyPem: kp.privateKeyPem } });
    assert.match(r.error_message, /unauthenticated: no credential/);
  } finally {
    t.remove();
  }
  // Revoked.
  const rv = await dms.call('POST', '/v1/certificates/revoke', dms.admin, { serial: certificateInfo(viaCert.signed_cert_pem).serial, reason: 'test' });
  assert.is(rv.status, 200);
  const revoked = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-5', caCertPem: dms.server.caCertPem, credentials: { certPem: viaCert.signed_cert_pem, keyPem: viaCert.client_key_pem } });
  assert.match(revoked.error_message, /unauthenticated: client certificate .* was revoked/);
});
reg('registration v2 with the default RSA-4096 key against a DMS that requires RSA-4096', async () => {
  const dms = await startTestDms({ minKeyBits: 4096 });
  try {
    const t = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'n4096' })).body as { token: string };
    const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'n4096', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: t.token } });
    assert.ok(r.success, r.error_message);
    assert.ok(r.client_key_pem.length > 3000);
    const weak = await registerWithDms({ dmsUrl: dms.url, nodeName: 'n4096', caCertPem: dms.server.caCertPem, credentials: { certPem: r.signed_cert_pem, keyPem: r.client_key_pem }, overrideKeyPem: (await generateRsaKey(2048)).privateKeyPem });
    assert.match(weak.error_message, /invalid_csr: csr_pem key is RSA-2048; at least RSA-4096/);
  } finally {
    await dms.close();
  }
});
reg('a DMS whose certificate does not chain to the given CA bundle is not talked to', async ({ dms }) => {
  const t = tempDir();
  try {
    const other = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'x', caCertPem: other.certPem, credentials: { bootstrapToken: 'hdbt.x' }, keyBits: 2048 });
    assert.not.ok(r.success);
    assert.match(r.error_message, /cannot reach the DMS: .*(self-signed|unable to verify|certificate)/);
  } finally {
    t.remove();
  }
});
reg('renewal: a node renews with its current certificate; a CSR for another name or no certificate is refused', async ({ dms }) => {
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'cl-7', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await token(dms, 'cl-7') }, keyBits: 2048 });
  const kp = { privateKeyPem: r.client_key_pem };
  const { createPublicKey } = await import('node:crypto');
  const pub = createPublicKey(kp.privateKeyPem).export({ type: 'spki', format: 'pem' }).toString();
  const tls = { ca: dms.server.caCertPem, cert: r.signed_cert_pem, key: r.client_key_pem };
  const ok = await dms.call('POST', '/v1/certificates/renew', tls, { csr_pem: createCsr('cl-7', kp.privateKeyPem, pub) });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  const b = ok.body as { signed_cert_pem: string; not_after: string };
  assert.is(certificateInfo(b.signed_cert_pem).commonName, 'cl-7');
  const other = await dms.call('POST', '/v1/certificates/renew', tls, { csr_pem: createCsr('cl-8', kp.privateKeyPem, pub) });
  assert.is(other.status, 403);
  const anon = await dms.call('POST', '/v1/certificates/renew', dms.anon, { csr_pem: createCsr('cl-7', kp.privateKeyPem, pub) });
  assert.is(anon.status, 401);
});

reg.run();
