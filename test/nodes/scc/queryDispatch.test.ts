import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { DispatchError, QueryDispatchClient } from '../../../query/dispatch/dispatchClient';
import { serializeHdQuery, type HdQuery } from '../../../query/hdQuery';
import { newQueryToken } from '../../../query/token';
import { ResultListener, type BatchResult, type OpenQuery, type QueryResult } from '../../../hdwp/resultListener';
import { freePort, startHd, waitForPort, type HdProcess } from '../../support/hdProcess';
import { batchRecords, RS, StandInQueryNode } from '../../query/standInQueryNode';

/** The SCC under test (a real `hd run pipelines/scc.yaml`), two stand-in query nodes and a client listener. */
interface World {
  hd: HdProcess;
  sns: StandInQueryNode[];
  client: QueryDispatchClient;
  listener: ResultListener;
  listenPort: number;
}

const w = {} as World;
let nextId = 100;
const ids = (n: number, from = 1): string[] => Array.from({ length: n }, (_, i) => generateBatchIdNumber(from + i).toHex());

/** A query of `batches` to the test listener, its results collected. */
function query(batchIds: string[], patch: Partial<HdQuery> = {}): { q: HdQuery; results: QueryResult[]; open: OpenQuery } {
  const q: HdQuery = { queryId: nextId++, dataset: 'ds', batchIds, subQueries: [], targets: [], verifyHash: false, queryQos: 1, returnAddress: { host: '127.0.0.1', port: w.listenPort }, token: newQueryToken(), ...patch };
  const results: QueryResult[] = [];
  const open = w.listener.open({ queryId: q.queryId, token: q.token }, (r) => void results.push(r));
  return { q, results, open };
}

async function refusal(p: Promise<unknown>): Promise<DispatchError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  assert.instance(e, DispatchError, `expected a DispatchError, got ${String(e)}`);
  return e as DispatchError;
}

const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
};

const d = suite('SCC query dispatch over gRPC (real SCC process, stand-in query nodes)');

d.before(async () => {
  w.sns = [new StandInQueryNode('sn1'), new StandInQueryNode('sn2')];
  for (const s of w.sns) await s.start();
  const [prod, obs, cmd, grpcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  w.hd = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: '127.0.0.1',
    PRODUCTION_PORT: String(prod),
    OBSERVABILITY_PORT: String(obs),
    COMMAND_PORT: String(cmd),
    COMMAND_INTERFACE: '127.0.0.1',
    QUERY_GRPC_PORT: String(grpcPort),
    RECORD_SIZE: String(RS),
    SN_TARGETS: w.sns.map((s) => `${s.name}:127.0.0.1:${s.port}:1`).join(','),
    NODE_NAME: 'scc-q',
  });
  await waitForPort('127.0.0.1', grpcPort, w.hd);
  w.client = new QueryDispatchClient(`127.0.0.1:${grpcPort}`);
  w.listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  w.listenPort = (await w.listener.listen()).port;
});
d.after(async () => {
  w.client?.close();
  await w.hd?.stop();
  await w.listener?.close();
  for (const s of w.sns ?? []) await s.stop();
});
d.after.each(() => {
  for (const s of w.sns) {
    s.plan = () => 'deliver';
    s.dropAfter = undefined;
    s.release();
  }
});

d('a bad query is INVALID_ARGUMENT naming the key; 17 branches with the contract message', async () => {
  const bad = await refusal(w.client.dispatch('{"query_id": 1'));
  assert.is(bad.status, 'INVALID_ARGUMENT');
  assert.match(bad.details, /^not JSON/);
  const { q } = query(ids(1));
  const json = JSON.parse(serializeHdQuery(q)) as Record<string, unknown>;
  const unknownKey = await refusal(w.client.dispatch(JSON.stringify({ ...json, batchids: [] })));
  assert.is(unknownKey.status, 'INVALID_ARGUMENT');
  assert.match(unknownKey.details, /^batchids: unknown key \(did you mean 'batch_ids'\?\)/);
  const sq = { filters: [{ field: 'a', op: 'eq', value: '1' }] };
  const branches = await refusal(w.client.dispatch(JSON.stringify({ ...json, sub_queries: Array(17).fill(sq) })));
  assert.is(branches.status, 'INVALID_ARGUMENT');
  assert.is(branches.details, 'too many branches: 17 sub-queries, the limit is 16');
  const empty = await refusal(w.client.dispatch(JSON.stringify({ ...json, sub_queries: [{ filters: [] }] })));
  assert.match(empty.details, /^sub_queries\[0\]\.filters: an empty sub-query is refused/);
  assert.is(w.sns[0].queries.length + w.sns[1].queries.length, 0, 'no node saw a refused query');
});

d('an unreachable return address fails fast with FAILED_PRECONDITION naming it', async () => {
  const closed = await freePort();
  const { q } = query(ids(2), { returnAddress: { host: '127.0.0.1', port: closed } });
  const t0 = Date.now();
  const e = await refusal(w.client.dispatch(q));
  assert.is(e.status, 'FAILED_PRECONDITION');
  assert.is(e.details, `return address 127.0.0.1:${closed} is not reachable from scc-q: connect ECONNREFUSED`);
  assert.ok(Date.now() - t0 < 10_000, 'no query timeout involved');
});

