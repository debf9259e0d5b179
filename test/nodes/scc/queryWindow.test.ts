/**
 * The SCC's resolution of HDQuery `time_window` (nodes/scc/queryWindow.ts, docs/scc.md "Time windows
 * at the SCC"), in process over real sockets: stand-in query nodes (HDWP legs) and stand-in
 * observability ports answering `GET /v1/batch-ranges` from the held batches as a Storage Node does
 * (query/timeRange.ts). A window becomes the union of the healthy replicas' batches, the reply names
 * them and the legs carry only them; every way of not being able to ask is refused with its status.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { status } from '@grpc/grpc-js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { QueryDispatcher } from '../../../nodes/scc/queryDispatcher';
import { QueryWindowResolver } from '../../../nodes/scc/queryWindow';
import type { ReplicaState } from '../../../nodes/scc/replicas';
import { serializeHdQuery, type HdQuery, type TimeWindow } from '../../../query/hdQuery';
import { heldRunsOf, timeFormHex } from '../../../query/timeRange';
import { newQueryToken } from '../../../query/token';
import { ResultListener } from '../../../hdwp/resultListener';
import { Registry } from 'prom-client';
import { RS, StandInQueryNode } from '../../query/standInQueryNode';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Schema } from '../../../engine-rs/schema';
import { QueryService } from '../../../nodes/scc/queryService';
import { PlatformQueryClient } from '../../../sdk/platformQueryClient';
import { QueryClientFetcher } from '../../../sql/datasetFetcher';
import { SqlError } from '../../../sql/sqlError';
import { failure, until } from './dispatchKit';

const IV = 60;
const DAY = 86_400;
const T0 = 1_700_000_040;

/** A stand-in observability port: `/v1/batch-ranges` over `starts` (sorted window starts of IV), or `failWith` as the status. */
class StandInRanges {
  starts: number[] = [];
  failWith = 0;
  asked = 0;
  port = 0;
  private readonly server = http.createServer((req, res) => {
    this.asked++;
    const u = new URL(req.url ?? '/', 'http://x');
    if (this.failWith !== 0 || u.pathname !== '/v1/batch-ranges') {
      res.writeHead(this.failWith || 404).end('{"error":"no"}');
      return;
    }
    const r = { start: Number(u.searchParams.get('start')), end: Number(u.searchParams.get('end')) };
    const held = heldRunsOf(this.starts, r, Number(u.searchParams.get('interval')), Number(u.searchParams.get('limit')));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ dataset: u.searchParams.get('dataset'), ...r, interval: IV, batches: held.batches, runs: held.runs, truncated: held.truncated }));
  });

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

interface World {
  sns: StandInQueryNode[];
  obs: StandInRanges[];
  listener: ResultListener;
  port: number;
  states: Record<string, ReplicaState>;
}
const w = {} as World;
let nextId = 1;

function world(opts: { observability?: boolean; resolver?: boolean } = {}): { d: QueryDispatcher; windows: QueryWindowResolver; registry: Registry } {
  const targets = w.sns.map((s) => ({ name: s.name, host: '127.0.0.1', controlPort: s.port, prodPort: 1 }));
  const registry = new Registry();
  const windows = new QueryWindowResolver({
    nodeName: 'scc-unit',
    targets: () => targets,
    health: () => w.states,
    ...(opts.observability !== false && { observabilityOf: (t: { name: string }) => ({ host: '127.0.0.1', port: (w.obs[w.sns.findIndex((s) => s.name === t.name)] as StandInRanges).port }) }),
    timeoutMs: 1000,
    registry,
  });
  const d = new QueryDispatcher({ nodeName: 'scc-unit', targets, recordSize: RS, health: () => w.states, healthCheckMs: 20, ...(opts.resolver !== false && { windows }) });
  return { d, windows, registry };
}

function windowQuery(tw: TimeWindow): { q: HdQuery; json: string; close: () => void; completed: () => number } {
  const q: HdQuery = { queryId: nextId++, dataset: 'ds', batchIds: [], subQueries: [], targets: [], verifyHash: false, queryQos: 1, returnAddress: { host: '127.0.0.1', port: w.port }, token: newQueryToken(), timeWindow: tw };
  const open = w.listener.open({ queryId: q.queryId, token: q.token }, () => undefined);
  return { q, json: serializeHdQuery(q), close: () => open.close(), completed: () => open.completed.size };
}

