/**
 * The SDK in Proxy mode: a real HD Proxy process (`hd run pipelines/proxy.yaml`) registered with a
 * DMS, in front of a real SCC and two Storage Node processes. The ingest client finds the SCCs with
 * discoverSccTargets; the query client sends its queries to the Proxy, which applies the policy and
 * dispatches; results stream to the client's listener as in direct mode. Error paths run against a
 * second Proxy (in this process) with a stand-in SCC, and a plain HTTP server for malformed answers.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type * as arrow from 'apache-arrow';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateRsaKey } from '../../net/pki/x509';
import { queryDispatchService, type DispatchReply } from '../../query/dispatch/dispatchService';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient, ProxyError } from '../../sdk/platformQueryClient';
import { parseResultEvent, parseTopology } from '../../sdk/proxyClient';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, type HdProcess } from '../support/hdProcess';
import { INGRESS, startProxyProcess, startTestProxy, type TestProxy } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const BATCHES = 3;
const PER_BATCH = 400;
const POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\nhidden_fields contains "src_ip" if input.role == "guest"\n';
const WINDOW = { start_time: T0, end_time: T0 + BATCHES * 60 - 1 };
const FILTER = { sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] };

/** Rows as comparable text, without the columns named in `skip`. */
function rows(t: arrow.Table, skip: string[] = []): string[] {
  return t
    .toArray()
    .map((r: { toJSON(): Record<string, unknown> }) => JSON.stringify(Object.entries(r.toJSON()).flatMap(([k, v]) => (skip.includes(k) ? [] : [[k, String(v)]]))))
    .sort();
}

