import { Subject } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import type { Chunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import type { QueryResultElement, QueryResults } from '../../stream/queryElement';
import { StageCounters } from '../../stream/stageCounters';
import { resultStream } from '../../sinks/resultStream';
import { ResultListener, type QueryResult } from '../../hdwp/resultListener';
import { idOf, specOf, TestQuery } from '../support/testQuery';

const RS = 8;

function resultsOf(q: TestQuery, batches: number): QueryResults {
  return { query: q, recordSize: RS, batches, flow: new Flow() };
}

function recs(results: QueryResults, batchId: BatchID, n: number, fill: number): QueryResultElement {
  return { kind: 'records', dataset: 'ds', batchId, count: n, recordSize: RS, buf: Buffer.alloc(n * RS, fill), results };
}

function eob(results: QueryResults, batchId: BatchID, n: number): QueryResultElement {
  return { kind: 'eob', dataset: 'ds', batchId, recordCount: n, results };
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 2));
}

interface Setup {
  listener: ResultListener;
  port: number;
  input: Subject<Chunk>;
  counters: StageCounters;
  completed: Promise<void>;
  teardowns: Promise<unknown>[];
  unsubscribe(): void;
}

async function setup(creditWindow?: number): Promise<Setup> {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0, creditWindow });
  const { port } = await listener.listen();
  const input = new Subject<Chunk>();
  const counters = new StageCounters('records');
  const teardowns: Promise<unknown>[] = [];
  let unsubscribe!: () => void;
  const completed = new Promise<void>((resolve, reject) => {
    const sub = resultStream({ counters, nodeName: 'sn-t', trackTeardown: (w) => teardowns.push(w) })(input).subscribe({ complete: resolve, error: reject });
    unsubscribe = () => sub.unsubscribe();
  });
  return { listener, port, input, counters, completed, teardowns, unsubscribe };
}

/** A query of `batches` whose results go to `s`'s listener, opened there unless `open` is false. */
function query(s: Setup, id: number, batches: number, handler?: (r: QueryResult) => void | Promise<void>, open = true): { q: TestQuery; results: QueryResults; got: QueryResult[] } {
  const q = new TestQuery(specOf(id, [], { returnAddress: { host: '127.0.0.1', port: s.port } }));
  const got: QueryResult[] = [];
  if (open) {
    s.listener.open(q.auth, async (r) => {
      got.push(r);
      await handler?.(r);
    });
  }
  return { q, results: resultsOf(q, batches), got };
}

const sink = suite('resultStream sink');

sink('records, eob and bbn reach the listener with the query block; each batch end is echoed to the SCC; the stream closes after the last', async () => {
  const s = await setup();
  const { q, results, got } = query(s, 1, 3);
  s.input.next(recs(results, idOf(1), 100, 1));
  s.input.next(recs(results, idOf(1), 50, 2));
  s.input.next(eob(results, idOf(1), 150));
  const bbn: QueryResultElement = { kind: 'bbn', dataset: 'ds', batchId: idOf(2), reason: '12 hash mismatch: chain differs', code: 12, results };
  s.input.next(bbn);
  s.input.next(eob(results, idOf(3), 0));
  s.input.complete();
  await s.completed;
  assert.ok(q.ended);
  assert.equal(
    q.replies.map((f) => (f.kind === 'eob' ? `eob ${f.recordCount}` : f.kind === 'bbn' ? `bbn ${f.reason}` : f.kind === 'error' ? `error ${f.code}` : `eobs ${f.batches.length}`)),
    ['eob 150', 'bbn 12 hash mismatch: chain differs', 'eob 0'],
  );
  await until(() => got.length === 3);
  const first = got[0];
  assert.ok(first.kind === 'batch' && first.count === 150 && first.declaredCount === 150 && first.recordSize === RS);
  assert.equal(Buffer.concat(first.records), Buffer.concat([Buffer.alloc(100 * RS, 1), Buffer.alloc(50 * RS, 2)]));
  const failed = got[1];
  assert.ok(failed.kind === 'batchError' && failed.error.code === 12);
  assert.equal(s.counters.snapshot(), { unit: 'records', received: 150, sent: 150, dropped: 0, held: 0, errors: 0, controls: 3 });
  assert.is(results.flow.pending, 0);
  await until(() => s.listener.streams === 0);
  await s.listener.close();
});

sink('a batch unreadable here (13) goes to the SCC only; a query of nothing else opens no result stream', async () => {
  const s = await setup();
  const absent = query(s, 4, 2);
  const unreadable = (results: QueryResults, n: number): QueryResultElement => ({ kind: 'bbn', dataset: 'ds', batchId: idOf(n), reason: '13 batch not stored here', code: 13, results });
  s.input.next(unreadable(absent.results, 1));
  s.input.next(unreadable(absent.results, 2));
  // A second query: records, then an unreadable batch on the stream it already has.
  const mixed = query(s, 5, 2);
  s.input.next(recs(mixed.results, idOf(3), 5, 7));
  s.input.next(eob(mixed.results, idOf(3), 5));
  s.input.next(unreadable(mixed.results, 4));
  s.input.complete();
  await s.completed;
  assert.ok(absent.q.ended && mixed.q.ended);
  assert.equal(absent.q.replies.map((f) => f.kind), ['bbn', 'bbn']);
  assert.equal(mixed.q.replies.map((f) => f.kind), ['eob', 'bbn']);
  await until(() => mixed.got.length === 1);
  assert.is(absent.got.length, 0);
  // Only the second query connected; the client hears nothing of either unreadable batch from the node.
  assert.is(s.listener.stats.acceptedStreams, 1);
  assert.is(mixed.got[0]?.kind, 'batch');
  assert.equal(s.counters.snapshot().controls, 4);
  await until(() => s.listener.streams === 0);
  await s.listener.close();
});