const tw = suite('SCC time_window resolution (stand-in nodes, real sockets)');
tw.before(async () => {
  w.sns = [new StandInQueryNode('sn1'), new StandInQueryNode('sn2')];
  w.obs = [new StandInRanges(), new StandInRanges()];
  for (const s of w.sns) await s.start();
  for (const o of w.obs) await o.start();
  w.listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  w.port = (await w.listener.listen()).port;
});
tw.before.each(() => {
  w.states = { sn1: 'healthy', sn2: 'healthy' };
  // Both hold a batch two years back and one today; sn2 also one sn1 lacks (lagging): the union is three.
  w.obs[0]!.starts = [T0 - 730 * DAY, T0];
  w.obs[1]!.starts = [T0 - 730 * DAY, T0 - 100 * DAY, T0];
  for (const o of w.obs) o.failWith = 0;
});
tw.after(async () => {
  await w.listener.close();
  for (const s of w.sns) await s.stop();
  for (const o of w.obs) await o.stop();
});

tw('a window of 29 million intervals is the union of the batches the replicas hold: the reply names them, the legs carry only them', async () => {
  const { d, windows, registry } = world();
  const { json, close, completed } = windowQuery({ start: 1, end: T0 + 600, interval: IV });
  const seen = w.sns.map((s) => s.queries.length);
  try {
    const reply = await d.dispatch(json);
    const want = [T0 - 730 * DAY, T0 - 100 * DAY, T0].map((s) => timeFormHex(s, IV));
    assert.equal(reply.batchIds, want);
    assert.is(reply.batches, 3);
    assert.equal(reply.missingBatchIds, []);
    await until(() => completed() === 3);
    const legIds = w.sns.flatMap((s, i) => s.queries.slice(seen[i]).flatMap((q) => q.batchIds)).sort();
    assert.equal(legIds, want, 'each resolved batch went to one leg, nothing else');
    assert.equal(windows.stats, { resolved: 1, refused: 0, batches: 3, nodeAnswers: 2 });
    const metrics = await registry.metrics();
    assert.match(metrics, /hd_scc_window_batches_total 3/);
    assert.match(metrics, /hd_scc_windows_total\{result="resolved"\} 1/);
  } finally {
    close();
    d.close();
    windows.close();
  }
});

tw('only healthy replicas are asked; one that fails leaves the others to answer', async () => {
  const { d, windows } = world();
  w.states = { sn1: 'healthy', sn2: 'down' };
  const asked = w.obs.map((o) => o.asked);
  const a = windowQuery({ start: 1, end: T0 + 600, interval: IV });
  try {
    const reply = await d.dispatch(a.json);
    assert.is(reply.batchIds?.length, 2, "sn1's two");
    assert.equal(w.obs.map((o, i) => o.asked - (asked[i] as number)), [1, 0]);
    await until(() => a.completed() === 2);
  } finally {
    a.close();
  }
  w.states = { sn1: 'healthy', sn2: 'healthy' };
  w.obs[0]!.failWith = 500;
  const b = windowQuery({ start: 1, end: T0 + 600, interval: IV });
  try {
    assert.is((await d.dispatch(b.json)).batchIds?.length, 3, "sn2's three");
    await until(() => b.completed() === 3);
  } finally {
    b.close();
    d.close();
    windows.close();
  }
});

tw('a window where nothing exists runs nothing and names no batch', async () => {
  const { d, windows } = world();
  const { json, close } = windowQuery({ start: T0 + 10 * DAY, end: T0 + 20 * DAY, interval: IV });
  try {
    const reply = await d.dispatch(json);
    assert.equal({ ...reply, queryId: 0 }, { queryId: 0, batches: 0, nodes: [], missingBatchIds: [], batchIds: [] });
    assert.is(d.stats.running, 0);
  } finally {
    close();
    d.close();
    windows.close();
  }
});

