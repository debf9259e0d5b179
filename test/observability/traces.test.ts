/**
 * Traces across a query's whole path (issue #21, docs/observability.md "Traces"): an SCC and two
 * Storage Nodes (`hd run`) and an hd_sql process in direct SCC mode, all started with OTEL_GRPC_URL
 * pointing at a real OTLP/gRPC receiver (test/support/otlpReceiver.ts). One SQL statement yields one
 * trace holding spans of every process on its path, each parented as the query travelled: hd_sql's
 * statement, plan, fetch and evaluation; the SDK's query, dispatch and result transfer; the SCC's
 * dispatch, query, placement and legs; each Storage Node's scan. A second hd_sql without
 * OTEL_GRPC_URL (the SDK's own OTEL_EXPORTER_OTLP_* variables aimed at a counting listener) answers
 * the same statement and opens no connection at all.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTracing } from '../../lib/tracing/tracingSetup';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpReceiver';
import { flowsFixture, flowsSchemaJson, ingestFlows } from '../sql/flowsFixture';
import { sqlProcessEnv } from '../sql/sqlProcessEnv';

const FIXTURE = flowsFixture(4, 300);
const STATEMENT = `SELECT count(*) AS n FROM flows WHERE ${FIXTURE.window} AND dst_port = 443`;
const EXPECTED = FIXTURE.all.filter((f) => f.dst_port === 443).length;
/** Spans are sent every 100 ms instead of every 5 s (OpenTelemetry's own setting). */
const FAST_EXPORT = { OTEL_BSP_SCHEDULE_DELAY: '100' };

const ctx = {} as { receiver: OtlpReceiver; cluster: Cluster; dir: string; sql: HdProcess; pgPort: number };

async function startSql(env: Record<string, string>): Promise<{ proc: HdProcess; pgPort: number }> {
  const [pgPort, returnPort] = [await freePort(), await freePort()];
  const proc = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv(
      { pgPort, returnPort },
      { HD_SQL_SCC_TARGETS: `${ctx.cluster.host}:${ctx.cluster.scc.productionPort}:${ctx.cluster.scc.queryGrpcPort}`, HD_SQL_SCHEMA_DIR: path.join(ctx.dir, 'schemas'), HD_SQL_DEFAULT_LOOKBACK_SEC: '7200', HD_SQL_AGGREGATE_PUSHDOWN: 'false', ...env },
    ),
  );
  await waitForPort('127.0.0.1', pgPort, proc, 60_000);
  return { proc, pgPort };
}

async function ask(pgPort: number, text: string): Promise<unknown[][]> {
  const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'hd', database: 'hd' });
  await c.connect();
  try {
    return (await c.query({ text, rowMode: 'array' })).rows as unknown[][];
  } finally {
    await c.end();
  }
}

/** Waits (at most 30 s) until `ok` holds of the spans received. */
async function spansUntil(ok: (spans: readonly ReceivedSpan[]) => boolean): Promise<readonly ReceivedSpan[]> {
  const end = Date.now() + 30_000;
  while (!ok(ctx.receiver.spans) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return ctx.receiver.spans;
}

const traces = suite('traces: one SQL statement through hd_sql, the SCC and two Storage Nodes');
traces.before(async () => {
  ctx.receiver = await startOtlpReceiver();
  ctx.dir = mkdtempSync(path.join(os.tmpdir(), 'hd-traces-'));
  mkdirSync(path.join(ctx.dir, 'schemas'));
  writeFileSync(path.join(ctx.dir, 'schemas', 'flows.json'), flowsSchemaJson);
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [flowsSchemaJson], env: { OTEL_GRPC_URL: ctx.receiver.url, ...FAST_EXPORT } });
  await ingestFlows(ctx.cluster, FIXTURE);
  const sql = await startSql({ OTEL_GRPC_URL: ctx.receiver.url.replace('http://', 'grpc://'), ...FAST_EXPORT });
  ctx.sql = sql.proc;
  ctx.pgPort = sql.pgPort;
});
traces.after(async () => {
  await ctx.sql?.stop();
  await ctx.cluster?.stop();
  await ctx.receiver?.close();
  if (ctx.dir) rmSync(ctx.dir, { recursive: true, force: true });
});