/** A gRPC QueryDispatch server that keeps queries and cancels; `hold` delays the dispatch answer. */
class RecordingScc {
  readonly queries: { query_id: number; token: string }[] = [];
  readonly cancels: { queryId: number; token: string }[] = [];
  hold: Promise<void> | undefined;
  private readonly server = new grpc.Server();
  port = 0;
  async start(): Promise<this> {
    this.server.addService(queryDispatchService, {
      dispatch: (call: grpc.ServerUnaryCall<{ queryJson: string }, DispatchReply>, cb: grpc.sendUnaryData<DispatchReply>) => {
        const q = JSON.parse(call.request.queryJson) as { query_id: number; token: string; batch_ids: string[] };
        this.queries.push(q);
        void (this.hold ?? Promise.resolve()).then(() => cb(null, { queryId: q.query_id, batches: q.batch_ids.length, nodes: ['sn-x'], missingBatchIds: [] }));
      },
      cancelQuery: (call: grpc.ServerUnaryCall<{ queryId: number; token: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.cancels.push({ queryId: call.request.queryId, token: call.request.token });
        cb(null, { cancelled: true, nodes: 1 });
      },
    });
    this.port = await new Promise<number>((resolve, reject) => this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    return this;
  }
  stop(): Promise<void> {
    return new Promise((r) => this.server.tryShutdown(() => r()));
  }
}

/** A plain HTTP server answering every request with `answer` (for malformed Proxy answers). */
async function stubProxy(): Promise<{ url: string; answer: { status: number; body: string }; close(): Promise<void> }> {
  const state = { status: 200, body: '' };
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(state.status, { 'content-type': 'application/json' }).end(state.body));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}`, answer: state, close: () => new Promise((r) => srv.close(() => r())) };
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 20));
}

// ---------------------------------------------------------------------------------------------

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  proxy: HdProcess;
  proxyUrl: string;
  remove(): void;
}

const pm = suite<Ctx>('SDK Proxy mode: real Proxy process, DMS, SCC and Storage Nodes');
pm.before(async (ctx) => {
  ctx.dms = await startTestDms();
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [schemaJson] });
  const t = tempDir();
  ctx.remove = t.remove;
  const p = await startProxyProcess(ctx.dms, ctx.cluster, schemaJson, t.dir, 'proxy-sdk');
  ctx.proxy = p.proc;
  ctx.proxyUrl = p.url;
  const { dms } = ctx;
  const v1 = await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY });
  assert.equal(v1.body, { version: 1, proxies: [{ proxy: 'proxy-sdk', result: 'installed' }] });
});
pm.after(async (ctx) => {
  await ctx.proxy?.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

const proxyClient = (ctx: Ctx, role: string): PlatformQueryClient => {
  const q = new PlatformQueryClient(ctx.proxyUrl, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
  q.loadDatasetSchema(schemaJson);
  q.addControlHeader('X-Forwarded-Role', role);
  q.addControlHeader('X-Forwarded-Email', `${role}@example.com`);
  // The Proxy takes identity headers only from an ingress: the test client stands in for one.
  for (const [k, v] of Object.entries(INGRESS)) q.addControlHeader(k, v);
  return q;
};

pm('the ingest client finds the SCCs with discoverSccTargets and ingests; Proxy-mode rows equal direct-mode rows', async (ctx) => {
  {
    // The control-plane interface is the local address of the topology request.
    await using ingest = new PlatformIngestClient('', '127.0.0.1', { proxyUrl: ctx.proxyUrl, controlTls: { ca: ctx.dms.server.caCertPem } });
    ingest.loadDatasetSchema(schemaJson);
    assert.ok(await ingest.discoverSccTargets(), String(ingest.lastError));
    assert.equal(ingest.sccTargets, [{ host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort }]);
    for (let b = 0; b < BATCHES; b++) {
      const id = ingest.generateBatchIdTime(T0 + b * 60, T0 + b * 60 + 60);
      const recs = Array.from({ length: PER_BATCH }, (_, i) =>
        ingest.convertRecordToBinary({ ts: String(T0 + b * 60 + (i % 60)), src_ip: `10.0.${b}.${i % 250}`, dst_ip: '10.9.0.2', src_port: String(1000 + i), dst_port: String([443, 80][i % 2]), proto: 'tcp', packets: '1', bytes: String(i * 3 + b), duration_ms: '5' }),
      );
      assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
      assert.ok(await ingest.sendEob(id), String(ingest.lastError));
    }
  }
  await using direct = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  direct.loadDatasetSchema(schemaJson);
  direct.setSccTargets([{ host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort }]);
  const want = await direct.executeDataset({ ...WINDOW, ...FILTER });
  assert.is(want.numRows, (BATCHES * PER_BATCH) / 2);

  await using q = proxyClient(ctx, 'admin');
  const got = await q.executeDataset({ ...WINDOW, ...FILTER });
  assert.equal(rows(got), rows(want));
  assert.not.ok(q.hadErrors(), JSON.stringify(q.getBatchErrors()));
  // The Proxy named the window's batches (one per interval to the rounded end): all accounted for.
  assert.is(q.getFoundBatchIds().length + q.getMissingBatchIds().length >= BATCHES, true);
  assert.is(q.getFoundBatchIds().length, BATCHES);
  assert.equal(q.getVerdictMismatches(), []);
  // executeStream and executeToSql go through the Proxy too.
  let streamed = 0;
  await q.executeStream({ ...WINDOW, ...FILTER }, (b) => {
    streamed += b.numRows;
  });
  assert.is(streamed, want.numRows);
  const n = await q.executeToSql({ ...WINDOW }, 'SELECT count(*) AS n FROM flows WHERE dst_port = 80');
  assert.is(Number(n.toArray()[0].n), want.numRows);
});

pm('a field the policy hides comes back zeroed; every other column is as in direct mode', async (ctx) => {
  await using admin = proxyClient(ctx, 'admin');
  await using guest = proxyClient(ctx, 'guest');
  const a = await admin.executeDataset({ ...WINDOW, ...FILTER });
  const g = await guest.executeDataset({ ...WINDOW, ...FILTER });
  assert.is(g.numRows, a.numRows);
  assert.equal(rows(g, ['src_ip']), rows(a, ['src_ip']));
  const hidden = new Set(g.toArray().map((r: Record<string, unknown>) => String(r.src_ip)));
  assert.equal([...hidden], ['0.0.0.0']);
  assert.ok(new Set(a.toArray().map((r: Record<string, unknown>) => String(r.src_ip))).size > 1);
});

pm('submitQueryToProxy places a generated query and records the verdict and the batches it names', async (ctx) => {
  await using q = proxyClient(ctx, 'admin');
  q.prepareQuery(4242);
  const wire = JSON.parse(await q.generateHdQuery({ ...WINDOW })) as Record<string, unknown>;
  delete wire.targets;
  const ev = await q.submitQueryToProxy(wire);
  assert.is(ev.query_id, 4242);
  assert.is(ev.batch_ids.length, (wire.batch_ids as string[]).length);
  assert.is(q.getMissingBatchIds().length, ev.batch_ids.length, 'expected batches come from the answer');
});

pm('Proxy errors reject with the code and what to do: unknown dataset 404 names it; no identity 401', async (ctx) => {
  await using q = proxyClient(ctx, 'admin');
  const err = await q.executeDataset({ ...WINDOW, dataset: 'no_such_set' }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(err, ProxyError);
  assert.is((err as ProxyError).status, 404);
  assert.is((err as ProxyError).code, 'unknown_dataset');
  assert.match((err as Error).message, /no_such_set/);
  assert.match((err as Error).message, /query a dataset the DMS distributes/);

  await using anon = new PlatformQueryClient(ctx.proxyUrl, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
  anon.loadDatasetSchema(schemaJson);
  const e401 = await anon.executeDataset({ ...WINDOW }).catch((e: unknown) => e);
  assert.is((e401 as ProxyError).status, 401);
  assert.match((e401 as Error).message, /X-Forwarded-Role/);
  assert.match((e401 as Error).message, /addControlHeader/);
  // The client is free for the next query after a refusal.
  anon.addControlHeader('X-Forwarded-Role', 'admin');
  anon.addControlHeader('X-Forwarded-Email', 'a@example.com');
  for (const [k, v] of Object.entries(INGRESS)) anon.addControlHeader(k, v);
  assert.is((await anon.executeDataset({ ...WINDOW, ...FILTER })).numRows, (BATCHES * PER_BATCH) / 2);
});

pm('a registered client reaches the Proxy with its DMS certificate and CA; an unreachable Proxy is false with lastError', async (ctx) => {
  const token = ((await ctx.dms.call('POST', '/v1/bootstrap-tokens', ctx.dms.admin, { node_name: 'sdk-ingest' })).body as { token: string }).token;
  const saved = { ca: process.env.PLATFORM_CA_CERT_PEM, tok: process.env.PLATFORM_BOOTSTRAP_TOKEN };
  process.env.PLATFORM_CA_CERT_PEM = ctx.dms.server.caCertPem;
  process.env.PLATFORM_BOOTSTRAP_TOKEN = token;
  await using ingest = new PlatformIngestClient();
  try {
    assert.ok(await ingest.registerWithDms(ctx.dms.url, 'sdk-ingest', (await generateRsaKey(2048)).privateKeyPem), String(ingest.lastError));
  } finally {
    process.env.PLATFORM_CA_CERT_PEM = saved.ca;
    process.env.PLATFORM_BOOTSTRAP_TOKEN = saved.tok;
    if (saved.ca === undefined) delete process.env.PLATFORM_CA_CERT_PEM;
    if (saved.tok === undefined) delete process.env.PLATFORM_BOOTSTRAP_TOKEN;
  }
  ingest.setSccTargets([]);
  assert.ok(await ingest.discoverSccTargets(ctx.proxyUrl), String(ingest.lastError));
  assert.is(ingest.sccTargets.length, 1);

  const dead = `https://127.0.0.1:${await freePort()}`;
  assert.is(await ingest.discoverSccTargets(dead), false);
  assert.match(String(ingest.lastError), /could not be reached.*ECONNREFUSED/);
  assert.is(ingest.sccTargets.length, 0, 'no targets after a failed discovery: every send fails');
  assert.is(await ingest.sendEob(ingest.generateBatchIdNumber(1)), false);
  // Without a CA bundle the Proxy's DMS-CA certificate is not trusted: a clear failure, not a hang.
  await using bare = new PlatformIngestClient();
  assert.is(await bare.discoverSccTargets(ctx.proxyUrl), false);
  assert.match(String(bare.lastError), /could not be reached.*certificate/);
  assert.is(await bare.discoverSccTargets(), false);
  assert.match(String(bare.lastError), /no Proxy URL/);
});

