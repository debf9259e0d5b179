/**
 * The SCC's gRPC QueryDispatch port under mutual TLS (real `hd run` processes registered with a
 * DMS): a query through a registered Proxy works end to end; a plain gRPC client, a certificate of
 * another CA and a revoked certificate are refused in the handshake; a certificate of a role that
 * may not query gets PERMISSION_DENIED. Then the nodes' health reports: they reach the DMS's
 * topology, and a stopped Storage Node is marked down (its SCC degraded) until it comes back.
 * A second suite, in this process: a node's certificate renewed under a live gRPC listener, an
 * expired certificate refused, and the Proxy's dispatcher presenting its renewed certificate. A
 * third checks query_roles when the pipeline loads.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { dispatchCredentials } from '../../net/grpcTls';
import { HttpError } from '../../control/http/errors';
import { GrpcSccDispatcher } from '../../control/proxy/dispatch';
import { clientTlsOptions, MtlsIdentity } from '../../net/mtls';
import { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { generateRsaKey } from '../../net/pki/x509';
import { NodeIdentity } from '../../net/nodeIdentity';
import { CertificateRenewer } from '../../net/renewal';
import { registerWithDms } from '../../net/registerWithDms';
import type { NodeAddresses, NodeRole } from '../../control/dms/state';
import { QueryDispatcher } from '../../nodes/scc/queryDispatcher';
import { QueryService } from '../../nodes/scc/queryService';
import { DispatchError, QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { sqlProcessEnv } from '../sql/sqlProcessEnv';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForOutput, waitForPort, type HdProcess } from '../support/hdProcess';
import { ingestMinutes } from '../support/ingestMinutes';
import { INGRESS, spawnProxyProcess } from './proxySupport';
import { startTestDms, tempDir, type TestDms } from './support';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const MINUTES = 2;
const PER_MINUTE = 50;
const KEY_BITS = 2048;
const TOKEN = '00112233445566778899aabbccddeeff';

const until = async (cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

async function enrol(dms: TestDms, name: string, role: NodeRole): Promise<MtlsIdentity> {
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: KEY_BITS });
  assert.ok(r.success, r.error_message);
  return MtlsIdentity.fromRegistration(r);
}

/** Opens a result stream (as a Storage Node) to a client's listener and closes it: 'hello' when the listener answered hello, else why not. */
async function trySending(port: number, tlsOptions?: tls.ConnectionOptions): Promise<string> {
  try {
    const c = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'storageNode', datasetId: 'flows', recordSize: 64, auth: { queryId: 1, token: Buffer.alloc(16, 1) }, acks: false, connectTimeoutMs: 5000, ...(tlsOptions && { tls: tlsOptions }) });
    await c.close();
    return 'hello';
  } catch (err) {
    return String(err);
  }
}

/** Calls CancelQuery for a query that does not exist on a fresh channel: NOT_FOUND means the SCC took the call. */
async function probe(address: string, credentials?: grpc.ChannelCredentials): Promise<{ code: number; status: string; details: string }> {
  const c = new QueryDispatchClient(address, { ...(credentials && { credentials }), deadlineMs: 10_000 });
  try {
    await c.cancelQuery(987_654, TOKEN);
    return { code: grpc.status.OK, status: 'OK', details: '' };
  } catch (err) {
    if (!(err instanceof DispatchError)) throw err;
    return { code: err.code, status: err.status, details: err.details };
  } finally {
    c.close();
  }
}

interface TopoNode {
  name: string;
  role: string;
  state: string;
  mtls?: boolean;
  health?: { status: string; detail?: Record<string, unknown>; at: string };
}

async function nodesOf(dms: TestDms): Promise<Map<string, TopoNode>> {
  const t = (await dms.call('GET', '/v1/topology', dms.admin)).body as { clusters: { sccs: TopoNode[]; storage_nodes: TopoNode[] }[]; nodes: TopoNode[] };
  return new Map([...t.clusters.flatMap((c) => [...c.sccs, ...c.storage_nodes]), ...t.nodes].map((n) => [n.name, n]));
}

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  proxy: { proc: HdProcess; url: string };
  grpcAddress: string;
  remove(): void;
}

