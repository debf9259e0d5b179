/**
 * Batch filters end to end: a real SCC and two real Storage Node processes take three batches from
 * PlatformIngestClient; each node's `GET /v1/batch-filters` (mutual TLS, to the Proxy's role only:
 * the nodes are registered with the test DMS) answers the min/max of every integer field per batch,
 * equal to what was ingested; a real Proxy (in this process) registered with the same DMS, which
 * lists the nodes with their observability addresses, computes the filter verdict of
 * `POST /v1/query` from them: exactly the batches no branch can match, `bloomrf_mode: minmax`.
 * Nodes that are down, hang or answer garbage never cause a wrong exclusion.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import { MAX_FILTER_IDS, type BatchFilterJson } from '../../nodes/storageNode/batchFilters';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { startCluster, type Cluster } from '../support/cluster';
import { StandInScc, startTestProxy, type TestProxy } from './proxySupport';
import { startTestDms, tempDir, type TestDms } from './support';
import { requestJson, type ClientTls } from '../../net/jsonClient';
import type { NodeRole } from '../../control/dms/state';
import { enrol } from '../security/proxyIdentitySupport';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 300;
const PORTS = [[80], [443, 8443], [22]];
const TOKEN = '0123456789abcdef0123456789abcdef';
const POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\n';

/** Record `i` of batch `b`: bytes in [b*1000, b*1000+299], ports per batch, ts in the batch's minute. */
function rec(b: number, i: number): Record<string, number> {
  const ports = PORTS[b] as number[];
  return { ts: T0 + b * 60 + (i % 60), src_port: 1000 + b * 7 + (i % 13), dst_port: ports[i % ports.length] as number, packets: 1 + (i % 5), bytes: b * 1000 + i, duration_ms: 5 + b };
}

/** The ranges of batch `b` by layout, as a Storage Node should answer them (flows.schema.json). */
function expected(b: number): Map<string, [string, string]> {
  const rs = Array.from({ length: PER_BATCH }, (_, i) => rec(b, i));
  const range = (k: string): [string, string] => [String(Math.min(...rs.map((r) => r[k] as number))), String(Math.max(...rs.map((r) => r[k] as number)))];
  return new Map([
    ['0:8:signed', range('ts')],
    ['16:2:unsigned', range('src_port')],
    ['18:2:unsigned', range('dst_port')],
    ['20:1:unsigned', ['6', '6']],
    ['24:8:unsigned', range('packets')],
    ['32:8:unsigned', range('bytes')],
    ['40:4:unsigned', range('duration_ms')],
  ]);
}

/** An HTTPS server with a DMS-CA certificate of node `name` answering every request as `answer` says (`hang`: never). */
async function stubNode(dms: TestDms, name: string): Promise<{ port: number; answer: { status: number; body: string; hang: boolean }; close(): Promise<void> }> {
  const answer = { status: 200, body: '', hang: false };
  const m = (await enrol(dms, name, 'storageNode')).material;
  const srv = https.createServer({ key: m.keyPem, cert: m.certPem, ca: m.caPem, requestCert: true }, (req, res) => {
    req.resume();
    if (!answer.hang) res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as { port: number }).port,
    answer,
    close: () =>
      new Promise((r) => {
        srv.close(() => r());
        srv.closeAllConnections();
      }),
  };
}

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  scc: StandInScc;
  px: TestProxy;
  ids: string[];
  /** A `proxy` certificate: the only role the nodes serve batch filters to. */
  proxyTls: ClientTls;
  remove(): void;
}

