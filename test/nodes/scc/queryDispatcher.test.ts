import { status } from '@grpc/grpc-js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import type { LegConnectionPoolOptions } from '../../../nodes/scc/legConnections';
import { QueryAdmission } from '../../../nodes/scc/queryAdmission';
import { QueryDispatcher } from '../../../nodes/scc/queryDispatcher';
import { QueryRun } from '../../../nodes/scc/queryRun';
import type { ReplicaState } from '../../../nodes/scc/replicas';
import { serializeHdQuery, type HdQuery } from '../../../query/hdQuery';
import { newQueryToken } from '../../../query/token';
import { ResultListener, type OpenQuery } from '../../../hdwp/resultListener';
import { RS, StandInQueryNode } from '../../query/standInQueryNode';
import { failure, until } from './dispatchKit';

const adm = suite('QueryAdmission (query_qos)');
adm('weight 1 gets half the slots, weight 255 all of them; release gives a slot back', () => {
  const a = new QueryAdmission(10);
  assert.is(a.limitFor(1), 5);
  assert.is(a.limitFor(255), 10);
  assert.is(a.limitFor(128), 8);
  assert.is(a.limitFor(0), 5, 'clamped like query_qos');
  for (let i = 0; i < 5; i++) assert.ok(a.tryAdmit(1));
  assert.not.ok(a.tryAdmit(1), 'weight-1 queries stop at half');
  for (let i = 0; i < 5; i++) assert.ok(a.tryAdmit(255));
  assert.not.ok(a.tryAdmit(255));
  a.release();
  assert.ok(a.tryAdmit(255));
  assert.is(a.active, 10);
  assert.is(new QueryAdmission(1).limitFor(1), 1, 'one slot always admits one query');
  assert.throws(() => new QueryAdmission(0), /maxQueries must be an integer ≥ 1/);
});

interface World {
  sns: StandInQueryNode[];
  listener: ResultListener;
  port: number;
  states: Record<string, ReplicaState>;
}
const w = {} as World;
let nextId = 1;

function dispatcher(opts: { maxQueries?: number; maxQueryMs?: number; health?: boolean; legConnections?: LegConnectionPoolOptions } = {}): QueryDispatcher {
  return new QueryDispatcher({
    nodeName: 'scc-unit',
    targets: w.sns.map((s) => ({ name: s.name, host: '127.0.0.1', controlPort: s.port, prodPort: 1 })),
    recordSize: RS,
    health: () => (opts.health === false ? undefined : w.states),
    maxQueries: opts.maxQueries,
    maxQueryMs: opts.maxQueryMs,
    healthCheckMs: 20,
    ...(opts.legConnections && { legConnections: opts.legConnections }),
  });
}

function query(n: number, qos = 1): { q: HdQuery; json: string; open: OpenQuery } {
  const q: HdQuery = { queryId: nextId++, dataset: 'ds', batchIds: Array.from({ length: n }, (_, i) => generateBatchIdNumber(nextId * 100 + i).toHex()), subQueries: [], targets: [], verifyHash: false, queryQos: qos, returnAddress: { host: '127.0.0.1', port: w.port }, token: newQueryToken() };
  const open = w.listener.open({ queryId: q.queryId, token: q.token }, () => undefined);
  return { q, json: serializeHdQuery(q), open };
}

const disp = suite('QueryDispatcher (in process, stand-in query nodes, real sockets)');
disp.before(async () => {
  w.sns = [new StandInQueryNode('sn1'), new StandInQueryNode('sn2')];
  for (const s of w.sns) await s.start();
  w.listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  w.port = (await w.listener.listen()).port;
});
disp.before.each(() => {
  w.states = { sn1: 'healthy', sn2: 'healthy' };
  for (const s of w.sns) {
    s.plan = () => 'deliver';
    s.release();
  }
});
disp.after(async () => {
  await w.listener.close();
  for (const s of w.sns) await s.stop();
});

/** Dispatches a query of `n` batches and waits until every batch reached the listener. */
async function runToEnd(d: QueryDispatcher, n: number): Promise<void> {
  const { json, open } = query(n);
  try {
    await d.dispatch(json);
    await until(() => open.completed.size === n);
    await until(() => d.stats.running === 0);
  } finally {
    open.close();
  }
}