const m = suite<Ctx>('gRPC QueryDispatch over mutual TLS, and node health reports (real processes)');
m.before(async (ctx) => {
  // Reports every 300 ms; three missed mark a node down.
  ctx.dms = await startTestDms({ healthIntervalMs: 300, healthMissedReports: 3 });
  const { dms } = ctx;
  const t = tempDir('hd-grpc-mtls-');
  ctx.remove = t.remove;
  const caFile = path.join(t.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: JSON.parse(schemaJson) })).status, 200);
  const tokenFor = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({
    recordSize: 64,
    schemas: [schemaJson],
    dms: { url: dms.url, caFile, token: tokenFor, env: { PLATFORM_KEY_BITS: String(KEY_BITS), PLATFORM_CRL_REFRESH_MS: '300', PLATFORM_CLUSTER: 'c1' } },
    // hd_sql and SDK clients query this SCC directly below: allowed explicitly (the default is the Proxy only).
    sccEnv: { QUERY_GRPC_ROLES: 'proxy,sqlServer,client' },
  });
  ctx.grpcAddress = `${ctx.cluster.host}:${ctx.cluster.scc.queryGrpcPort}`;
  await ingestMinutes(ctx.cluster, schemaJson, T0, MINUTES, (b) =>
    Array.from({ length: PER_MINUTE }, (_, i) => ({ ts: String(T0 + b * 60 + i), src_ip: `10.0.${b}.${i}`, dst_ip: '10.9.0.2', src_port: String(1000 + i), dst_port: String([443, 80][i % 2]), proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' })),
  );
  ctx.proxy = await spawnProxyProcess(dms, caFile, 'proxy-m', 300);
  const v = await dms.call('PUT', '/v1/policy', dms.admin, { rego: 'package hd.authz\nimport rego.v1\ndefault allow := true\n' });
  assert.is(v.status, 200, JSON.stringify(v.body));
});
m.after(async (ctx) => {
  await ctx.proxy?.proc.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

m('a query through the registered Proxy reaches the SCC over mutual TLS and returns every record', async (ctx) => {
  const topo = await nodesOf(ctx.dms);
  assert.is(topo.get('scc-test')?.mtls, true, 'the DMS lists the registered SCC as mutual TLS');
  await using q = new PlatformQueryClient(ctx.proxy.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
  q.loadDatasetSchema(schemaJson);
  q.addControlHeader('X-Forwarded-Role', 'admin');
  q.addControlHeader('X-Forwarded-Email', 'admin@example.com');
  for (const [k, v] of Object.entries(INGRESS)) q.addControlHeader(k, v);
  const table = await q.executeDataset({ start_time: T0, end_time: T0 + MINUTES * 60 - 1 });
  assert.is(table.numRows, MINUTES * PER_MINUTE);
  assert.not.ok(q.hadErrors(), JSON.stringify(q.getBatchErrors()));
  const h = (await (await fetch(`http://127.0.0.1:${ctx.cluster.scc.observabilityPort}/health`)).json()) as { identity: { peers: { name: string; role: string; port: string }[] } };
  assert.ok(
    h.identity.peers.some((p) => p.port === 'grpc' && p.role === 'proxy' && p.name === 'proxy-m'),
    JSON.stringify(h.identity.peers),
  );
  assert.match(ctx.cluster.scc.proc.output(), /query dispatch \(gRPC QueryDispatch, mutual TLS for proxy, sqlServer, client\)/);
});

m('hd_sql in direct SCC mode with its DMS-CA certificate queries the registered SCC and reports its health to the DMS', async (ctx) => {
  const id = await enrol(ctx.dms, 'hd-sql-direct', 'sqlServer');
  const t = tempDir('hd-sql-direct-');
  const files = { ca: path.join(t.dir, 'ca.pem'), cert: path.join(t.dir, 'sql.crt'), key: path.join(t.dir, 'sql.key') };
  writeFileSync(files.ca, id.material.caPem);
  writeFileSync(files.cert, id.material.certPem);
  writeFileSync(files.key, id.material.keyPem, { mode: 0o600 });
  const [pgPort, ret] = [await freePort(), await freePort()];
  const sql = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv(
      { pgPort, returnPort: ret, dms: { url: ctx.dms.url, ...files } },
      { HD_SQL_SCC_TARGETS: `${ctx.cluster.host}:${ctx.cluster.scc.productionPort}:${ctx.cluster.scc.queryGrpcPort}`, HD_SQL_RESULT_TLS: 'true' },
    ),
  );
  try {
    await waitForPort('127.0.0.1', pgPort, sql, 60_000);
    const upstreamLine = /SCC 127\.0\.0\.1:\d+ \(gRPC \d+\) \(mutual TLS\)/;
    await waitForOutput(sql, upstreamLine);
    assert.match(sql.output(), upstreamLine);
    const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'hd', database: 'hd' });
    await c.connect();
    try {
      const r = await c.query(`SELECT count(*)::INTEGER AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + MINUTES * 60}`);
      assert.equal(r.rows, [{ n: MINUTES * PER_MINUTE }]);
    } finally {
      await c.end();
    }
    // Its first report goes out at start: the DMS lists it, healthy, with the upstream it reaches.
    await until(async () => (await nodesOf(ctx.dms)).get('hd-sql-direct')?.health?.status === 'ok', "hd_sql's health report");
    const h = (await nodesOf(ctx.dms)).get('hd-sql-direct')?.health;
    assert.match(JSON.stringify(h?.detail), /mutual TLS/);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
    t.remove();
  }
});

m('a plain gRPC client is refused in the handshake (UNAVAILABLE), never reaching the service', async (ctx) => {
  const r = await probe(ctx.grpcAddress);
  assert.is(r.status, 'UNAVAILABLE', r.details);
});

m('a certificate of another CA is refused in the handshake', async (ctx) => {
  const other = await startTestDms();
  try {
    const foreign = await enrol(other, 'proxy-x', 'proxy');
    // The client trusts our CA (only the SCC's refusal can stop it) but presents the other CA's certificate.
    const r = await probe(ctx.grpcAddress, dispatchCredentials({ ...foreign.material, caPem: ctx.dms.server.caCertPem, crlPem: undefined }, 'scc-test'));
    assert.is(r.status, 'UNAVAILABLE', r.details);
  } finally {
    await other.close();
  }
});

m('a certificate of a role that may not query gets PERMISSION_DENIED; a client certificate is served', async (ctx) => {
  const sn = await enrol(ctx.dms, 'sn-impostor', 'storageNode');
  const denied = await probe(ctx.grpcAddress, dispatchCredentials(sn.material, 'scc-test'));
  assert.is(denied.status, 'PERMISSION_DENIED', denied.details);
  assert.match(denied.details, /is storageNode 'sn-impostor'; only proxy, sqlServer, client certificates may query this SCC .*add 'storageNode' to QUERY_GRPC_ROLES/);
  const client = await enrol(ctx.dms, 'client-ok', 'client');
  const served = await probe(ctx.grpcAddress, dispatchCredentials(client.material, 'scc-test'));
  assert.is(served.status, 'NOT_FOUND', served.details);
  // The caller checks the SCC's certificate names the node it meant.
  const wrongName = await probe(ctx.grpcAddress, dispatchCredentials(client.material, 'scc-other'));
  assert.is(wrongName.status, 'UNAVAILABLE', wrongName.details);
});

m('a revoked certificate is refused on the next connection once the SCC has the new revocation list', async (ctx) => {
  const id = await enrol(ctx.dms, 'client-revoked', 'client');
  assert.is((await probe(ctx.grpcAddress, dispatchCredentials(id.material, 'scc-test'))).status, 'NOT_FOUND');
  const rv = await ctx.dms.call('POST', '/v1/certificates/revoke', ctx.dms.admin, { serial: id.certificate.serial });
  assert.is(rv.status, 200, JSON.stringify(rv.body));
  // The SCC fetches the list every PLATFORM_CRL_REFRESH_MS and hands it to its live listener.
  await until(async () => (await probe(ctx.grpcAddress, dispatchCredentials(id.material, 'scc-test'))).status === 'UNAVAILABLE', 'the revoked certificate refused');
});

m('an SDK client in direct SCC mode queries with its client certificate (dispatchTls); without one it is refused', async (ctx) => {
  const target = { host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort };
  const id = await enrol(ctx.dms, 'sdk-direct', 'client');
  {
    // With resultTls the client's result listener is mutual TLS too: the Storage Nodes stream with
    // their node certificates (return_address.tls), and a plain sender is refused.
    const listenPort = await freePort();
    const material = { ca: id.material.caPem, cert: id.material.certPem, key: id.material.keyPem };
    await using q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort, log: () => undefined, dispatchTls: material, resultTls: true });
    q.loadDatasetSchema(schemaJson);
    q.setSccTargets([target]);
    const table = await q.executeDataset({ start_time: T0, end_time: T0 + MINUTES * 60 - 1 });
    assert.is(table.numRows, MINUTES * PER_MINUTE);
    assert.not.ok(q.hadErrors(), JSON.stringify(q.getBatchErrors()));
    assert.is.not(await trySending(listenPort), 'hello', 'a plain TCP sender gets no hello from a mutual-TLS listener');
    // A certificate of our CA of a role that does not send results is refused before hello.
    const intruder = await enrol(ctx.dms, 'client-sender', 'client');
    const wrongRole = await trySending(listenPort, clientTlsOptions(intruder));
    assert.is.not(wrongRole, 'hello');
    // A renewed certificate in dispatchTls (hd_sql's fields are live views): the next query's
    // listener presents it, and the query is answered.
    const servedSerial = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const s = tls.connect({ ...clientTlsOptions(intruder), host: '127.0.0.1', port: listenPort }, () => {
          resolve(s.getPeerCertificate().serialNumber.toLowerCase().replace(/^0+(?=.)/, ''));
          s.destroy();
        });
        s.on('error', reject);
      });
    assert.is(await servedSerial(), id.certificate.serial);
    await new CertificateRenewer({ identity: id, dmsUrl: ctx.dms.url, crlRefreshMs: 0 }).renewNow();
    material.cert = id.material.certPem;
    const again = await q.executeDataset({ start_time: T0, end_time: T0 + MINUTES * 60 - 1 });
    assert.is(again.numRows, MINUTES * PER_MINUTE);
    assert.is(await servedSerial(), id.certificate.serial, 'the listener presents the renewed certificate');
  }
  await using plain = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  plain.loadDatasetSchema(schemaJson);
  plain.setSccTargets([target]);
  const refused = await plain.executeDataset({ start_time: T0, end_time: T0 + 59 }).then(
    () => 'answered',
    (err: unknown) => String(err),
  );
  assert.match(refused, /UNAVAILABLE/);
});