tw('refusals: no observability address (FAILED_PRECONDITION), no answer or no healthy replica (UNAVAILABLE), too many batches (INVALID_ARGUMENT), no resolver', async () => {
  const none = world({ observability: false });
  const a = windowQuery({ start: 1, end: T0, interval: IV });
  try {
    const e = await failure(none.d.dispatch(a.json));
    assert.is(e.code, status.FAILED_PRECONDITION);
    assert.match(e.message, /knows no observability address of its healthy replicas \(sn1, sn2\).*set SN_OBSERVABILITY_PORTS on the SCC \(e\.g\. sn1:<observability port>,sn2:<observability port>\)/);
    assert.equal(none.windows.stats.refused, 1);
  } finally {
    a.close();
    none.d.close();
  }

  const { d, windows, registry } = world();
  try {
    for (const o of w.obs) o.failWith = 503;
    const b = windowQuery({ start: 1, end: T0, interval: IV });
    const e1 = await failure(d.dispatch(b.json));
    b.close();
    assert.is(e1.code, status.UNAVAILABLE);
    assert.match(e1.message, /none of the 2 healthy replica\(s\) asked \(sn1 127\.0\.0\.1:\d+, sn2 127\.0\.0\.1:\d+\) answered which batches they hold \(GET \/v1\/batch-ranges\)/);
    for (const o of w.obs) o.failWith = 0;

    w.states = { sn1: 'down', sn2: 'quarantined' };
    const c = windowQuery({ start: 1, end: T0, interval: IV });
    const e2 = await failure(d.dispatch(c.json));
    c.close();
    assert.is(e2.code, status.UNAVAILABLE);
    assert.match(e2.message, /has no healthy replica to ask which batches exist \(sn1 down, sn2 quarantined\)/);
    w.states = { sn1: 'healthy', sn2: 'healthy' };

    // More than MAX_BATCH_IDS (100 000) batches exist in the window.
    w.obs[0]!.starts = Array.from({ length: 100_001 }, (_, i) => T0 - i * IV).reverse();
    const f = windowQuery({ start: 1, end: T0, interval: IV });
    const e3 = await failure(d.dispatch(f.json));
    f.close();
    assert.is(e3.code, status.INVALID_ARGUMENT);
    assert.match(e3.message, /^time_window: \[1, \d+\] holds more than 100000 batches of 60 s of 'ds' on the replicas; the limit is 100000: narrow the window/);
    assert.match(await registry.metrics(), /hd_scc_windows_total\{result="refused"\} 3/);
  } finally {
    d.close();
    windows.close();
  }

  const bare = world({ resolver: false });
  const g = windowQuery({ start: 1, end: T0, interval: IV });
  try {
    const e = await failure(bare.d.dispatch(g.json));
    assert.is(e.code, status.FAILED_PRECONDITION);
    assert.match(e.message, /does not resolve time windows; send batch_ids/);
  } finally {
    g.close();
    bare.d.close();
  }
});

tw("hd_sql straight to the SCC: the SCC's refusals of a window become 53400 (too many batches) and 08006 (no replica answered)", async () => {
  const { d, windows } = world();
  const service = new QueryService(d);
  const grpcPort = await service.listen('127.0.0.1', 0);
  const schema = Schema.parse(readFileSync(path.resolve(__dirname, '../../../pipelines/examples/data/flows.schema.json'), 'utf8'));
  const client = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  client.setSccTargets([{ host: '127.0.0.1', port: 1, grpcPort }]);
  const fetcher = new QueryClientFetcher(client);
  const read = { schema, startTime: 1, endTime: T0, subQueries: [] };
  const refused = async (): Promise<SqlError> => {
    const e = await fetcher.fetch(read, async () => undefined, { deadline: Date.now() + 10_000, qos: 1 }).then(() => undefined, (err: unknown) => err);
    assert.instance(e, SqlError, String(e));
    return e as SqlError;
  };
  try {
    w.obs[0]!.starts = Array.from({ length: 100_001 }, (_, i) => T0 - i * IV).reverse();
    const tooMany = await refused();
    assert.is(tooMany.kind, 'limit_exceeded');
    assert.is(tooMany.codes.sqlstate, '53400');
    assert.match(tooMany.message, /the time range of flows \[0, \d+\] is too long to read at once: time_window: \[0, \d+\] holds more than 100000 batches of 60 s of 'flows' on the replicas; the limit is 100000: narrow the window \(on ts\)/);
    for (const o of w.obs) o.failWith = 500;
    const silent = await refused();
    assert.is(silent.kind, 'upstream_unavailable');
    assert.is(silent.codes.sqlstate, '08006');
    assert.match(silent.message, /the SCC could not name the batches of flows in \[0, \d+\]: time_window .* none of the 2 healthy replica\(s\) asked .* answered/);
  } finally {
    await client.stop();
    d.close();
    windows.close();
    await service.close();
  }
});

tw.run();