disp('query legs reuse idle connections to a node: later queries open none, and each is still answered', async () => {
  const d = dispatcher();
  const accepted = w.sns.map((s) => s.accepted);
  try {
    await runToEnd(d, 2);
    const first = d.stats.legConnections;
    assert.is(first.opened, 2, 'one leg per node');
    assert.is(first.returned, 2);
    assert.is(first.idle, 2);
    for (let i = 0; i < 5; i++) await runToEnd(d, 2);
    const after = d.stats.legConnections;
    assert.is(after.opened, 2, 'no new connection for the next five queries');
    assert.is(after.reused, 10);
    assert.equal(
      w.sns.map((s, i) => s.accepted - (accepted[i] as number)),
      [1, 1],
      'each node accepted one control connection in all',
    );
  } finally {
    d.close();
  }
  // close() ends the idle connections.
  await until(() => w.sns.every((s) => s.openConnections === 0));
});

disp('a pooled connection the node closed is replaced without failing over; idle ones close after idleMs', async () => {
  const d = dispatcher({ legConnections: { idleMs: 60_000 } });
  try {
    await runToEnd(d, 2);
    assert.is(d.stats.legConnections.idle, 2);
    // The nodes drop their control connections (as a restart would) while they sit in the pool.
    for (const s of w.sns) s.dropConnections();
    await until(() => d.stats.legConnections.idle === 0);
    await runToEnd(d, 2);
    assert.is(d.stats.legConnections.opened, 4, 'fresh connections once the pooled ones were gone');
    // A pooled connection that the node closes on the query itself (nothing of the query came back):
    // the leg connects to the same node again; the batch is neither failed nor sent to the other replica.
    for (const s of w.sns) s.closeOnNextQuery = true;
    const seen = w.sns.map((s) => s.queries.length);
    const { q, json, open } = query(1);
    try {
      const placed = await d.dispatch(json);
      await until(() => open.completed.size === 1);
      const node = placed.nodes[0] as string;
      const sn = w.sns.find((s) => s.name === node) as StandInQueryNode;
      const other = w.sns.find((s) => s.name !== node) as StandInQueryNode;
      assert.ok(sn.queries.some((x) => x.auth.queryId === q.queryId), 'answered by the node it was placed on');
      assert.is(other.queries.length, seen[w.sns.indexOf(other)], 'the other replica was not asked');
      assert.is(d.stats.legConnections.opened, 5, 'one fresh connection replaced the closed one');
    } finally {
      for (const s of w.sns) s.closeOnNextQuery = false;
      open.close();
    }
  } finally {
    d.close();
  }
  const short = dispatcher({ legConnections: { idleMs: 30 } });
  try {
    await runToEnd(short, 2);
    await until(() => short.stats.legConnections.closedIdle === 2);
    assert.is(short.stats.legConnections.idle, 0);
    await until(() => w.sns.every((s) => s.openConnections === 0));
  } finally {
    short.close();
  }
});

disp('admission full is RESOURCE_EXHAUSTED; a high query_qos still gets in', async () => {
  const d = dispatcher({ maxQueries: 2 });
  for (const s of w.sns) s.plan = () => 'hold';
  try {
    await d.dispatch(query(2, 1).json);
    const low = await failure(d.dispatch(query(2, 1).json));
    assert.is(low.code, status.RESOURCE_EXHAUSTED);
    assert.match(low.message, /^admission full on scc-unit: 1 queries running; a query of query_qos 1 is admitted below 1 \(max_queries 2\)/);
    await d.dispatch(query(2, 255).json);
    assert.is((await failure(d.dispatch(query(2, 255).json))).code, status.RESOURCE_EXHAUSTED);
    const { legConnections, ...counts } = d.stats;
    assert.equal(counts, { running: 2, dispatched: 2, refused: 2, cancelled: 0 });
    assert.is(legConnections.opened, 4, 'two held queries of two batches: a leg on each node each');
  } finally {
    d.close();
  }
});

disp('no healthy replica: UNAVAILABLE; some healthy: the rest are missing_batch_ids-free and go to it', async () => {
  const d = dispatcher();
  try {
    w.states = { sn1: 'down', sn2: 'out-of-sync' };
    const e = await failure(d.dispatch(query(3).json));
    assert.is(e.code, status.UNAVAILABLE);
    assert.match(e.message, /no healthy replica for any of the 3 batch\(es\) of query \d+ \(sn1 down, sn2 out-of-sync\)/);
    w.states = { sn1: 'catching-up', sn2: 'healthy' };
    const { json, open } = query(4);
    const reply = await d.dispatch(json);
    assert.equal(reply.nodes, ['sn2']);
    assert.equal(reply.missingBatchIds, []);
    await until(() => open.completed.size === 4);
  } finally {
    d.close();
  }
});

