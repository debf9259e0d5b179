/**
 * Security issue #14, item 5: what a registration may make of its caller, and whom a client takes
 * for the DMS, an SCC or the Proxy. Each attack is made against a real DMS process.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { dispatchCredentials } from '../../net/grpcTls';
import { clientTlsOptions, MtlsIdentity } from '../../net/mtls';
import { createCsr } from '../../net/pki/csr';
import { certificateInfo, generateRsaKey } from '../../net/pki/x509';
import { registerWithDms, type RegistrationResult } from '../../net/registerWithDms';
import { sccDispatchCredentials } from '../../sdk/grpcCredentials';
import { fetchTopology } from '../../sdk/proxyClient';
import { tempDir } from '../control/support';
import { adminToken, startDmsProcess, type DmsProcess } from './dmsProcess';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';

interface Ctx {
  dms: DmsProcess;
  dir: { dir: string; remove(): void };
  issuer: { privateKeyPem: string; publicKeyPem: string };
}

const reg = suite<Ctx>('registration binds what a caller may become (real DMS process)');
reg.before(async (ctx) => {
  ctx.dir = tempDir('hd-sec-reg-');
  ctx.issuer = await generateRsaKey(2048);
  const keyFile = path.join(ctx.dir.dir, 'k8s-issuer.pub.pem');
  writeFileSync(keyFile, ctx.issuer.publicKeyPem);
  ctx.dms = await startDmsProcess(path.join(ctx.dir.dir, 'dms'), {
    DMS_K8S_ISSUER: ISSUER,
    DMS_K8S_ISSUER_KEY_FILE: keyFile,
    DMS_K8S_SERVICE_ACCOUNTS: 'hd/storage=storageNode,hd/scc=scc',
  });
  const admin = await ctx.dms.admin();
  assert.is((await ctx.dms.call('PUT', '/v1/clusters/c1', admin, { primary: true })).status, 200);
  const declare = await ctx.dms.call('PUT', '/v1/nodes/scc-1', admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.2', port: 6987 }, grpc: { host: '127.0.0.2', port: 6990 } } });
  assert.is(declare.status, 200, JSON.stringify(declare.body));
});
reg.after(async (ctx) => {
  await ctx.dms?.stop();
  ctx.dir?.remove();
});

/** A raw `POST /v1/register` for `name` as `role` with a fresh CSR and `extra` (credential, addresses). */
async function registerRaw(dms: DmsProcess, name: string, role: string, extra: Record<string, unknown>): Promise<{ status: number; body: { error?: string; message?: string; signed_cert_pem?: string } }> {
  const kp = await generateRsaKey(2048);
  const a = await dms.call('POST', '/v1/register', { ca: dms.ca }, { node_name: name, role, csr_pem: createCsr(name, kp.privateKeyPem, kp.publicKeyPem), ...extra });
  return a as { status: number; body: { error?: string; message?: string } };
}

async function k8sToken(key: string, sub: string, pod?: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(pod ? { 'kubernetes.io': { namespace: 'hd', pod: { name: pod, uid: 'u1' } } } : {})
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(ISSUER)
    .setAudience('hd-dms')
    .setSubject(sub)
    .setIssuedAt(now - 10)
    .setExpirationTime(now + 600)
    .sign(createPrivateKey(key));
}