m('registered nodes report their health; the DMS shows it and marks a silent node down', async (ctx) => {
  const { dms, cluster } = ctx;
  const names = ['scc-test', ...cluster.sns.map((s) => s.name), 'proxy-m'];
  await until(async () => {
    const nodes = await nodesOf(dms);
    return names.every((n) => nodes.get(n)?.state === 'ready');
  }, 'every node reported ok');
  const nodes = await nodesOf(dms);
  for (const n of names) assert.is(nodes.get(n)?.health?.status, 'ok', n);
  // The detail is the node's own /health document: the SCC's replicas, the Storage Node's identity.
  assert.ok(JSON.stringify(nodes.get('scc-test')?.health?.detail).includes('replicas'), JSON.stringify(nodes.get('scc-test')?.health?.detail));
  const snDetail = nodes.get(cluster.sns[0].name)?.health?.detail ?? {};
  assert.ok('devices' in snDetail && 'batches' in snDetail, JSON.stringify(snDetail));
  assert.is(nodes.get('proxy-m')?.health?.detail?.policy_version, 1);

  // A stopped Storage Node stops reporting: down after three missed periods; its SCC reports degraded.
  const sn2 = cluster.sns[1];
  await sn2.proc.stop();
  await until(async () => (await nodesOf(dms)).get(sn2.name)?.state === 'down', `${sn2.name} marked down`);
  const down = (await nodesOf(dms)).get(sn2.name);
  assert.is(down?.health?.status, 'down');
  assert.match(String(down?.health?.detail?.reason), /^no health report since .* \(3 reports of every 300 ms missed\)$/);
  await until(async () => (await nodesOf(dms)).get('scc-test')?.state === 'degraded', 'the SCC reports degraded');

  // Back: its first report makes it ready again, and the SCC follows.
  await cluster.restartSn(1);
  await until(async () => (await nodesOf(dms)).get(sn2.name)?.state === 'ready', `${sn2.name} ready again`);
  await until(async () => (await nodesOf(dms)).get('scc-test')?.state === 'ready', 'the SCC ready again');
});

