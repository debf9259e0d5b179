import { Subject } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import type { Frame } from '../../engine-rs/hdwpFrame';
import type { Chunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import type { QueryResultElement, QueryResults } from '../../stream/queryElement';
import { StageCounters } from '../../stream/stageCounters';
import { resultStream, type ResultStreamOptions } from '../../sinks/resultStream';
import { ResultListener, type QueryResult } from '../../hdwp/resultListener';
import { HdwpServer, type HdwpConnection } from '../../hdwp/hdwpServer';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { idOf, specOf, TestQuery } from '../support/testQuery';

const RS = 8;

/** Waits for `cond`, failing after 10 s rather than hanging the run. */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${cond.toString()}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A node's resultStream sink fed by hand. */
function node(opts: ResultStreamOptions = {}): { input: Subject<Chunk>; counters: StageCounters; completed: Promise<void> } {
  const input = new Subject<Chunk>();
  const counters = new StageCounters('records');
  const completed = new Promise<void>((resolve, reject) => {
    resultStream({ counters, nodeName: 'sn-r', ...opts })(input).subscribe({ complete: resolve, error: reject });
  });
  return { input, counters, completed };
}

function query(port: number, id: number, batches: number): { q: TestQuery; results: QueryResults } {
  const q = new TestQuery(specOf(id, [], { returnAddress: { host: '127.0.0.1', port } }));
  return { q, results: { query: q, recordSize: RS, batches, flow: new Flow() } };
}

const recs = (results: QueryResults, batchId: BatchID, n: number): QueryResultElement => ({ kind: 'records', dataset: 'ds', batchId, count: n, recordSize: RS, buf: Buffer.alloc(n * RS, n), results });
const eob = (results: QueryResults, batchId: BatchID, n: number): QueryResultElement => ({ kind: 'eob', dataset: 'ds', batchId, recordCount: n, results });

/** Runs a one-batch query through `n` and waits until the node is done with it. */
async function oneBatch(n: ReturnType<typeof node>, port: number, id: number, count = 3): Promise<TestQuery> {
  const { q, results } = query(port, id, 1);
  n.input.next(recs(results, idOf(id), count));
  n.input.next(eob(results, idOf(id), count));
  await until(() => q.ended);
  return q;
}

/** A result listener, with what each query opened on it received. */
async function listenerFor(): Promise<{ listener: ResultListener; port: number; got: Map<number, QueryResult[]> }> {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  return { listener, port, got: new Map() };
}

/** Opens `q` on `listener`, its results into `got`. */
function openOn(listener: ResultListener, q: TestQuery, got: Map<number, QueryResult[]>): void {
  const list: QueryResult[] = [];
  got.set(q.spec.queryId, list);
  listener.open(q.auth, (r) => void list.push(r));
}

const reuse = suite('resultStream: reused result connections');

reuse('the next query to the same address goes on the connection the last one finished with; each gets its own results', async () => {
  const { listener, port, got } = await listenerFor();
  const n = node();
  const qs: TestQuery[] = [];
  for (let id = 1; id <= 3; id++) {
    const { q, results } = query(port, id, 2);
    openOn(listener, q, got);
    n.input.next(recs(results, idOf(id * 10), 4));
    n.input.next(eob(results, idOf(id * 10), 4));
    n.input.next(eob(results, idOf(id * 10 + 1), 0));
    await until(() => q.ended);
    qs.push(q);
  }
  for (const q of qs) {
    const list = got.get(q.spec.queryId) ?? [];
    await until(() => list.length === 2);
    assert.equal(list.map((r) => (r.kind === 'batch' ? r.count : -1)), [4, 0]);
    assert.equal(q.replies.map((f) => f.kind), ['eob', 'eob']);
  }
  assert.is(listener.stats.acceptedStreams, 3);
  assert.is(listener.stats.reusedStreams, 2);
  assert.is(listener.streams, 1, 'one connection, idle in the pool');
  n.input.complete();
  await n.completed;
  await until(() => listener.streams === 0);
  await listener.close();
});

reuse('idleMs 0 keeps nothing: a connection per query, closed after it', async () => {
  const { listener, port, got } = await listenerFor();
  const n = node({ idleMs: 0 });
  for (let id = 1; id <= 2; id++) {
    const { q, results } = query(port, id, 1);
    openOn(listener, q, got);
    n.input.next(recs(results, idOf(id), 2));
    n.input.next(eob(results, idOf(id), 2));
    await until(() => q.ended);
    await until(() => listener.streams === 0);
  }
  assert.is(listener.stats.acceptedStreams, 2);
  assert.is(listener.stats.reusedStreams, 0);
  n.input.complete();
  await n.completed;
  await listener.close();
});

reuse('an unused connection closes after idleMs', async () => {
  const { listener, port, got } = await listenerFor();
  const n = node({ idleMs: 20 });
  const { q, results } = query(port, 1, 1);
  openOn(listener, q, got);
  n.input.next(recs(results, idOf(1), 2));
  n.input.next(eob(results, idOf(1), 2));
  await until(() => q.ended);
  await until(() => listener.streams === 0);
  n.input.complete();
  await n.completed;
  await listener.close();
});

/** A listener on the plain HDWP server: `rebind` as asked, `refuseLater` refuses every hello after a connection's first (not with code 3). */
async function fakeListener(rebind: boolean, refuseLater = false): Promise<{ server: HdwpServer; port: number; conns: HdwpConnection[]; frames: Frame[]; hellos: number }> {
  const seen = new Set<HdwpConnection>();
  const state = { conns: [] as HdwpConnection[], frames: [] as Frame[], hellos: 0 };
  const server = new HdwpServer({
    host: '127.0.0.1',
    port: 0,
    role: 'queryClient',
    rebind,
    onConnection: (conn) => {
      state.hellos++;
      if (seen.has(conn) && refuseLater) throw new HdwpStreamError('ERR_HDWP_REFUSED', 'not on this connection', { frameCode: 7 });
      if (!seen.has(conn)) state.conns.push(conn);
      seen.add(conn);
      return { onFrame: (f) => void state.frames.push(f) };
    },
  });
  const { port } = await server.listen();
  return Object.assign(state, { server, port });
}

reuse('an older listener (no query block in its hello answer) never sees a second hello: a connection per query', async () => {
  const fake = await fakeListener(false);
  const n = node();
  await oneBatch(n, fake.port, 1);
  await oneBatch(n, fake.port, 2);
  assert.is(fake.conns.length, 2);
  assert.is(fake.hellos, 2);
  n.input.complete();
  await n.completed;
  await fake.server.close();
});

reuse('an idle connection the listener closed is dropped from the pool: the next query connects afresh', async () => {
  const fake = await fakeListener(true);
  const n = node();
  const q1 = await oneBatch(n, fake.port, 1);
  assert.equal(q1.replies.map((f) => f.kind), ['eob']);
  (fake.conns[0] as HdwpConnection).close();
  await (fake.conns[0] as HdwpConnection).done;
  const q2 = await oneBatch(n, fake.port, 2);
  assert.equal(q2.replies.map((f) => f.kind), ['eob'], JSON.stringify(q2.replies));
  assert.is(fake.conns.length, 2);
  n.input.complete();
  await n.completed;
  await fake.server.close();
});

reuse('a reused connection whose hello is refused: the query goes once more on a new connection, its frames sent once', async () => {
  const fake = await fakeListener(true, true);
  const n = node();
  await oneBatch(n, fake.port, 1, 3);
  const q2 = await oneBatch(n, fake.port, 2, 5);
  assert.equal(q2.replies.map((f) => f.kind), ['eob'], JSON.stringify(q2.replies));
  // The node ends a query once the SCC has its eob, which can be before the listener reads the frames: wait for query 2's eob there, sent after its records on one connection.
  await until(() => fake.frames.some((f) => f.kind === 'eob' && f.auth?.queryId === 2));
  assert.is(fake.conns.length, 2);
  assert.is(fake.hellos, 3, 'first, the refused later hello, the new connection');
  const recordsOf2 = fake.frames.filter((f) => f.kind === 'records' && f.auth?.queryId === 2);
  assert.is(recordsOf2.length, 1);
  n.input.complete();
  await n.completed;
  await fake.server.close();
});

const progress = suite('resultStream: merged progress to the SCC');

progress('batches one frame ended go to the SCC as one eobs (merged rows, merged partial); a single batch as its eob', async () => {
  const { listener, port, got } = await listenerFor();
  const n = node();
  const { q, results } = query(port, 1, 6);
  openOn(listener, q, got);
  n.input.next(recs(results, idOf(1), 3));
  n.input.next({ kind: 'eobs', dataset: 'ds', completes: [1, 2, 3].map((i) => ({ batchId: idOf(i), recordCount: i === 1 ? 3 : 0 })), results });
  const json = JSON.stringify({ v: 2, batches: [idOf(4).toHex(), idOf(5).toHex()].map((h) => [h, 1]), groups: [] });
  n.input.next({ kind: 'aggregate', dataset: 'ds', batchId: idOf(4), json, completes: [4, 5].map((i) => ({ batchId: idOf(i), recordCount: 1 })), results });
  n.input.next({ kind: 'eobs', dataset: 'ds', completes: [{ batchId: idOf(6), recordCount: 0 }], results });
  await until(() => q.ended);
  assert.equal(
    q.replies.map((f) => (f.kind === 'eobs' ? `eobs ${f.batches.map((b) => `${b.batchId.toHex().slice(-1)}:${b.recordCount}`).join(' ')}` : f.kind)),
    ['eobs 1:3 2:0 3:0', 'eobs 4:1 5:1', 'eob'],
  );
  assert.is(n.counters.controls, 6, 'each batch end counted');
  n.input.complete();
  await n.completed;
  await listener.close();
});

reuse.run();
progress.run();
