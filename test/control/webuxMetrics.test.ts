/**
 * The WebUX's metrics graphs, below the browser (docs/webux.md, "Metrics"): the Prometheus text
 * reader (malformed lines skipped and named), the bounded history (rates from counters, restarts,
 * gauges, disk and replica states from /health), and the scraper against stand-in nodes serving
 * /metrics and /health — one that counts up, one answering 500, one serving garbage, one whose
 * port is closed — through GET /v1/metrics/history.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MetricsHistory } from '../../control/dms/webux/metricsHistory';
import { parsePromText, sumOf } from '../../control/dms/webux/promText';
import { freePort } from '../support/hdProcess';
import { startWebuxDms, type WebSession, type WebuxDms } from './webuxSupport';

const SN_TEXT = (ingested: number, eob: number, bad: number): string => `# HELP hd_records_ingested_total records ingested
# TYPE hd_records_ingested_total counter
hd_records_ingested_total ${ingested}
# TYPE hd_sn_query_batches_total counter
hd_sn_query_batches_total{outcome="eob"} ${eob}
hd_sn_query_batches_total{outcome="13"} ${bad}
hd_batches_discarded_total{reason="bbn"} 0
process_cpu_seconds_total 1.5e-1 1700000000000
`;

const p = suite('Prometheus text: samples, labels, special values; malformed lines are skipped and named');

p('reads names, labels (escapes included), values and timestamps; comments are skipped', () => {
  const r = parsePromText(`${SN_TEXT(10, 3, 1)}weird{a="x\\"y",b="line\\nnext",} NaN\nup +Inf\n`);
  assert.equal(r.problems, []);
  assert.is(sumOf(r.samples, 'hd_records_ingested_total'), 10);
  assert.is(sumOf(r.samples, 'hd_sn_query_batches_total'), 4);
  assert.is(sumOf(r.samples, 'hd_sn_query_batches_total', (l) => l.outcome !== 'eob'), 1);
  assert.is(sumOf(r.samples, 'process_cpu_seconds_total'), 0.15);
  const w = r.samples.find((s) => s.name === 'weird');
  assert.equal(w?.labels, { a: 'x"y', b: 'line\nnext' });
  assert.ok(Number.isNaN(w?.value));
  assert.is(sumOf(r.samples, 'weird'), 0, 'NaN is left out of sums');
  assert.is(r.samples.find((s) => s.name === 'up')?.value, Infinity);
});

p('malformed lines: each skipped with its line number and why; the good lines still count', () => {
  const text = ['hd_records_ingested_total 5', '{a="1"} 3', 'm{a=1} 2', 'm{a="1" 2', 'm{a="1"} two', 'm 1 2 3', 'm', 'm{a="unterminated} 1', 'm 1 notatime', 'hd_records_ingested_total 7'].join('\n');
  const r = parsePromText(text);
  assert.is(sumOf(r.samples, 'hd_records_ingested_total'), 12);
  assert.is(r.problems.length, 6, JSON.stringify(r.problems));
  assert.match(r.problems[0] ?? '', /^line 2: it does not start with a metric name/);
  assert.match(r.problems[1] ?? '', /^line 3: label 'a' has no ="value"/);
  assert.match(r.problems[2] ?? '', /^line 4: ',' or '}' was expected after label 'a'/);
  assert.match(r.problems[3] ?? '', /^line 5: 'two' is not a number/);
  assert.match(r.problems[5] ?? '', /^3 more lines skipped/);
  assert.equal(parsePromText('').samples, []);
  assert.equal(parsePromText('\u0000\u0001garbage\n<html>').samples, []);
});

p.run();

const h = suite('metrics history: rates between scrapes, restarts, gauges from /health, a bounded length');

h('counters become rates per second; a counter that went down counts from zero; the first scrape has no rate', () => {
  const m = new MetricsHistory(3);
  m.record('sn1', 'storageNode', { at: 10_000, metrics: SN_TEXT(100, 0, 0) });
  m.record('sn1', 'storageNode', { at: 12_000, metrics: SN_TEXT(300, 10, 2), health: { devices: { list: [{ use: 'write', free_bytes: 1000 }, { use: 'write', free_bytes: 24 }, { use: 'cache', free_bytes: 5 }] } } });
  m.record('sn1', 'storageNode', { at: 13_000, metrics: SN_TEXT(50, 10, 2) });
  const [sn1] = m.view();
  assert.is(sn1?.points.length, 3);
  assert.equal(sn1?.points[0]?.v, {}, 'no rate from one scrape');
  assert.equal(sn1?.points[1]?.v, { ingest_records_per_s: 100, query_batches_per_s: 6, errors_per_s: 1, disk_free_bytes: 1024 });
  assert.is(sn1?.points[2]?.v.ingest_records_per_s, 50, 'restarted: 50 since the restart, in 1 s');
  m.record('sn1', 'storageNode', { at: 14_000, metrics: SN_TEXT(60, 10, 2) });
  assert.is(m.view()[0]?.points.length, 3, 'bounded: the oldest point went');
  assert.is(m.view()[0]?.points[0]?.t, 12_000);
});

h("an SCC's replica states are counted per scrape, a state once seen stays a line (0 when gone); errors and unreadable lines are reported", () => {
  const m = new MetricsHistory(10);
  const replicas = (...states: string[]): unknown => ({ replicas: { replicas: states.map((state, i) => ({ name: `sn${i}`, state })) } });
  m.record('scc', 'scc', { at: 1000, metrics: 'hd_records_ingested_total 0\nhd_replica_lag_batches{replica="sn0"} 2\nhd_replica_lag_batches{replica="sn1"} 1\n', health: replicas('healthy', 'healthy') });
  m.record('scc', 'scc', { at: 2000, metrics: 'hd_records_ingested_total 40\n', health: replicas('healthy', 'quarantined') });
  m.record('scc', 'scc', { at: 3000, metrics: 'hd_records_ingested_total 40\nbad line here\n', health: replicas('healthy', 'healthy') });
  const v = m.view()[0];
  assert.equal(v?.points.map((x) => [x.v['replicas.healthy'], x.v['replicas.quarantined']]), [[2, undefined], [1, 1], [2, 0]]);
  assert.is(v?.points[0]?.v.replica_lag_batches, 3);
  assert.equal(v?.problems, ["line 2: 'line' is not a number"]);
  m.record('scc', 'scc', { at: 4000, error: '127.0.0.1:1: connect ECONNREFUSED' });
  assert.is(m.view()[0]?.last_error, '127.0.0.1:1: connect ECONNREFUSED');
  assert.is(m.view()[0]?.points.length, 3, 'a failed scrape adds no point');
  m.keepOnly(new Set());
  assert.equal(m.view(), []);
});

h.run();

/** A stand-in node: /metrics answers `metrics()` with `status`, /health a Storage Node's devices. */
async function standIn(metrics: () => string, status = 200): Promise<{ port: number; close(): Promise<void> }> {
  const srv = http.createServer((req, res) => {
    if (req.url === '/health') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', devices: { list: [{ use: 'write', free_bytes: 5e9 }] } }));
    else res.writeHead(status, { 'content-type': 'text/plain' }).end(metrics());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { port: (srv.address() as AddressInfo).port, close: () => new Promise((r) => srv.close(() => r())) };
}

interface Ctx {
  dms: WebuxDms;
  s: WebSession;
  nodes: { port: number; close(): Promise<void> }[];
}

const sc = suite<Ctx>('the scraper: nodes with an observability address are read on an interval; GET /v1/metrics/history serves it');
sc.before(async (ctx) => {
  let n = 0;
  ctx.nodes = [await standIn(() => SN_TEXT((n += 500), n / 100, 0)), await standIn(() => 'oops', 500), await standIn(() => 'not metrics {{{\n')];
  ctx.dms = await startWebuxDms({ metricsIntervalMs: 100, metricsHistory: 50 });
  const { dms } = ctx;
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, {});
  const declare = (name: string, port: number): Promise<unknown> => dms.call('PUT', `/v1/nodes/${name}`, dms.admin, { role: 'storageNode', cluster: 'c1', addresses: { observability: { host: '127.0.0.1', port } } });
  await declare('sn-good', ctx.nodes[0]?.port as number);
  await declare('sn-500', ctx.nodes[1]?.port as number);
  await declare('sn-garbage', ctx.nodes[2]?.port as number);
  await declare('sn-closed', await freePort());
  await dms.call('PUT', '/v1/nodes/sn-none', dms.admin, { role: 'storageNode', cluster: 'c1' });
  ctx.s = await dms.signIn();
});
sc.after(async (ctx) => {
  await ctx.dms.close();
  for (const n of ctx.nodes) await n.close();
});

interface HistoryBody {
  interval_ms: number;
  capacity: number;
  series: Record<string, { title: string; unit: string }>;
  nodes: { name: string; role: string; points: { t: number; v: Record<string, number> }[]; last_error?: string; problems?: string[] }[];
}

sc('rates and disk of a good node; the HTTP error, the unreadable text and the closed port are reported per node; no address, no history', async ({ dms, s }) => {
  let body: HistoryBody | undefined;
  for (let i = 0; i < 100; i++) {
    body = (await dms.web('GET', '/v1/metrics/history', { session: s })).body as HistoryBody;
    if ((body.nodes.find((x) => x.name === 'sn-good')?.points.length ?? 0) >= 3) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(body);
  assert.is(body.interval_ms, 100);
  assert.is(body.capacity, 50);
  assert.is(body.series.ingest_records_per_s?.unit, 'records/s');
  const by = new Map(body.nodes.map((x) => [x.name, x]));
  const good = by.get('sn-good');
  const last = good?.points.at(-1)?.v ?? {};
  assert.ok((last.ingest_records_per_s ?? 0) > 0, JSON.stringify(good));
  assert.ok((last.query_batches_per_s ?? 0) > 0);
  assert.is(last.errors_per_s, 0);
  assert.is(last.disk_free_bytes, 5e9);
  assert.match(by.get('sn-500')?.last_error ?? '', /\/metrics answered HTTP 500/);
  assert.equal(by.get('sn-garbage')?.problems, ["line 1: 'metrics' is not a number"]);
  assert.match(by.get('sn-closed')?.last_error ?? '', /ECONNREFUSED/);
  assert.not.ok(by.has('sn-none'), 'a node without an observability address is not scraped');
  // The same route on the control plane, for the admin certificate.
  assert.is((await dms.call('GET', '/v1/metrics/history', dms.admin)).status, 200);
  // A node removed from the DMS leaves the history.
  await dms.call('DELETE', '/v1/nodes/sn-closed', dms.admin);
  await new Promise((r) => setTimeout(r, 400));
  assert.not.ok(((await dms.web('GET', '/v1/metrics/history', { session: s })).body as HistoryBody).nodes.some((x) => x.name === 'sn-closed'));
});

sc.run();