const t = suite<Ctx>('batch filters: Storage Node route and the Proxy verdict over real processes');
t.before(async (ctx) => {
  // The nodes register with the DMS: batch filters are served over mutual TLS only.
  ctx.dms = await startTestDms();
  const dir = tempDir('hd-bf-verdict-');
  ctx.remove = dir.remove;
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, ctx.dms.server.caCertPem);
  await ctx.dms.call('PUT', '/v1/clusters/c1', ctx.dms.admin, { primary: true });
  const tokenFor = async (name: string, role: NodeRole): Promise<string> => ((await ctx.dms.call('POST', '/v1/bootstrap-tokens', ctx.dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [schemaJson], dms: { url: ctx.dms.url, caFile, token: tokenFor, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } } });
  const { cluster } = ctx;
  const p = await enrol(ctx.dms, 'proxy-bf', 'proxy');
  ctx.proxyTls = { ca: p.material.caPem, cert: p.material.certPem, key: p.material.keyPem };
  ctx.ids = [];
  {
    await using ingest = new PlatformIngestClient();
    ingest.loadDatasetSchema(schemaJson);
    ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
    for (let b = 0; b < PORTS.length; b++) {
      const id: BatchID = ingest.generateBatchIdTime(T0 + b * 60, T0 + b * 60 + 60);
      ctx.ids.push(id.toHex());
      const recs = Array.from({ length: PER_BATCH }, (_, i) => {
        const r = rec(b, i);
        return ingest.convertRecordToBinary({ ...Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)])), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', proto: 'tcp' });
      });
      assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
      assert.ok(await ingest.sendEob(id), String(ingest.lastError));
    }
  }
  // Both replicas hold every batch before the tests look.
  for (const sn of cluster.sns) {
    for (;;) {
      const r = (await (await fetch(`http://${cluster.host}:${sn.observabilityPort}/v1/batches?dataset=flows`)).json()) as { batches: unknown[] };
      if (r.batches.length === PORTS.length) break;
      await new Promise((res) => setTimeout(res, 50));
    }
  }
  ctx.scc = await new StandInScc().start();
  const { dms } = ctx;
  await dms.call('PUT', '/v1/nodes/scc-a', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: ctx.scc.port } } });
  for (const sn of cluster.sns) {
    const r = await dms.call('PUT', `/v1/nodes/${sn.name}`, dms.admin, { role: 'storageNode', cluster: 'c1', addresses: { observability: { host: cluster.host, port: sn.observabilityPort } } });
    assert.is(r.status < 300, true, JSON.stringify(r.body));
  }
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: JSON.parse(schemaJson) })).status, 200);
  await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY });
  ctx.px = await startTestProxy(dms, 'proxy-verdict', { batchFilterTimeoutMs: 2000 });
});
t.after(async (ctx) => {
  await ctx.px?.close();
  await ctx.scc?.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

/** `GET /v1/batch-filters?qs` of node `name` at `port`, with the Proxy's certificate. */
const filtersOf = async (ctx: Ctx, port: number, qs: string, name: string): Promise<{ status: number; body: { dataset?: string; filters?: Record<string, BatchFilterJson>; error?: string } }> => {
  const r = await requestJson('GET', `https://127.0.0.1:${port}/v1/batch-filters?${qs}`, { ...ctx.proxyTls, servername: name });
  return { status: r.status, body: r.body as { filters?: Record<string, BatchFilterJson>; error?: string } };
};

t('each Storage Node answers per batch the min/max of what was ingested; batches it does not hold are absent', async (ctx) => {
  const other = 'ab'.repeat(64);
  for (const sn of ctx.cluster.sns) {
    const r = await filtersOf(ctx, sn.observabilityPort, `dataset=flows&batch_ids=${[...ctx.ids, other].join(',')}`, sn.name);
    assert.is(r.status, 200);
    assert.is(r.body.dataset, 'flows');
    assert.equal(Object.keys(r.body.filters ?? {}).sort(), [...ctx.ids].sort());
    ctx.ids.forEach((id, b) => {
      const f = r.body.filters?.[id] as BatchFilterJson;
      assert.is(f.records, PER_BATCH);
      const got = new Map(f.fields.map((x) => [`${x.offset}:${x.size}:${x.kind}`, [x.min, x.max]]));
      assert.equal(got, expected(b), `batch ${b} on ${sn.name}`);
      assert.ok(f.fields.every((x) => x.big_endian === false && x.empty === false));
    });
    // Upper-case ids name the same batches; another dataset holds none of them.
    assert.equal(Object.keys((await filtersOf(ctx, sn.observabilityPort, `dataset=flows&batch_ids=${ctx.ids[0]?.toUpperCase()}`, sn.name)).body.filters ?? {}), [ctx.ids[0]]);
    assert.equal((await filtersOf(ctx, sn.observabilityPort, `dataset=other&batch_ids=${ctx.ids[0]}`, sn.name)).body, { dataset: 'other', filters: {} });
  }
});

t('malformed requests are refused with 400 saying what to send', async (ctx) => {
  const port = ctx.cluster.sns[0]?.observabilityPort as number;
  const name = ctx.cluster.sns[0]?.name as string;
  const id = ctx.ids[0] as string;
  const cases: [string, RegExp][] = [
    ['', /dataset is missing/],
    [`batch_ids=${id}`, /dataset is missing/],
    ['dataset=flows', /batch_ids is missing: send 1 to 64/],
    ['dataset=flows&batch_ids=', /batch_ids is missing/],
    ['dataset=flows&batch_ids=xyz', /batch_ids\[0\] 'xyz' is not a batch id: 128 hex digits/],
    [`dataset=flows&batch_ids=${id},${id.slice(2)}`, /batch_ids\[1\] .* is not a batch id/],
    [`dataset=flows&batch_ids=${id},`, /batch_ids\[1\] '' is not a batch id/],
    [`dataset=flows&batch_ids=${Array(MAX_FILTER_IDS + 1).fill(id).join(',')}`, /65 batch ids in one call; at most 64: split the list/],
    [`dataset=flows&dataset=x&batch_ids=${id}`, /'dataset' is given more than once/],
    [`dataset=flows&batch_ids=${id}&limit=3`, /unknown parameter 'limit'/],
  ];
  for (const [qs, re] of cases) {
    const r = await filtersOf(ctx, port, qs, name);
    assert.is(r.status, 400, qs.slice(0, 60));
    assert.match(String(r.body.error), re);
  }
  // Exactly the limit is taken (duplicates are answered once).
  const full = await filtersOf(ctx, port, `dataset=flows&batch_ids=${Array(MAX_FILTER_IDS).fill(id).join(',')}`, name);
  assert.is(full.status, 200);
  assert.equal(Object.keys(full.body.filters ?? {}), [id]);
  const post = await fetch(`http://127.0.0.1:${port}/v1/batch-filters`, { method: 'POST', body: '{}' });
  assert.is(post.status, 405);
});

const query = (ctx: Ctx, filters: unknown[][], ids = ctx.ids): Promise<{ status: number; body: unknown }> =>
  ctx.px.query({
    query_id: 11,
    dataset: 'flows',
    batch_ids: ids,
    return_address: { host: '127.0.0.1', port: 6989 },
    token: TOKEN,
    ...(filters.length > 0 && { sub_queries: filters.map((f) => ({ filters: f })) }),
  });

interface Ev {
  would_exclude_batches: string[];
  bloomrf_mode: string;
}

/** The verdicts of the filter cases, each as the batch numbers excluded. */
async function verdicts(ctx: Ctx): Promise<{ mode: string[]; excluded: number[][] }> {
  const cases: unknown[][][] = [
    [[{ field: 'bytes', op: 'ge', value: '1000' }]],
    [[{ field: 'dst_port', op: 'eq', value: '22' }]],
    [[{ field: 'dst_port', op: 'eq', value: '80' }], [{ field: 'bytes', op: 'between', values: ['2000', '2100'] }]],
    [[{ field: 'ts', op: 'lt', value: String(T0 + 60) }]],
    [[{ field: 'dst_port', op: 'in', values: ['443', '22'] }, { field: 'packets', op: 'gt', value: '5' }]],
    [[{ field: 'proto', op: 'eq', value: 'udp' }]],
    [[{ field: 'src_ip', op: 'eq', value: '10.9.9.9' }]],
    [],
  ];
  const mode: string[] = [];
  const excluded: number[][] = [];
  for (const c of cases) {
    const r = await query(ctx, c);
    assert.is(r.status, 200, JSON.stringify(r.body));
    const ev = r.body as Ev;
    mode.push(ev.bloomrf_mode);
    excluded.push(ev.would_exclude_batches.map((id) => ctx.ids.indexOf(id)));
  }
  return { mode, excluded };
}

// bytes ≥ 1000 → batch 0; port 22 → 0, 1; port 80 or bytes 2000..2100 → 1; ts before the second
// minute → 1, 2; packets > 5 is in no batch → all; enum and ipv4 fields are never used → none.
const WANT = [[0], [0, 1], [1], [1, 2], [0, 1, 2], [], [], []];

t('the Proxy excludes exactly the batches whose ranges no branch can match (bloomrf_mode minmax)', async (ctx) => {
  const v = await verdicts(ctx);
  assert.equal(v.excluded, WANT);
  assert.equal(v.mode, Array(WANT.length).fill('minmax'));
  // A window names the batches the nodes hold there (GET /v1/batch-ranges), not every interval of
  // it, so every named batch has a filter (minmax) and the verdict covers exactly those.
  const w = await ctx.px.query({ query_id: 12, dataset: 'flows', start: T0, end: T0 + 3 * 60 - 1, return_address: { host: '127.0.0.1', port: 6989 }, token: TOKEN, sub_queries: [{ filters: [{ field: 'bytes', op: 'ge', value: '1000' }] }] });
  const ev = w.body as Ev & { batch_ids: string[]; window: { resolved_by: string; nodes_answered: number } };
  assert.is(ev.bloomrf_mode, 'minmax');
  assert.equal(ev.batch_ids, ctx.ids);
  assert.is(ev.window.resolved_by, 'batch_index');
  assert.is(ev.window.nodes_answered, 2);
  assert.equal(ev.would_exclude_batches, [ctx.ids[0]]);
  assert.ok(ctx.scc.queries.length > 0, 'the queries were dispatched');
});

t('nodes that hang, answer garbage or are down never cause a wrong exclusion; answers once read are kept', async (ctx) => {
  const { dms, cluster } = ctx;
  const stubs = [await stubNode(dms, 'sn-stub0'), await stubNode(dms, 'sn-stub1')];
  try {
    stubs[0]!.answer.hang = true;
    // Garbage that would exclude everything if it were believed: a malformed entry discards the whole answer.
    stubs[1]!.answer.body = JSON.stringify({ dataset: 'flows', filters: Object.fromEntries(ctx.ids.map((id) => [id, { records: 1, fields: [{ offset: 32, size: 8, kind: 'unsigned', big_endian: false, min: '9', max: 'x' }] }])) });
    for (const [i, s] of stubs.entries()) {
      await dms.call('PUT', `/v1/nodes/sn-stub${i}`, dms.admin, { role: 'storageNode', cluster: 'c1', addresses: { observability: { host: '127.0.0.1', port: s.port } } });
    }
    await ctx.px.proxy.refresh();
    // The hanging node holds the query up to the deadline only; the others' answers count.
    const hung = (await query(ctx, [[{ field: 'bytes', op: 'ge', value: '1000' }]])).body as Ev;
    assert.equal(hung.would_exclude_batches, [ctx.ids[0]]);
    assert.is(hung.bloomrf_mode, 'minmax');
    stubs[0]!.answer.hang = false;
    stubs[0]!.answer.status = 500;
    stubs[0]!.answer.body = '{"error":"boom"}';
    const v = await verdicts(ctx);
    assert.equal(v.excluded, WANT);
    assert.equal(v.mode, Array(WANT.length).fill('minmax'));

    // One real node down: its replica answers for every batch.
    await cluster.sns[0]?.proc.stop();
    const one = await verdicts(ctx);
    assert.equal(one.excluded, WANT);

    // Both down: what they answered before still holds (a durable batch's ranges never change, so
    // the Proxy keeps them), and no stub's garbage ever entered it.
    await cluster.sns[1]?.proc.stop();
    const kept = await verdicts(ctx);
    assert.equal(kept.excluded, WANT);
    assert.equal(kept.mode, Array(WANT.length).fill('minmax'));
  } finally {
    for (const s of stubs) await s.close();
  }
});

t.run();