// ---------------------------------------------------------------------------------------------

interface Ctx2 {
  dms: TestDms;
  px: TestProxy;
  scc: RecordingScc;
}

const edge = suite<Ctx2>('SDK Proxy mode: empty topology, Proxy refusals, timeout and cancel (Proxy in this process, stand-in SCC)');
edge.before(async (ctx) => {
  ctx.dms = await startTestDms();
  ctx.scc = await new RecordingScc().start();
  await ctx.dms.call('PUT', '/v1/clusters/c1', ctx.dms.admin, { primary: true });
  await ctx.dms.call('PUT', '/v1/datasets/flows', ctx.dms.admin, { schema: JSON.parse(schemaJson) });
  ctx.px = await startTestProxy(ctx.dms, 'proxy-edge');
});
edge.after(async (ctx) => {
  await ctx.px?.close();
  await ctx.scc?.stop();
  await ctx.dms?.close();
});

const edgeClient = (ctx: Ctx2): PlatformQueryClient => {
  const q = new PlatformQueryClient(ctx.px.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
  q.loadDatasetSchema(schemaJson);
  q.addControlHeader('X-Forwarded-Role', 'admin');
  q.addControlHeader('X-Forwarded-Email', 'a@example.com');
  for (const [k, v] of Object.entries(INGRESS)) q.addControlHeader(k, v);
  return q;
};

edge('a topology that names no SCC: discoverSccTargets false; no policy 503, then no SCC 502, each saying what to do', async (ctx) => {
  await using ingest = new PlatformIngestClient('', '', { controlTls: { ca: ctx.dms.server.caCertPem } });
  assert.is(await ingest.discoverSccTargets(ctx.px.url), false);
  assert.match(String(ingest.lastError), /names no SCC of the primary cluster \(c1\)/);
  await using q = edgeClient(ctx);
  assert.is(await q.discoverSccTargets(), false);
  const e503 = (await q.executeDataset({ ...WINDOW }).catch((e: unknown) => e)) as ProxyError;
  assert.is(e503.status, 503);
  assert.match(e503.message, /not_ready: no policy is installed yet.*retry later/);
  await ctx.dms.call('PUT', '/v1/policy', ctx.dms.admin, { rego: POLICY });
  const e502 = (await q.executeDataset({ ...WINDOW }).catch((e: unknown) => e)) as ProxyError;
  assert.is(e502.status, 502);
  assert.match(e502.message, /upstream_unavailable.*check that the SCCs run/);
});

edge('timeout and cancel release the caller with an empty table and cancel at the SCC the Proxy dispatched to', async (ctx) => {
  await ctx.dms.call('PUT', '/v1/nodes/scc-r', ctx.dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: ctx.scc.port } } });
  await ctx.px.proxy.refresh();
  await using q = edgeClient(ctx);
  // The cancel goes through the Proxy (POST /v1/query/cancel), which relays it to the SCC that took
  // the query: the client never needs the SCCs' addresses (nor a certificate for their gRPC port).
  q.setQueryTimeoutMs(200);
  const t = await q.executeDataset({ ...WINDOW });
  assert.is(t.numRows, 0);
  await until(() => ctx.scc.cancels.length === 1);
  assert.equal(q.sccTargets, []);
  assert.is(ctx.scc.cancels[0]?.queryId, ctx.scc.queries[0]?.query_id);
  assert.is(ctx.scc.cancels[0]?.token, ctx.scc.queries[0]?.token);

  q.setQueryTimeoutMs(0);
  const running = q.executeDataset({ ...WINDOW });
  await until(() => ctx.scc.queries.length === 2);
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(q.cancelQuery());
  assert.is((await running).numRows, 0);
  await until(() => ctx.scc.cancels.length === 2);
  assert.is(ctx.scc.cancels[1]?.queryId, ctx.scc.queries[1]?.query_id);

  // A cancel while the Proxy is still dispatching releases the caller at once; the SCC is told once it has the query.
  let letGo!: () => void;
  ctx.scc.hold = new Promise((r) => (letGo = r));
  const slow = q.executeDataset({ ...WINDOW });
  await until(() => ctx.scc.queries.length === 3);
  assert.ok(q.cancelQuery());
  assert.is((await slow).numRows, 0);
  assert.is(ctx.scc.cancels.length, 2);
  letGo();
  ctx.scc.hold = undefined;
  await until(() => ctx.scc.cancels.length === 3);
  assert.is(ctx.scc.cancels[2]?.queryId, ctx.scc.queries[2]?.query_id);
});