m.run();

// ---------------------------------------------------------------------------------------------

const r = suite('gRPC QueryDispatch: a renewed certificate is served without a restart (in this process)');

/** In this process: a DMS, an SCC identity `name` registered with it, and its QueryDispatch service under mutual TLS (client certificates only), listening on loopback. */
async function registeredQueryService(name: string, addresses?: NodeAddresses): Promise<{ dms: TestDms; node: NodeIdentity; address: string; close(): Promise<void> }> {
  const dms = await startTestDms();
  const dir = tempDir(`hd-grpc-${name}-`);
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role: 'scc' })).body as { token: string }).token;
  const node = await NodeIdentity.start({ nodeName: name, role: 'scc', dmsUrl: dms.url, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, stateDir: dir.dir, keyBits: KEY_BITS, ...(addresses && { addresses }), log: () => undefined });
  const dispatcher = new QueryDispatcher({ nodeName: name, targets: [], recordSize: 64, health: () => undefined, maxQueries: 4, maxQueryMs: 0, onEvent: () => undefined });
  const service = new QueryService(dispatcher, { node, roles: ['client'] });
  const address = `127.0.0.1:${await service.listen('127.0.0.1', 0)}`;
  return {
    dms,
    node,
    address,
    close: async () => {
      await service.close();
      dispatcher.close();
      await node.stop();
      await dms.close();
      dir.remove();
    },
  };
}