sink('a query asking for a mutual-TLS result stream fails on a node without a certificate, naming why; the node goes on', async () => {
  const s = await setup();
  const q = new TestQuery(specOf(6, [], { returnAddress: { host: '127.0.0.1', port: s.port, tls: true } }));
  const results = resultsOf(q, 1);
  s.input.next(recs(results, idOf(1), 4, 1));
  s.input.next(eob(results, idOf(1), 4));
  const fine = query(s, 7, 1);
  s.input.next(recs(fine.results, idOf(2), 3, 2));
  s.input.next(eob(fine.results, idOf(2), 3));
  s.input.complete();
  await s.completed;
  const err = q.replies.find((f) => f.kind === 'error');
  assert.ok(err && err.kind === 'error', JSON.stringify(q.replies));
  assert.match(err.message, /query 6 asks for a mutual-TLS result stream \(return_address\.tls\), and node 'sn-t' has no certificate: register it with the DMS/);
  assert.equal(fine.q.replies.map((f) => f.kind), ['eob']);
  await until(() => fine.got.length === 1);
  assert.is(s.counters.snapshot().dropped, 4);
  await until(() => s.listener.streams === 0);
  await s.listener.close();
});

sink('queries are independent: a client that stops taking records holds back only its own query', async () => {
  const s = await setup(4096);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const stuck = query(s, 2, 2, async (r) => {
    if (r.kind === 'batch') await gate;
  });
  const fine = query(s, 3, 1);
  // The stuck query's first batch completes and its handler holds; its second batch backs up behind it.
  s.input.next(recs(stuck.results, idOf(1), 10, 1));
  s.input.next(eob(stuck.results, idOf(1), 10));
  for (let i = 0; i < 6; i++) s.input.next(recs(stuck.results, idOf(2), 200, 3));
  await until(() => stuck.got.length === 1);
  s.input.next(recs(fine.results, idOf(9), 300, 4));
  s.input.next(eob(fine.results, idOf(9), 300));
  await until(() => fine.q.ended);
  assert.is(fine.q.replies.length, 1);
  assert.ok(stuck.results.flow.pending > 0, 'the stuck query still has unwritten chunks');
  assert.not.ok(stuck.q.ended);
  release();
  s.input.next(eob(stuck.results, idOf(2), 1200));
  s.input.complete();
  await s.completed;
  assert.ok(stuck.q.ended);
  assert.is(stuck.q.replies.length, 2);
  await s.listener.close();
});

sink('a listener that does not know the query (error 3): the query stops, the SCC is told with code 3, what is queued is dropped', async () => {
  const s = await setup();
  const { q, results } = query(s, 4, 1, undefined, false);
  s.input.next(recs(results, idOf(1), 10, 1));
  s.input.next(recs(results, idOf(1), 10, 1));
  s.input.next(eob(results, idOf(1), 20));
  s.input.complete();
  await s.completed;
  assert.ok(q.ended);
  assert.is(q.replies.length, 1);
  const e = q.replies[0];
  assert.ok(e.kind === 'error' && e.code === 3, JSON.stringify(e));
  assert.match(e.kind === 'error' ? e.message : '', /return address 127\.0\.0\.1:\d+ is not reachable from node 'sn-t': .*query 4 is not open here/);
  assert.equal(q.signal.reason, { code: 3, message: e.kind === 'error' ? e.message : '' });
  assert.is(s.counters.dropped, 20);
  assert.is(s.counters.errors, 1);
  assert.is(s.listener.stats.droppedStreams, 1);
  await s.listener.close();
});

sink('a stopped query (cancel): its stream ends with error 4 at the client; nothing more is echoed to the SCC', async () => {
  const s = await setup(4096);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const { q, results, got } = query(s, 5, 2, async (r) => {
    if (r.kind === 'batch') await gate;
  });
  s.input.next(recs(results, idOf(1), 5, 1));
  s.input.next(eob(results, idOf(1), 5));
  for (let i = 0; i < 4; i++) s.input.next(recs(results, idOf(2), 200, 2));
  await until(() => got.length === 1);
  q.stop({ code: 4, message: 'query 5 cancelled' });
  release();
  await until(() => q.ended);
  await until(() => got.some((r) => r.kind === 'streamError'));
  const e = got.find((r) => r.kind === 'streamError');
  assert.ok(e && e.kind === 'streamError' && e.code === 4);
  assert.is(q.replies.length, 1, 'only the first batch was echoed');
  await until(() => results.flow.pending === 0);
  s.input.complete();
  await s.completed;
  assert.is(s.counters.received, s.counters.sent + s.counters.dropped);
  await s.listener.close();
});

sink('teardown closes open streams with error 9 and hands the closing to the runner', async () => {
  const s = await setup(4096);
  const { results, got } = query(s, 6, 1);
  s.input.next(recs(results, idOf(1), 5, 1));
  await until(() => s.listener.streams === 1 && s.counters.sent === 5);
  s.unsubscribe();
  assert.is(s.teardowns.length, 1);
  await s.teardowns[0];
  await until(() => got.some((r) => r.kind === 'streamError'));
  const e = got.find((r) => r.kind === 'streamError');
  assert.ok(e && e.kind === 'streamError' && e.code === 9);
  await s.listener.close();
});

sink('an element that is not a query result is an error', async () => {
  const s = await setup();
  s.input.next({ kind: 'eob', dataset: 'ds', batchId: idOf(1), recordCount: 0 });
  const err = await s.completed.then(
    () => undefined,
    (x: unknown) => x,
  );
  assert.match(String(err), /resultStream takes query results, got a 'eob' element/);
  await s.listener.close();
});

sink.run();