edge('a Proxy that verifies JWTs takes the bearer token from a control header; a bad token is 401 saying what to give', async (ctx) => {
  const issuer = await generateRsaKey(2048);
  const px = await startTestProxy(ctx.dms, 'proxy-jwt', { jwt: { issuer: 'https://idp.example', publicKeyPem: issuer.publicKeyPem, audience: 'hd', roleClaim: 'role', emailClaim: 'email' } });
  try {
    const sign = (claims: Record<string, unknown>, exp: string): Promise<string> =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).setIssuer('https://idp.example').setAudience('hd').setIssuedAt().setExpirationTime(exp).sign(createPrivateKey(issuer.privateKeyPem));
    const client = (token: string): PlatformQueryClient => {
      const q = new PlatformQueryClient(px.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
      q.loadDatasetSchema(schemaJson);
      q.addControlHeader('Authorization', `Bearer ${token}`);
      return q;
    };
    await using ok = client(await sign({ role: 'guest', email: 'j@example.com' }, '5m'));
    ok.setQueryTimeoutMs(100);
    const before = ctx.scc.queries.length;
    assert.is((await ok.executeDataset({ ...WINDOW })).numRows, 0);
    // The query reached the SCC through the JWT Proxy (perhaps after the short timeout released the caller).
    await until(() => ctx.scc.queries.length === before + 1);
    await using expired = client(await sign({ role: 'guest', email: 'j@example.com' }, '-1m'));
    const e = (await expired.executeDataset({ ...WINDOW }).catch((x: unknown) => x)) as ProxyError;
    assert.is(e.status, 401);
    assert.match(e.message, /the bearer token was refused: it has expired.*Authorization/);
  } finally {
    await px.close();
  }
});