r('the listener hands the renewed certificate to the next connection; open channels keep working', async () => {
  const { dms, node, address, close } = await registeredQueryService('scc-r', { grpc: { host: '127.0.0.1', port: 1 } });
  try {
    const client = await enrol(dms, 'client-r', 'client');
    /** The serial of the certificate the SCC presented on a fresh connection. */
    const servedSerial = async (): Promise<string> => {
      let seen = '';
      const creds = grpc.credentials.createFromSecureContext(tls.createSecureContext({ key: client.material.keyPem, cert: client.material.certPem, ca: client.material.caPem }), {
        checkServerIdentity: (_h, cert) => {
          seen = cert.serialNumber.toLowerCase().replace(/^0+(?=.)/, '');
          return tls.checkServerIdentity('scc-r', cert);
        },
      });
      const a = await probe(address, creds);
      assert.is(a.status, 'NOT_FOUND', a.details);
      return seen;
    };
    const before = node.identity.certificate.serial;
    assert.is(await servedSerial(), before);
    const open = new QueryDispatchClient(address, { credentials: dispatchCredentials(client.material, 'scc-r') });
    assert.is(await open.cancelQuery(1, TOKEN).then(() => 'OK', (e: unknown) => (e instanceof DispatchError ? e.status : String(e))), 'NOT_FOUND');
    await node.renewNow();
    const after = node.identity.certificate.serial;
    assert.is.not(after, before);
    assert.is(await servedSerial(), after);
    assert.is(await open.cancelQuery(1, TOKEN).then(() => 'OK', (e: unknown) => (e instanceof DispatchError ? e.status : String(e))), 'NOT_FOUND');
    open.close();
  } finally {
    await close();
  }
});

r('an expired certificate of our CA is refused in the handshake; the same key with a valid one is served', async () => {
  const { dms, address, close } = await registeredQueryService('scc-e');
  try {
    const ca = await CertificateAuthority.open({ dir: path.join(dms.dir, 'ca') });
    const kp = await generateRsaKey(KEY_BITS);
    // Ours, but its validity ended an hour ago.
    const expired = ca.issue({ commonName: 'client-e', role: 'client', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000 }, Date.now() - 2 * 3_600_000);
    const valid = ca.issue({ commonName: 'client-e', role: 'client', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000 });
    const with_ = (certPem: string) => dispatchCredentials({ keyPem: kp.privateKeyPem, certPem, caPem: dms.server.caCertPem }, 'scc-e');
    assert.is((await probe(address, with_(expired.certPem))).status, 'UNAVAILABLE');
    assert.is((await probe(address, with_(valid.certPem))).status, 'NOT_FOUND');
  } finally {
    await close();
  }
});