traces('one trace holds spans of every process on the path, correctly parented', async () => {
  assert.equal(await ask(ctx.pgPort, STATEMENT), [[String(EXPECTED)]]);
  const root = (await spansUntil((ss) => ss.some((s) => s.name === 'sql.statement' && s.attributes['db.query.text'] === STATEMENT))).find((s) => s.name === 'sql.statement' && s.attributes['db.query.text'] === STATEMENT) as ReceivedSpan;
  assert.ok(root, 'the statement span arrived');
  // The Storage Nodes' scans end last (after their results reached hd_sql): wait for both.
  const all = await spansUntil(
    (ss) =>
      new Set(ss.filter((s) => s.traceId === root.traceId && s.name === 'storageNode.scan').map((s) => s.resource['service.instance.id'])).size >= 2 &&
      ss.some((s) => s.traceId === root.traceId && s.name === 'scc.query') &&
      ss.filter((s) => s.traceId === root.traceId && s.name === 'hd.results.stream').length >= 2,
  );
  const trace = all.filter((s) => s.traceId === root.traceId);
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const named = (name: string): ReceivedSpan[] => trace.filter((s) => s.name === name);
  const one = (name: string): ReceivedSpan => {
    const xs = named(name);
    assert.is(xs.length, 1, `one ${name} span (got ${xs.length}: ${trace.map((s) => s.name).join(', ')})`);
    return xs[0] as ReceivedSpan;
  };
  const parentOf = (s: ReceivedSpan): ReceivedSpan | undefined => byId.get(s.parentSpanId);
  // One root: every other span's parent is in this trace.
  assert.is(root.parentSpanId, '');
  for (const s of trace) if (s !== root) assert.ok(byId.has(s.parentSpanId), `${s.name}'s parent ${s.parentSpanId} is in the trace`);
  // hd_sql: the statement, its plan, fetch and local evaluation.
  for (const n of ['sql.plan', 'sql.fetch', 'sql.evaluate']) assert.is(parentOf(one(n)), root, `${n} is a child of sql.statement`);
  // The SDK inside hd_sql: query under the fetch, dispatch and result transfer under the query.
  const query = one('hd.query');
  assert.is(parentOf(query), one('sql.fetch'));
  assert.is(parentOf(one('hd.dispatch')), query);
  const results = one('hd.results');
  assert.is(parentOf(results), query);
  assert.is(results.attributes['hd.batches'], FIXTURE.batches);
  // The SCC: Dispatch under the SDK's gRPC call (metadata), then the query, its placement and one leg a node.
  const dispatch = one('scc.dispatch');
  assert.is(parentOf(dispatch), one('hd.dispatch'));
  const sccQuery = one('scc.query');
  assert.is(parentOf(sccQuery), dispatch);
  assert.is(parentOf(one('scc.placement')), sccQuery);
  const legs = named('scc.leg');
  assert.is(legs.length, 2, 'a leg on each Storage Node');
  for (const leg of legs) assert.is(parentOf(leg), sccQuery);
  // Each Storage Node's scan, under its leg (HDQuery trace_context), with what it read.
  const scans = named('storageNode.scan');
  assert.is(scans.length, 2);
  assert.equal(new Set(scans.map((s) => parentOf(s)?.spanId)), new Set(legs.map((l) => l.spanId)));
  let matched = 0;
  for (const s of scans) {
    matched += s.attributes['hd.records_matched'] as number;
    assert.ok((s.attributes['hd.bytes_read'] as number) > 0, 'bytes read');
    assert.type(s.attributes['hd.blocks_skipped'], 'number');
    assert.type(s.attributes['hd.batches_from_summary'], 'number');
  }
  assert.is(matched, EXPECTED);
  // Each node's result stream (HDWP trace_context after its hello): hd_sql's transfer span, under that node's scan.
  const streams = named('hd.results.stream');
  assert.is(streams.length, 2, 'one transfer span a node');
  assert.equal(new Set(streams.map((s) => parentOf(s)?.spanId)), new Set(scans.map((s) => s.spanId)));
  for (const st of streams) assert.ok((st.attributes['hd.frames'] as number) >= 1, 'frames counted');
  // Every process on the path exported its own spans.
  const services = (names: readonly string[]): Set<unknown> => new Set(trace.filter((s) => names.includes(s.name)).map((s) => `${String(s.resource['service.name'])} ${String(s.resource['service.instance.id'])}`));
  assert.is(services(['sql.statement', 'sql.plan', 'sql.fetch', 'sql.evaluate', 'hd.query', 'hd.dispatch', 'hd.results', 'hd.results.stream']).size, 1);
  assert.equal([...new Set(trace.map((s) => s.resource['service.name']))].sort(), ['hd-scc', 'hd-sql', 'hd-storage-node']);
  assert.is(services(['storageNode.scan']).size, 2, 'both Storage Nodes');
  assert.is(new Set(trace.map((s) => s.resource['service.instance.id'])).size, 4, 'hd_sql, the SCC and two Storage Nodes');
});

