/**
 * SCC and Storage Nodes registered with a DMS (real `hd run` processes): their links are mutual
 * TLS, a peer without a certificate of our CA (or of the wrong role, or revoked) is refused, and a
 * restarted node comes back with its stored certificate.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type tls from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../engine-rs/batchId';
import { dispatchCredentials } from '../../net/grpcTls';
import { clientTlsOptions, MtlsIdentity } from '../../net/mtls';
import { registerWithDms } from '../../net/registerWithDms';
import type { NodeRole } from '../../control/dms/state';
import { QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import type { HdQuery } from '../../query/hdQuery';
import { newQueryToken } from '../../query/token';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { ResultListener, type BatchResult, type QueryResult } from '../../hdwp/resultListener';
import { startCluster, type Cluster } from '../support/cluster';
import { startTestDms, tempDir, type TestDms } from './support';

const RS = 64;
const PER_BATCH = 200;
const KEY_BITS = 2048;

interface IdentityHealth {
  source: string;
  certificate: { serial: string };
  peers: { name: string; role: string; port: string; connections: number }[];
  refused: number;
  recent_refusals: string[];
}

const until = async (cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

function recordsOf(n: number): Buffer {
  const b = Buffer.alloc(PER_BATCH * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 13 + n * 5) & 0xff;
  return b;
}

async function health(port: number): Promise<{ identity: IdentityHealth; replicas?: { replicas: { name: string; state: string }[] } }> {
  return (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { identity: IdentityHealth };
}

async function tokenFor(dms: TestDms, name: string, role: NodeRole): Promise<string> {
  const a = await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role });
  return (a.body as { token: string }).token;
}

async function enrol(dms: TestDms, name: string, role: NodeRole): Promise<MtlsIdentity> {
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await tokenFor(dms, name, role) }, keyBits: KEY_BITS });
  assert.ok(r.success, r.error_message);
  return MtlsIdentity.fromRegistration(r);
}

/** Opens an SCC-role HDWP stream to `port` and closes it: resolves 'hello' when the node answered hello, else why not. */
async function tryStream(port: number, tlsOpts: tls.ConnectionOptions | undefined): Promise<string> {
  try {
    const c = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'probe', recordSize: RS, connectTimeoutMs: 5000, ...(tlsOpts && { tls: tlsOpts }) });
    await c.close();
    return 'hello';
  } catch (err) {
    return (err as Error).message;
  }
}

let dms: TestDms;
let cluster: Cluster;
let caDir: { dir: string; remove(): void };
const ids = Array.from({ length: 6 }, (_, i) => generateBatchIdNumber(7000 + i));

const t = suite('node identity: SCC and Storage Nodes registered with the DMS talk mutual TLS');
t.before(async () => {
  dms = await startTestDms();
  caDir = tempDir('hd-node-ca-');
  const caFile = path.join(caDir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  cluster = await startCluster({
    recordSize: RS,
    // A short revocation-list refresh so a revocation reaches the nodes within the test.
    dms: { url: dms.url, caFile, token: (name, role) => tokenFor(dms, name, role), env: { PLATFORM_KEY_BITS: String(KEY_BITS), PLATFORM_CRL_REFRESH_MS: '300', PLATFORM_CLUSTER: 'c1' } },
    // A client certificate dispatches straight to the SCC below: allowed explicitly (the default is the Proxy only).
    sccEnv: { QUERY_GRPC_ROLES: 'proxy,client' },
  });
});
t.after(async () => {
  await cluster?.stop();
  await dms?.close();
  caDir?.remove();
});

t('a registered SCC and two Storage Nodes ingest and answer a query end to end over mutual TLS', async () => {
  const ingest = await HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: 'secure', recordSize: RS });
  for (const [n, id] of ids.entries()) {
    await ingest.sendRecords(id, recordsOf(n));
    await ingest.sendEob(id, PER_BATCH);
  }
  await ingest.close();

  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  // The SCC's gRPC port is mutual TLS too: the query goes with a client certificate (test/control/grpcMtls.test.ts has the refusals).
  const querier = await enrol(dms, 'query-client', 'client');
  const client = new QueryDispatchClient(`${cluster.host}:${cluster.scc.queryGrpcPort}`, { credentials: dispatchCredentials(querier.material, 'scc-test') });
  try {
    const q: HdQuery = { queryId: 1, dataset: 'secure', batchIds: ids.map((b) => b.toHex()), subQueries: [], targets: [], verifyHash: false, queryQos: 4, returnAddress: { host: '127.0.0.1', port }, token: newQueryToken() };
    const results: QueryResult[] = [];
    const open = listener.open({ queryId: q.queryId, token: q.token }, (r) => void results.push(r));
    const reply = await client.dispatch(q);
    assert.is(reply.batches, ids.length);
    await until(() => open.completed.size === ids.length, 'every batch');
    assert.equal(open.batchErrors(), []);
    const byBatch = new Map(results.filter((r): r is BatchResult => r.kind === 'batch').map((r) => [r.batchId.toHex(), r]));
    for (const [n, id] of ids.entries()) assert.ok(Buffer.concat(byBatch.get(id.toHex())?.records ?? []).equals(recordsOf(n)), `batch ${n} byte-identical`);
  } finally {
    client.close();
    await listener.close();
  }

  // Each node registered with its bootstrap token; the Storage Nodes saw the SCC's certificate on both ports.
  const scc = await health(cluster.scc.observabilityPort);
  assert.is(scc.identity.source, 'registration');
  for (const sn of cluster.sns) {
    const h = await health(sn.observabilityPort);
    assert.is(h.identity.source, 'registration');
    const peers = h.identity.peers.map((p) => `${p.port} ${p.role} ${p.name}`);
    assert.ok(peers.includes('production scc scc-test') && peers.includes('command scc scc-test'), `${sn.name} peers: ${peers.join(', ')}`);
    assert.match(sn.proc.output(), /mutual TLS peer scc 'scc-test'/);
  }
  // The DMS knows where each node is (the Proxy reads the Storage Nodes' observability addresses there).
  type Node = { name: string; addresses: { production?: { port: number }; observability?: { port: number } } };
  const topo = (await dms.call('GET', '/v1/topology', dms.admin)).body as { clusters: { id: string; sccs: Node[]; storage_nodes: Node[] }[] };
  const c1 = topo.clusters.find((c) => c.id === 'c1');
  assert.equal(c1?.sccs.map((n) => `${n.name} ${n.addresses.production?.port}`), [`scc-test ${cluster.scc.productionPort}`]);
  assert.equal(c1?.storage_nodes.map((n) => `${n.name} ${n.addresses.observability?.port}`), cluster.sns.map((sn) => `${sn.name} ${sn.observabilityPort}`));
});