r("the Proxy's dispatcher presents its renewed certificate on new channels, plain SCCs stay plain", async () => {
  const dms = await startTestDms();
  const dir = tempDir('hd-grpc-proxy-renew-');
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'scc-p', role: 'scc' })).body as { token: string }).token;
  const node = await NodeIdentity.start({ nodeName: 'scc-p', role: 'scc', dmsUrl: dms.url, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, stateDir: dir.dir, keyBits: KEY_BITS, addresses: { grpc: { host: '127.0.0.1', port: 1 } }, log: () => undefined });
  const dispatcher = new QueryDispatcher({ nodeName: 'scc-p', targets: [], recordSize: 64, health: () => undefined, maxQueries: 4, maxQueryMs: 0, onEvent: () => undefined });
  const service = new QueryService(dispatcher, { node, roles: ['proxy'] });
  const plainDispatcher = new QueryDispatcher({ nodeName: 'scc-plain', targets: [], recordSize: 64, health: () => undefined, maxQueries: 4, maxQueryMs: 0, onEvent: () => undefined });
  const plain = new QueryService(plainDispatcher);
  const proxyId = await enrol(dms, 'proxy-r', 'proxy');
  const sccs = new GrpcSccDispatcher({ deadlineMs: 5000, identity: proxyId });
  try {
    const port = await service.listen('127.0.0.1', 0);
    const plainPort = await plain.listen('127.0.0.1', 0);
    const secure = { name: 'scc-p', host: '127.0.0.1', port: 1, grpc_port: port, mtls: true };
    /** What the SCC answered: a malformed query is INVALID_ARGUMENT (400 invalid_query) once the call got through. */
    const send = (t: typeof secure | { name: string; host: string; port: number; grpc_port: number }): Promise<string> =>
      sccs.dispatch([t], '{}').then(
        () => 'dispatched',
        (err: unknown) => (err instanceof HttpError ? err.code : String(err)),
      );
    assert.is(await send(secure), 'invalid_query');
    assert.is(await send({ name: 'scc-plain', host: '127.0.0.1', port: 1, grpc_port: plainPort }), 'invalid_query', 'an SCC without mtls is called plain');
    const first = proxyId.certificate.serial;
    // The Proxy renews (here: a second registration's certificate and key handed to its identity).
    const again = await enrol(dms, 'proxy-r', 'proxy');
    proxyId.update({ keyPem: again.material.keyPem, certPem: again.material.certPem });
    assert.is.not(proxyId.certificate.serial, first);
    assert.is(await send(secure), 'invalid_query');
    const seen = (node.health().peers as { serial: string; port: string }[]).filter((p) => p.port === 'grpc').map((p) => p.serial);
    assert.ok(seen.includes(first) && seen.includes(proxyId.certificate.serial), JSON.stringify(seen));
  } finally {
    sccs.close();
    await service.close();
    await plain.close();
    dispatcher.close();
    plainDispatcher.close();
    await node.stop();
    await dms.close();
    dir.remove();
  }
});

r.run();

// ---------------------------------------------------------------------------------------------

const s = suite('query_roles: checked when the pipeline loads');

s('an unknown role is refused with the setting, its place and the roles it may name', async () => {
  const dir = tempDir('hd-grpc-roles-');
  try {
    const file = path.join(dir.dir, 'scc.yaml');
    writeFileSync(file, 'pipeline: t\nservices:\n  queries:\n    type: queryDispatch\n    uses: [scc]\n    query_grpc_port: 0\n    query_roles: proxy,bogus\n  scc: { type: sccNode, sn_targets: sn1:127.0.0.1:1:2 }\n');
    const bad = startHd(['run', file, '--quiet']);
    assert.is(await bad.exited, 1);
    assert.match(bad.output(), /scc\.yaml:7:18: setting 'query_roles' expects a comma-separated list of certificate roles among scc, storageNode, proxy, client, ingester, sqlServer, ingress, admin, got "proxy,bogus"/);
  } finally {
    dir.remove();
  }
});

s.run();