traces('the aggregate path: its final DuckDB statement is an sql.evaluate span beside the aggregate fetch', async () => {
  // A second traced hd_sql with aggregate pushdown on: the count is computed on the Storage Nodes
  // and only the outer statement over the merged partials runs in DuckDB.
  const sql = await startSql({ OTEL_GRPC_URL: ctx.receiver.url, HD_SQL_AGGREGATE_PUSHDOWN: 'true', ...FAST_EXPORT });
  try {
    assert.equal(await ask(sql.pgPort, STATEMENT), [[String(EXPECTED)]]);
    // This process's spans: its resource's service.instance.id is `<host>:<pid>` (lib/tracing/tracingSetup.ts).
    const instance = `${os.hostname()}:${String(sql.proc.proc.pid)}`;
    const mine = (s: ReceivedSpan): boolean => s.resource['service.instance.id'] === instance;
    const all = await spansUntil((ss) => ss.some((s) => mine(s) && s.name === 'sql.statement'));
    const root = all.find((s) => mine(s) && s.name === 'sql.statement' && s.attributes['db.query.text'] === STATEMENT) as ReceivedSpan;
    assert.ok(root, 'the statement span arrived');
    const trace = all.filter((s) => s.traceId === root.traceId && mine(s));
    const one = (name: string): ReceivedSpan => {
      const xs = trace.filter((s) => s.name === name);
      assert.is(xs.length, 1, `one ${name} span (got ${xs.length}: ${trace.map((s) => s.name).join(', ')})`);
      return xs[0] as ReceivedSpan;
    };
    const fetch = one('sql.fetch');
    const evaluate = one('sql.evaluate');
    for (const s of [one('sql.plan'), fetch, evaluate]) assert.is(s.parentSpanId, root.spanId, `${s.name} is a child of sql.statement`);
    assert.is(fetch.attributes['hd.aggregate'], true, 'the aggregate was pushed down');
    assert.equal({ dataset: evaluate.attributes['hd.dataset'], aggregate: evaluate.attributes['hd.aggregate'], rows: evaluate.attributes['hd.rows'] }, { dataset: 'flows', aggregate: true, rows: 1 });
    assert.type(evaluate.attributes['hd.partials'], 'number');
    assert.is(evaluate.attributes['hd.fallback'], undefined, 'no fallback to the record path');
    // Ordered after the fetch. The SDK takes a span's start from Date.now() (whole milliseconds)
    // and its end from that plus the elapsed time: two spans' instants compare to within 1 ms.
    assert.ok(evaluate.startTimeUnixNano + 1_000_000n >= fetch.endTimeUnixNano, 'the outer statement runs after the partials arrived');
  } finally {
    await sql.proc.stop();
  }
});

traces('with OTEL_GRPC_URL unset, hd_sql registers no tracer provider and connects nowhere', async () => {
  const inProcess = startTracing({ service: 'hd-test', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' } });
  assert.is(inProcess.enabled, false);
  // A listener where OpenTelemetry's own variables point: any exporter created would connect here.
  let connections = 0;
  const trap = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
  const trapUrl = `http://127.0.0.1:${(trap.address() as net.AddressInfo).port}`;
  const sql = await startSql({ OTEL_EXPORTER_OTLP_ENDPOINT: trapUrl, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: trapUrl, ...FAST_EXPORT });
  try {
    const before = ctx.receiver.spans.filter((s) => s.name === 'sql.statement').length;
    assert.equal(await ask(sql.pgPort, STATEMENT), [[String(EXPECTED)]]);
    // The SCC (traced) received no trace context: its dispatch span is a root of a trace of its own.
    const roots = await spansUntil((ss) => ss.filter((s) => s.name === 'scc.dispatch' && s.parentSpanId === '').length >= 1);
    assert.ok(roots.some((s) => s.name === 'scc.dispatch' && s.parentSpanId === ''));
    assert.is(ctx.receiver.spans.filter((s) => s.name === 'sql.statement').length, before, 'no hd_sql span from the untraced process');
  } finally {
    await sql.proc.stop();
  }
  await new Promise<void>((r) => trap.close(() => r()));
  assert.is(connections, 0, 'no connection to where OTEL_EXPORTER_OTLP_ENDPOINT points');
});

traces.run();