reg('a client token cannot buy an scc, proxy, sqlServer or admin certificate (403); it still registers its client', async ({ dms }) => {
  for (const role of ['scc', 'proxy', 'sqlServer']) {
    const token = await adminToken(dms, { node_name: `cl-${role}` });
    const r = await registerRaw(dms, `cl-${role}`, role, { bootstrap_token: token });
    assert.is(r.status, 403, `${role}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error, 'forbidden');
    assert.match(r.body.message ?? '', new RegExp(`bootstrap token is for a client node, not a ${role}`));
    // The refused attempt did not spend the token: the client it was made for registers with it.
    const ok = await registerRaw(dms, `cl-${role}`, 'client', { bootstrap_token: token });
    assert.is(ok.status, 200, JSON.stringify(ok.body));
    assert.is(certificateInfo(ok.body.signed_cert_pem as string).organizationalUnit, 'client');
  }
  const token = await adminToken(dms, { node_name: 'cl-admin' });
  const admin = await registerRaw(dms, 'cl-admin', 'admin', { bootstrap_token: token });
  assert.is(admin.status, 400, JSON.stringify(admin.body));
  assert.not.ok(admin.body.signed_cert_pem);
  // Nor can the administrator be asked for a privileged token on the client's behalf by name: the
  // token names the declared role, and a declared node's token is for that role only.
  const sccToken = await adminToken(dms, { node_name: 'scc-1' });
  const asProxy = await registerRaw(dms, 'scc-1', 'proxy', { bootstrap_token: sccToken });
  assert.is(asProxy.status, 403);
});

reg('a credential for node A does not register node B; a service-account token registers only its pod, as its mapped role', async ({ dms, issuer }) => {
  const token = await adminToken(dms, { node_name: 'sn-a', role: 'storageNode' });
  const other = await registerRaw(dms, 'sn-b', 'storageNode', { bootstrap_token: token });
  assert.is(other.status, 403);
  assert.is(other.body.error, 'name_mismatch');
  // A service-account token that names no pod is bound to no node: refused, whatever name it asks for.
  const unbound = await registerRaw(dms, 'sn-b', 'storageNode', { k8s_token: await k8sToken(issuer.privateKeyPem, 'system:serviceaccount:hd:storage') });
  assert.is(unbound.status, 401, JSON.stringify(unbound.body));
  assert.match(unbound.body.message ?? '', /names no pod/);
  // A pod's token registers that pod, as the role DMS_K8S_SERVICE_ACCOUNTS maps its account to...
  const pod = await k8sToken(issuer.privateKeyPem, 'system:serviceaccount:hd:storage', 'sn-pod-0');
  const ok = await registerRaw(dms, 'sn-pod-0', 'storageNode', { k8s_token: pod });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  // ...and not as another role, nor as another pod.
  assert.is((await registerRaw(dms, 'sn-pod-0', 'client', { k8s_token: pod })).status, 403);
  assert.is((await registerRaw(dms, 'sn-pod-1', 'storageNode', { k8s_token: pod })).body.error, 'name_mismatch');
  // An account mapped to a privileged role still registers only a node an administrator declared.
  const sccPod = await registerRaw(dms, 'scc-rogue', 'scc', { k8s_token: await k8sToken(issuer.privateKeyPem, 'system:serviceaccount:hd:scc', 'scc-rogue') });
  assert.is(sccPod.status, 403, JSON.stringify(sccPod.body));
  assert.match(sccPod.body.message ?? '', /only for a node an administrator declared/);
});

reg('certificate names come only from declared addresses: a wildcard or an undeclared host is refused', async ({ dms }) => {
  const wildcard = await registerRaw(dms, 'scc-1', 'scc', { bootstrap_token: await adminToken(dms, { node_name: 'scc-1' }), addresses: { production: { host: '*.hd.example', port: 6987 } } });
  assert.is(wildcard.status, 400, JSON.stringify(wildcard.body));
  assert.match(wildcard.body.message ?? '', /wildcards are not accepted/);
  const undeclared = await registerRaw(dms, 'scc-1', 'scc', { bootstrap_token: await adminToken(dms, { node_name: 'scc-1' }), addresses: { production: { host: '127.0.0.2', port: 6987 }, control: { host: '10.66.0.1', port: 6986 } } });
  assert.is(undeclared.status, 403, JSON.stringify(undeclared.body));
  assert.match(undeclared.body.message ?? '', /not 10\.66\.0\.1/);
  const ok = await registerRaw(dms, 'scc-1', 'scc', { bootstrap_token: await adminToken(dms, { node_name: 'scc-1' }), addresses: { production: { host: '127.0.0.2', port: 6987 } } });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.is(new X509Certificate(ok.body.signed_cert_pem as string).subjectAltName, 'DNS:scc-1, IP Address:127.0.0.2');
  // A node nobody declared gets its own name only, whatever addresses it says it has.
  const client = await registerRaw(dms, 'cl-names', 'client', { bootstrap_token: await adminToken(dms, { node_name: 'cl-names' }), addresses: { control: { host: 'dms-core', port: 6986 } } });
  assert.is(client.status, 200, JSON.stringify(client.body));
  assert.is(new X509Certificate(client.body.signed_cert_pem as string).subjectAltName, 'DNS:cl-names');
});

reg('a quarantined node does not register back into service, with its certificate or a new token', async ({ dms }) => {
  const admin = await dms.admin();
  assert.is((await dms.call('PUT', '/v1/nodes/sn-q', admin, { role: 'storageNode', cluster: 'c1' })).status, 200);
  const first = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn-q', role: 'storageNode', caCertPem: dms.ca, credentials: { bootstrapToken: await adminToken(dms, { node_name: 'sn-q' }) }, keyBits: 2048 });
  assert.ok(first.success, first.error_message);
  assert.is((await dms.call('PUT', '/v1/nodes/sn-q', admin, { role: 'storageNode', state: 'quarantined' })).status, 200);
  const withCert = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn-q', role: 'storageNode', caCertPem: dms.ca, credentials: { certPem: first.signed_cert_pem, keyPem: first.client_key_pem } });
  assert.not.ok(withCert.success);
  assert.match(withCert.error_message, /forbidden: node 'sn-q' is quarantined/);
  const withToken = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn-q', role: 'storageNode', caCertPem: dms.ca, credentials: { bootstrapToken: await adminToken(dms, { node_name: 'sn-q' }) }, keyBits: 2048 });
  assert.match(withToken.error_message, /forbidden: node 'sn-q' is quarantined/);
  const topo = (await dms.call('GET', '/v1/topology', admin)).body as { clusters: { storage_nodes: { name: string; state: string }[] }[] };
  assert.is(topo.clusters[0].storage_nodes.find((n) => n.name === 'sn-q')?.state, 'quarantined');
});

const peers = suite<Ctx & { client: RegistrationResult }>('clients check the role of the DMS, an SCC and the Proxy (real DMS process)');
peers.before(async (ctx) => {
  ctx.dir = tempDir('hd-sec-peer-');
  ctx.dms = await startDmsProcess(path.join(ctx.dir.dir, 'dms'));
  // The impostor: a `client` whose certificate carries a name (and, before the fix, the address) it wants to pose under.
  ctx.client = await registerWithDms({
    dmsUrl: ctx.dms.url,
    nodeName: 'impostor',
    role: 'client',
    caCertPem: ctx.dms.ca,
    credentials: { bootstrapToken: await adminToken(ctx.dms, { node_name: 'impostor' }) },
    keyBits: 2048,
    addresses: { control: { host: '127.0.0.1', port: 1 } },
  });
  assert.ok(ctx.client.success, ctx.client.error_message);
});
peers.after(async (ctx) => {
  await ctx.dms?.stop();
  ctx.dir?.remove();
});

/** An HTTPS server presenting `r`'s certificate that answers every request with `answer` (JSON). */
async function fakeHttps(r: RegistrationResult, answer: unknown): Promise<{ port: number; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server = https.createServer({ key: r.client_key_pem, cert: r.signed_cert_pem }, (_req, res) => {
    hits++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, hits: () => hits, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

peers('a client certificate posing as the DMS: registration, which would take its answer, refuses the connection', async ({ dms, client }) => {
  const fake = await fakeHttps(client, { success: true, signed_cert_pem: 'x', ca_cert_pem: 'x', not_after: 'x', renew_after: 'x' });
  try {
    const r = await registerWithDms({ dmsUrl: `https://127.0.0.1:${fake.port}`, dmsServerName: 'impostor', nodeName: 'victim', caCertPem: dms.ca, credentials: { bootstrapToken: 'hdbt.x' }, keyBits: 2048 });
    assert.not.ok(r.success);
    assert.match(r.error_message, /cannot reach the DMS: .*not dms: refused \(peer role check\)/);
    assert.is(fake.hits(), 0, 'no request was sent to the impostor');
  } finally {
    await fake.close();
  }
});

peers('a client certificate posing as the Proxy: the SDK refuses the connection', async ({ dms, client }) => {
  const fake = await fakeHttps(client, { primary_cluster: 'c1', sccs: [] });
  try {
    const err = await fetchTopology(`https://127.0.0.1:${fake.port}`, { tls: { ca: dms.ca, cert: client.signed_cert_pem, key: client.client_key_pem, servername: 'impostor' }, headers: {} }).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(err, 'the call must fail');
    assert.match(String(err?.message), /not proxy: refused \(peer role check\)/);
    assert.is(fake.hits(), 0);
  } finally {
    await fake.close();
  }
});

peers('a client certificate posing as an SCC (gRPC QueryDispatch) or a Storage Node (HDWP link): the handshake is refused', async ({ client }) => {
  const def = {
    ping: { path: '/hd.test.T/Ping', requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b },
  };
  const server = new grpc.Server();
  let calls = 0;
  server.addService(def, { ping: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => (calls++, cb(null, Buffer.from('pong'))) });
  const creds = grpc.ServerCredentials.createSsl(Buffer.from(client.ca_cert_pem), [{ private_key: Buffer.from(client.client_key_pem), cert_chain: Buffer.from(client.signed_cert_pem) }], true);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', creds, (e, p) => (e ? reject(e) : resolve(p))));
  const Client = grpc.makeGenericClientConstructor(def, 'T');
  const material = { keyPem: client.client_key_pem, certPem: client.signed_cert_pem, caPem: client.ca_cert_pem };
  const ping = (c: grpc.ChannelCredentials, options: grpc.ChannelOptions = {}): Promise<grpc.ServiceError | undefined> => {
    const cl = new Client(`127.0.0.1:${port}`, c, options) as unknown as { ping(b: Buffer, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null) => void): void; close(): void };
    return new Promise((resolve) => cl.ping(Buffer.alloc(0), { deadline: Date.now() + 10_000 }, (e) => (cl.close(), resolve(e ?? undefined))));
  };
  try {
    // The Proxy's way (the SCC's name checked) and the SDK's (an address: no name to check).
    const named = await ping(dispatchCredentials(material, 'impostor'), { 'grpc.ssl_target_name_override': 'impostor', 'grpc.default_authority': 'impostor' });
    assert.ok(named, 'the Proxy-style call must fail');
    assert.is(named?.code, grpc.status.UNAVAILABLE);
    const sdk = await ping(sccDispatchCredentials({ ca: client.ca_cert_pem, cert: client.signed_cert_pem, key: client.client_key_pem }) as grpc.ChannelCredentials);
    assert.ok(sdk, 'the SDK call must fail');
    assert.is(sdk?.code, grpc.status.UNAVAILABLE);
    assert.is(calls, 0);
  } finally {
    server.forceShutdown();
  }
  // An SCC's link to a Storage Node (clientLink: node name and role storageNode).
  const id = MtlsIdentity.fromRegistration(client);
  const tlsServer = tls.createServer({ key: client.client_key_pem, cert: client.signed_cert_pem }, (s) => s.end());
  await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
  try {
    const err = await new Promise<Error | undefined>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: (tlsServer.address() as AddressInfo).port, ...clientTlsOptions(id, 'impostor', ['storageNode']) }, () => (s.destroy(), resolve(undefined)));
      s.on('error', (e) => resolve(e));
    });
    assert.match(String(err?.message), /not storageNode: refused \(peer role check\)/);
  } finally {
    tlsServer.close();
  }
});

reg.run();
peers.run();