d('batches are split over both replicas, each read once; results reach the listener', async () => {
  const batchIds = ids(10, 1000);
  const { q, results, open } = query(batchIds, { queryQos: 300 });
  const reply = await w.client.dispatch(q);
  assert.is(reply.queryId, q.queryId);
  assert.is(reply.batches, 10);
  assert.equal([...reply.nodes].sort(), ['sn1', 'sn2']);
  assert.equal(reply.missingBatchIds, []);
  await until(() => open.completed.size === 10);
  const got = results.filter((r): r is BatchResult => r.kind === 'batch');
  assert.is(got.length, 10);
  for (const r of got) assert.ok(Buffer.concat(r.records).equals(batchRecords(r.batchId.toHex())), 'records as the node sent them');
  const legs = w.sns.map((s) => s.queries.filter((x) => x.auth.queryId === q.queryId));
  assert.equal(legs.map((l) => l.flatMap((x) => x.batchIds).length), [5, 5], 'balanced by count');
  assert.equal(new Set(legs.flat().flatMap((x) => x.batchIds)).size, 10, 'each batch on one node');
  assert.is(legs[0][0].qos, 255, 'query_qos clamped and passed on to the nodes');
  open.close();
});

d('a node that fails mid-query: its unfinished batches come from the other replica', async () => {
  w.sns[0].dropAfter = 1; // sn1 answers one batch, sends half of the next and drops the connection
  const batchIds = ids(8, 2000);
  const { q, results, open } = query(batchIds);
  await w.client.dispatch(q);
  await until(() => open.completed.size === 8);
  assert.equal(open.batchErrors(), []);
  assert.is(results.filter((r) => r.kind === 'batch').length, 8, 'every batch once (partial copies dropped, duplicates dropped)');
  const sn2Batches = w.sns[1].queries.filter((x) => x.auth.queryId === q.queryId).flatMap((x) => x.batchIds);
  assert.is(sn2Batches.length, 4 + 3, 'sn2 read its own 4 and the 3 sn1 did not finish');
  open.close();
});

d('a node without the batch (bbn 13): the next replica serves it and the error is withdrawn', async () => {
  const batchIds = ids(4, 3000);
  w.sns[0].plan = (hex) => (hex === batchIds[0] ? 'missing' : 'deliver');
  w.sns[1].plan = (hex) => (hex === batchIds[1] ? 'missing' : 'deliver');
  const { q, open } = query(batchIds);
  await w.client.dispatch(q);
  await until(() => open.completed.size === 4);
  assert.equal(open.batchErrors(), [], 'both copies arrived from the other replica');
  open.close();
});

d('no replica left: the client hears a bbn for every batch, from the nodes or the SCC', async () => {
  const batchIds = ids(2, 4000);
  w.sns[0].plan = () => 'missing';
  w.sns[1].plan = () => 'missing';
  const { q, open } = query(batchIds);
  await w.client.dispatch(q);
  // Each batch is tried on both replicas, then given up.
  const legsOf = (id: number) => w.sns.flatMap((s) => s.queries.filter((x) => x.auth.queryId === id));
  await until(() => legsOf(q.queryId).flatMap((x) => x.batchIds).length === 4 && legsOf(q.queryId).every((x) => x.done));
  assert.equal(open.batchErrors().map((e) => e.code), [13, 13]);
  open.close();

  // Both nodes drop the connection: nobody told the client, so the SCC does (code 7).
  w.sns[0].dropAfter = 0;
  w.sns[1].dropAfter = 0;
  w.sns[0].plan = () => 'deliver';
  w.sns[1].plan = () => 'deliver';
  const second = query(ids(2, 4100));
  await w.client.dispatch(second.q);
  await until(() => second.open.batchErrors().length === 2);
  for (const e of second.open.batchErrors()) {
    assert.is(e.code, 7);
    assert.match(e.message, /^7 internal: no healthy replica left to try \(tried sn\d, sn\d\)/);
  }
  second.open.close();
});

d('CancelQuery reaches every node; a running id is ALREADY_EXISTS; unknown id or token is NOT_FOUND', async () => {
  for (const s of w.sns) s.plan = () => 'hold';
  const { q, open } = query(ids(6, 5000));
  await w.client.dispatch(q);
  const again = await refusal(w.client.dispatch(q));
  assert.is(again.status, 'ALREADY_EXISTS');
  await until(() => w.sns.every((s) => s.queries.some((x) => x.auth.queryId === q.queryId)));
  const wrong = await refusal(w.client.cancelQuery(q.queryId, newQueryToken()));
  assert.is(wrong.status, 'NOT_FOUND');
  assert.match(wrong.details, new RegExp(`no query ${q.queryId} with that token on scc-q`));
  assert.is((await refusal(w.client.cancelQuery(999_999, q.token))).status, 'NOT_FOUND');
  assert.is((await refusal(w.client.cancelQuery(q.queryId, 'xyz'))).status, 'INVALID_ARGUMENT');
  const reply = await w.client.cancelQuery(q.queryId, q.token);
  assert.equal(reply, { cancelled: true, nodes: 2 });
  await until(() => w.sns.every((s) => s.queries.filter((x) => x.auth.queryId === q.queryId).every((x) => x.cancelled)));
  assert.equal(await w.client.cancelQuery(q.queryId, q.token), { cancelled: false, nodes: 0 }, 'a finished query answers, not NOT_FOUND');
  assert.is(open.completed.size, 0);
  open.close();
});

d.run();
