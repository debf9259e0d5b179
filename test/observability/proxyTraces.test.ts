/**
 * Traces with the Proxy on the path, and the SCC's ingest spans (issue #21, docs/observability.md
 * "Traces"): a DMS (in this process), a real Proxy process, an SCC and two Storage Nodes, and hd_sql
 * in Proxy mode, all exporting to a real OTLP/gRPC receiver (test/support/otlpReceiver.ts). A SQL
 * statement as role `guest` (one hidden field) yields one trace where the Proxy's spans sit between
 * hd_sql's fetch (the SDK's `traceparent` header) and the SCC's dispatch (gRPC metadata); the
 * batches ingested first each yield an `scc.batch` span with its hash, per-replica close and
 * durable-ack parts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { registerWithDms } from '../../net/registerWithDms';
import { ingestMinutes } from '../support/ingestMinutes';
import { startCluster, type Cluster } from '../support/cluster';
import type { HdProcess } from '../support/hdProcess';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpReceiver';
import { startProxyProcess } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { query, startProxySql } from '../sql/proxyCluster';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const WINDOW = `ts >= ${T0} AND ts < ${T0 + 180}`;
const POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\nhidden_fields contains "src_ip" if input.role == "guest"\n';
const RECORDS_A_BATCH = 100;
const TRACED = { OTEL_BSP_SCHEDULE_DELAY: '100' };

interface Ctx {
  receiver: OtlpReceiver;
  dms: TestDms;
  cluster: Cluster;
  proxy: HdProcess;
  proxyUrl: string;
  files: { ca: string; cert: string; key: string };
  batchIds: string[];
  remove(): void;
}

/** Waits (at most 30 s) until `ok` holds of the spans received. */
async function spansUntil(receiver: OtlpReceiver, ok: (spans: readonly ReceivedSpan[]) => boolean): Promise<readonly ReceivedSpan[]> {
  const end = Date.now() + 30_000;
  while (!ok(receiver.spans) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return receiver.spans;
}

const pt = suite<Ctx>('traces: hd_sql in Proxy mode through a real Proxy; ingest spans at the SCC');
pt.before(async (ctx) => {
  ctx.receiver = await startOtlpReceiver();
  const otel = { OTEL_GRPC_URL: ctx.receiver.url, ...TRACED };
  ctx.dms = await startTestDms();
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [schemaJson], env: otel });
  const t = tempDir();
  ctx.remove = t.remove;
  const proxy = await startProxyProcess(ctx.dms, ctx.cluster, schemaJson, t.dir, 'proxy-traces', otel);
  ctx.proxy = proxy.proc;
  ctx.proxyUrl = proxy.url;
  const token = ((await ctx.dms.call('POST', '/v1/bootstrap-tokens', ctx.dms.admin, { node_name: 'hd-sql', role: 'sqlServer' })).body as { token: string }).token;
  const reg = await registerWithDms({ dmsUrl: ctx.dms.url, nodeName: 'hd-sql', role: 'sqlServer', caCertPem: ctx.dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  ctx.files = { ca: proxy.caFile, cert: path.join(t.dir, 'sql.crt'), key: path.join(t.dir, 'sql.key') };
  writeFileSync(ctx.files.cert, reg.signed_cert_pem);
  writeFileSync(ctx.files.key, reg.client_key_pem, { mode: 0o600 });
  assert.is((await ctx.dms.call('PUT', '/v1/policy', ctx.dms.admin, { rego: POLICY })).status, 200);
  ctx.batchIds = await ingestMinutes(ctx.cluster, schemaJson, T0, 3, (b) =>
    Array.from({ length: RECORDS_A_BATCH }, (_, i) => ({ ts: String(T0 + b * 60 + (i % 60)), src_ip: `10.0.${b}.${i}`, dst_ip: '10.9.9.9', src_port: '1000', dst_port: i % 2 === 0 ? '443' : '53', proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' })),
  );
});
pt.after(async (ctx) => {
  await ctx.proxy?.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  await ctx.receiver?.close();
  ctx.remove?.();
});

pt('one trace: sql.fetch → hd.query → hd.dispatch → proxy.query (policy, rewrite, dispatch) → scc.dispatch → scc.query', async (ctx) => {
  const { sql, pgPort } = await startProxySql(ctx, 'guest', { OTEL_GRPC_URL: ctx.receiver.url, HD_SQL_AGGREGATE_PUSHDOWN: 'false', ...TRACED });
  try {
    assert.equal(await query(pgPort, `SELECT count(*)::INTEGER AS n FROM flows WHERE ${WINDOW} AND dst_port = 443`), [{ n: 150 }]);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
  const got = await spansUntil(ctx.receiver, (ss) => ss.some((s) => s.name === 'proxy.dispatch') && ss.some((s) => s.name === 'scc.query' && ss.some((p) => p.name === 'sql.fetch' && p.traceId === s.traceId)));
  const fetch = got.find((s) => s.name === 'sql.fetch');
  assert.ok(fetch, `a sql.fetch span (got ${[...new Set(got.map((s) => s.name))].join(', ')})`);
  const trace = got.filter((s) => s.traceId === fetch.traceId);
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const one = (name: string): ReceivedSpan => {
    const xs = trace.filter((s) => s.name === name);
    assert.is(xs.length, 1, `one ${name} span (got ${trace.map((s) => s.name).join(', ')})`);
    return xs[0] as ReceivedSpan;
  };
  const parentOf = (s: ReceivedSpan): ReceivedSpan | undefined => byId.get(s.parentSpanId);
  const hdQuery = one('hd.query');
  assert.is(parentOf(hdQuery), fetch);
  const hdDispatch = one('hd.dispatch');
  assert.is(parentOf(hdDispatch), hdQuery);
  // The Proxy's spans, under the SDK's dispatch (the traceparent header).
  const proxyQuery = one('proxy.query');
  assert.is(parentOf(proxyQuery), hdDispatch);
  assert.is(proxyQuery.resource['service.name'], 'hd-proxy');
  assert.is(proxyQuery.attributes['hd.batches'], 3);
  const policy = one('proxy.policy');
  assert.is(parentOf(policy), proxyQuery);
  assert.is(policy.attributes['hd.decision'], 'allow');
  assert.is(policy.attributes['hd.role'], 'guest');
  const rewrite = one('proxy.rewrite');
  assert.is(parentOf(rewrite), proxyQuery);
  assert.is(rewrite.attributes['hd.hidden_fields'], 1, 'src_ip is hidden from a guest');
  const proxyDispatch = one('proxy.dispatch');
  assert.is(parentOf(proxyDispatch), proxyQuery);
  // The SCC's spans, under the Proxy's dispatch (gRPC metadata), down to the Storage Nodes' scans.
  const sccDispatch = one('scc.dispatch');
  assert.is(parentOf(sccDispatch), proxyDispatch);
  assert.is(parentOf(one('scc.query')), sccDispatch);
  assert.is(proxyDispatch.attributes['hd.scc'], 'scc-proxy-traces');
  assert.equal([...new Set(trace.map((s) => s.resource['service.name']))].filter((n) => n !== 'hd-storage-node').sort(), ['hd-proxy', 'hd-scc', 'hd-sql']);
});

pt('each ingested batch has its scc.batch span: dataset, batch id, records, bytes; hash, per-replica close, durable ack', async (ctx) => {
  const got = await spansUntil(ctx.receiver, (ss) => ctx.batchIds.every((id) => ss.some((s) => s.name === 'scc.batch' && s.attributes['hd.batch_id'] === id)));
  for (const id of ctx.batchIds) {
    const batch = got.find((s) => s.name === 'scc.batch' && s.attributes['hd.batch_id'] === id);
    assert.ok(batch, `the span of batch ${id}`);
    assert.is(batch.resource['service.name'], 'hd-scc');
    assert.is(batch.attributes['hd.dataset'], 'flows');
    assert.is(batch.attributes['hd.records'], RECORDS_A_BATCH);
    assert.is(batch.attributes['hd.bytes'], RECORDS_A_BATCH * 64);
    assert.equal(batch.events.map((e) => e.name), ['hash', 'durable_ack']);
    assert.match(String(batch.events[0]?.attributes['hd.closing_hash']), /^[0-9a-f]{64,128}$/);
    assert.is(batch.events[1]?.attributes['hd.ok'], true);
    const replicas = got.filter((s) => s.name === 'scc.replicate' && s.parentSpanId === batch.spanId);
    assert.equal(replicas.map((s) => s.attributes['hd.replica']).sort(), ctx.cluster.sns.map((sn) => sn.name).sort(), 'one close a replica');
    for (const r of replicas) assert.is(r.attributes['hd.result'], 'ok');
  }
});

pt.run();