edge('malformed Proxy answers: discoverSccTargets false naming the fault; a query answer that is no result event rejects', async () => {
  const stub = await stubProxy();
  try {
    await using ingest = new PlatformIngestClient('', '', { proxyUrl: stub.url });
    const cases: [number, string, RegExp][] = [
      [200, 'not json', /topology is not JSON/],
      [200, '[1,2]', /not a JSON object/],
      [200, '{"scc_targets":"scc-a"}', /no scc_targets list/],
      [200, '{"scc_targets":[{"host":"a","port":70000}]}', /scc_targets\[0\] is not \{host, port\}/],
      [200, '{"scc_targets":[{"host":"a","port":1,"grpc_port":"x"}]}', /grpc_port is not a port/],
      [500, '{"error":"internal","message":"boom"}', /HTTP 500 internal: boom/],
      [502, '<html>bad gateway</html>', /HTTP 502 http_502: <html>bad gateway/],
    ];
    for (const [status, body, re] of cases) {
      stub.answer.status = status;
      stub.answer.body = body;
      assert.is(await ingest.discoverSccTargets(), false, body);
      assert.match(String(ingest.lastError), re);
    }
    stub.answer.status = 200;
    stub.answer.body = '{"scc_targets":[{"name":"s","host":"127.0.0.9","port":7001,"grpc_port":7002}]}';
    assert.ok(await ingest.discoverSccTargets());
    assert.equal(ingest.sccTargets, [{ host: '127.0.0.9', port: 7001, grpcPort: 7002 }]);

    await using q = new PlatformQueryClient(stub.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined });
    q.loadDatasetSchema(schemaJson);
    stub.answer.body = '{"query_id":1}';
    const e = (await q.executeDataset({ ...WINDOW }).catch((x: unknown) => x)) as ProxyError;
    assert.instance(e, ProxyError);
    assert.is(e.code, 'bad_answer');
    assert.match(e.message, /no valid 'dataset'/);
  } finally {
    await stub.close();
  }
});

edge('the answer parsers refuse what is not a topology or a result event', () => {
  const id = 'ab'.repeat(64);
  const ok = { query_id: 1, dataset: 'flows', batch_ids: [id], would_exclude_batches: [], bloomrf_mode: 'off', dispatch: { scc: 's', missing_batch_ids: [] } };
  assert.equal(parseResultEvent(JSON.stringify(ok)).batch_ids, [id]);
  assert.equal(parseResultEvent(JSON.stringify({ ...ok, dispatch: { scc: 's' } })).dispatch.missing_batch_ids, []);
  for (const [bad, re] of [
    ['{', /not JSON/],
    ['null', /not a JSON object/],
    [JSON.stringify({ ...ok, query_id: 'x' }), /'query_id'/],
    [JSON.stringify({ ...ok, batch_ids: ['xyz'] }), /'batch_ids'/],
    [JSON.stringify({ ...ok, would_exclude_batches: null }), /'would_exclude_batches'/],
    [JSON.stringify({ ...ok, bloomrf_mode: 3 }), /'bloomrf_mode'/],
    [JSON.stringify({ ...ok, dispatch: null }), /'dispatch'/],
    [JSON.stringify({ ...ok, dispatch: { scc: 's', missing_batch_ids: [1] } }), /'dispatch.missing_batch_ids'/],
  ] as [string, RegExp][]) {
    assert.throws(() => parseResultEvent(bad), re, bad);
  }
  assert.equal(parseTopology('{"primary_cluster":"c1","scc_targets":[]}'), { primaryCluster: 'c1', targets: [], names: [] });
  assert.throws(() => parseTopology('{"scc_targets":[null]}'), /scc_targets\[0\]/);
  assert.throws(() => new PlatformQueryClient('ftp://x', '', '', { listenPort: 0 }), /must be https/);
  assert.throws(() => new PlatformQueryClient('not a url', '', '', { listenPort: 0 }), /is not a URL/);
});

pm.run();
edge.run();