disp('a replica that goes down mid-query: its leg is cancelled and its batches move to the other replica', async () => {
  const d = dispatcher();
  try {
    w.sns[0].plan = () => 'hold';
    const { q, json, open } = query(6);
    await d.dispatch(json);
    await until(() => w.sns[0].queries.some((x) => x.auth.queryId === q.queryId));
    w.states = { sn1: 'down', sn2: 'healthy' };
    await until(() => open.completed.size === 6);
    assert.ok(w.sns[0].queries.find((x) => x.auth.queryId === q.queryId)?.cancelled, 'sn1 was told to stop');
    assert.is(w.sns[1].queries.filter((x) => x.auth.queryId === q.queryId).flatMap((x) => x.batchIds).length, 6);
  } finally {
    d.close();
  }
});

disp('without a registered replica set every target counts as healthy', async () => {
  const d = dispatcher({ health: false });
  try {
    const { json, open } = query(5);
    assert.equal((await d.dispatch(json)).nodes.length, 2);
    await until(() => open.completed.size === 5);
  } finally {
    d.close();
  }
});

disp('a large share goes to a node in several legs, one after the other (the node runs one leg of a query at a time)', async () => {
  const { q, open } = query(5);
  let finished = false;
  const run = new QueryRun({
    query: q,
    targets: [{ name: 'sn1', host: '127.0.0.1', controlPort: w.sns[0].port, prodPort: 1 }],
    recordSize: RS,
    health: () => undefined,
    maxQueryMs: 0,
    maxBatchesPerLeg: 2,
    onFinished: () => (finished = true),
  });
  assert.equal(run.start(), { batches: 5, nodes: ['sn1'], missing: [] });
  await until(() => finished);
  assert.is(open.completed.size, 5);
  assert.equal(w.sns[0].queries.filter((x) => x.auth.queryId === q.queryId).map((x) => x.batchIds.length), [2, 2, 1]);
  assert.equal(run.counts(), { queued: 0, running: 0, done: 5, failed: 0 });
});

disp('placement keeps both replicas equally loaded; a time window nobody ingested (every batch missing everywhere) settles', async () => {
  // A default lookback names thousands of intervals nobody ingested: each is asked of every replica once.
  const n = 6_000;
  for (const sn of w.sns) sn.plan = () => 'missing';
  const { q, open } = query(n);
  let finished = false;
  const run = new QueryRun({
    query: q,
    targets: w.sns.map((sn) => ({ name: sn.name, host: '127.0.0.1', controlPort: sn.port, prodPort: 1 })),
    recordSize: RS,
    health: () => w.states,
    maxQueryMs: 0,
    onFinished: () => (finished = true),
  });
  run.start();
  const firstLegs = w.sns.map(() => 0);
  await until(() => w.sns.every((sn) => sn.queries.some((x) => x.auth.queryId === q.queryId)));
  w.sns.forEach((sn, i) => (firstLegs[i] = sn.queries.find((x) => x.auth.queryId === q.queryId)!.batchIds.length));
  assert.equal(firstLegs, [n / 2, n / 2], 'half the batches each');
  await until(() => finished);
  assert.equal(run.counts(), { queued: 0, running: 0, done: 0, failed: n });
  await until(() => open.batchErrors().length === n);
  for (const sn of w.sns) assert.is(sn.queries.filter((x) => x.auth.queryId === q.queryId).reduce((a, x) => a + x.batchIds.length, 0), n, `${sn.name} was asked for every batch once`);
});

disp('max_query_ms: a query past it is cancelled on its nodes and the client is told (code 5)', async () => {
  const d = dispatcher({ maxQueryMs: 100 });
  try {
    for (const s of w.sns) s.plan = () => 'hold';
    const { q, json, open } = query(2);
    await d.dispatch(json);
    await until(() => open.batchErrors().length === 2);
    for (const e of open.batchErrors()) assert.match(e.message, /^5 timeout: the query ran longer than 100 ms \(max_query_ms\)/);
    await until(() => w.sns.every((s) => s.queries.filter((x) => x.auth.queryId === q.queryId).every((x) => x.cancelled)));
    assert.is(d.stats.running, 0);
  } finally {
    d.close();
  }
});

disp('after close, dispatch is UNAVAILABLE and running queries were cancelled', async () => {
  const d = dispatcher();
  for (const s of w.sns) s.plan = () => 'hold';
  const { q, json } = query(2);
  await d.dispatch(json);
  await until(() => w.sns.every((s) => s.queries.some((x) => x.auth.queryId === q.queryId)));
  d.close();
  await until(() => w.sns.every((s) => s.queries.filter((x) => x.auth.queryId === q.queryId).every((x) => x.cancelled)));
  assert.is((await failure(d.dispatch(query(1).json))).code, status.UNAVAILABLE);
});

adm.run();
disp.run();