t("a plain TCP client gets no hello on a Storage Node's production or command port", async () => {
  for (const sn of cluster.sns) {
    const before = (await health(sn.observabilityPort)).identity.refused;
    assert.not.equal(await tryStream(sn.productionPort, undefined), 'hello');
    assert.not.equal(await tryStream(sn.commandPort, undefined), 'hello');
    // Both refusals are the node's own, in the handshake (counted before the client gave up).
    await until(async () => (await health(sn.observabilityPort)).identity.refused >= before + 2, `${sn.name} counts both refusals`);
    const recent = (await health(sn.observabilityPort)).identity.recent_refusals;
    assert.ok(recent.some((r) => /^command port: a connection from 127\.0\.0\.1:\d+ refused in the TLS handshake \(wrong version number\)/.test(r)), recent.join('\n'));
  }
});

t('a certificate from another CA is refused in the handshake; one of our CA with the wrong role after it', async () => {
  const other = await startTestDms();
  try {
    const foreign = await enrol(other, 'scc-test', 'scc');
    // The client trusts our CA (so only the server's refusal can stop it) but presents the other CA's certificate.
    const opts = { ...clientTlsOptions(foreign, 'sn1'), secureContext: undefined, ca: dms.server.caCertPem, crl: undefined };
    assert.not.equal(await tryStream(cluster.sns[0].productionPort, opts), 'hello');
    // Its issuer has our root's name but not its key.
    await until(async () => (await health(cluster.sns[0].observabilityPort)).identity.recent_refusals.some((r) => /certificate refused: CERT_SIGNATURE_FAILURE/.test(r)), 'the refusal counted with its reason');
  } finally {
    await other.close();
  }
  const impostor = await enrol(dms, 'sn9', 'storageNode');
  const before = (await health(cluster.sns[0].observabilityPort)).identity.refused;
  assert.not.equal(await tryStream(cluster.sns[0].productionPort, clientTlsOptions(impostor, 'sn1')), 'hello');
  const h = (await health(cluster.sns[0].observabilityPort)).identity;
  assert.ok(h.refused > before);
  assert.ok(h.recent_refusals.some((r) => /is storageNode 'sn9'; only scc certificates are accepted here/.test(r)), h.recent_refusals.join('\n'));
});

t('a restarted Storage Node reuses its stored certificate (its bootstrap token is spent) and is replicated to again', async () => {
  const sn1 = cluster.sns[0];
  await cluster.restartSn(0);
  const h = await health(sn1.observabilityPort);
  assert.is(h.identity.source, 'stored certificate');
  assert.match(sn1.proc.output(), /mutual TLS identity from stored certificate/);
  // The SCC's replication stream reconnects over mutual TLS.
  const ingest = await HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: 'secure', recordSize: RS });
  const id = generateBatchIdNumber(7100);
  await ingest.sendRecords(id, recordsOf(100));
  await ingest.sendEob(id, PER_BATCH);
  await ingest.close();
  await until(async () => (await health(cluster.scc.observabilityPort)).replicas?.replicas.every((r) => r.state === 'healthy') === true, 'both replicas healthy');
  await until(async () => (await health(sn1.observabilityPort)).identity.peers.some((p) => p.name === 'scc-test' && p.port === 'production'), 'sn1 sees the SCC again');
});

t("a revoked SCC certificate is refused on the next connection", async () => {
  const dir = cluster.scc.stateDir as string;
  const scc = new MtlsIdentity({
    keyPem: readFileSync(path.join(dir, 'node.key.pem'), 'utf8'),
    certPem: readFileSync(path.join(dir, 'node.cert.pem'), 'utf8'),
    caPem: readFileSync(path.join(dir, 'ca.cert.pem'), 'utf8'),
  });
  const port = cluster.sns[1].productionPort;
  assert.is(await tryStream(port, clientTlsOptions(scc, 'sn2')), 'hello', 'the stored SCC certificate is accepted before the revocation');
  const rv = await dms.call('POST', '/v1/certificates/revoke', dms.admin, { serial: scc.certificate.serial });
  assert.is(rv.status, 200, JSON.stringify(rv.body));
  // The Storage Node picks the new revocation list up on its refresh period (PLATFORM_CRL_REFRESH_MS).
  await until(async () => (await tryStream(port, clientTlsOptions(scc, 'sn2'))) !== 'hello', 'the revoked certificate refused');
  const recent = (await health(cluster.sns[1].observabilityPort)).identity.recent_refusals;
  assert.ok(recent.some((r) => /^production port: .*refused in the TLS handshake \(certificate refused: CERT_REVOKED\)/.test(r)), recent.join('\n'));
});

t.run();
