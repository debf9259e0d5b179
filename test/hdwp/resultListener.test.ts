import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeFrame, encodeRecords, type QueryAuth } from '../../index';
import { bbnReason } from '../../query/batchNotice';
import { newQueryToken } from '../../query/token';
import { ResultListener, type QueryResult } from '../../hdwp/resultListener';
import { batch, RawPeer, recordsOf, until } from '../sources/hdwpKit';

const RS = 24;

async function setup(): Promise<{ listener: ResultListener; port: number; auth: QueryAuth; results: QueryResult[] }> {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  const auth: QueryAuth = { queryId: 42, token: newQueryToken() };
  const results: QueryResult[] = [];
  listener.open(auth, (r) => void results.push(r));
  return { listener, port, auth, results };
}

const hello = (auth?: QueryAuth, role: 'storageNode' | 'scc' = 'storageNode'): Buffer => encodeFrame({ kind: 'hello', version: 1, role, datasetId: 'flows', recordSize: RS, ...(auth ? { auth } : {}) });
const records = (n: number, data: Buffer, auth: QueryAuth): Buffer => encodeRecords(batch(n), RS, data, { auth });
const eob = (n: number, count: number, auth: QueryAuth): Buffer => encodeFrame({ kind: 'eob', batchId: batch(n), recordCount: count, closingHash: new Uint8Array(0), auth });

const rl = suite('ResultListener (real sockets)');

rl('a batch is delivered once its eob arrives, records as sent; credit is granted', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await RawPeer.connect(port);
    await peer.write(hello(auth));
    const credit = await peer.next('credit');
    assert.ok(credit.kind === 'credit' && credit.bytes > 0);
    const a = recordsOf(RS, 10, 1);
    const b = recordsOf(RS, 5, 2);
    await peer.write(Buffer.concat([records(1, a, auth), records(1, b, auth)]));
    await new Promise((r) => setTimeout(r, 20));
    assert.is(results.length, 0, 'nothing before the eob');
    await peer.write(eob(1, 15, auth));
    await until(() => results.length === 1);
    const r = results[0];
    assert.ok(r.kind === 'batch');
    if (r.kind !== 'batch') return;
    assert.is(r.queryId, 42);
    assert.ok(r.batchId.equals(batch(1)));
    assert.is(r.count, 15);
    assert.is(r.declaredCount, 15);
    assert.is(r.recordSize, RS);
    assert.ok(Buffer.concat(r.records).equals(Buffer.concat([a, b])));
    assert.is(listener.stats.batches, 1);
    assert.is(listener.stats.records, 15);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

rl('a stream with a wrong token, an unknown query or no query block is refused with error 3 and counted dropped', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const wrongToken = { queryId: auth.queryId, token: newQueryToken() };
    for (const h of [hello(wrongToken), hello({ queryId: 7, token: auth.token }), hello()]) {
      const peer = await RawPeer.connect(port);
      await peer.write(h);
      const e = await peer.errorAndClose();
      assert.is(e.code, 3);
    }
    assert.is(listener.stats.droppedStreams, 3);
    assert.is(listener.stats.acceptedStreams, 0);

    // A good hello, then a records frame with another token: the stream is dropped, its partial batch too.
    const peer = await RawPeer.connect(port);
    await peer.write(hello(auth));
    await peer.next('credit');
    await peer.write(records(1, recordsOf(RS, 3), auth));
    await peer.write(Buffer.concat([records(1, recordsOf(RS, 3), wrongToken), eob(1, 6, auth)]));
    const e = await peer.errorAndClose();
    assert.is(e.code, 3);
    assert.match(e.message, /token does not match/);
    assert.is(listener.stats.droppedStreams, 4);
    assert.is(listener.stats.partialBatchesDropped, 1);
    assert.is(results.length, 0, 'nothing of a dropped stream reaches the query');
  } finally {
    await listener.close();
  }
});

rl('a stream that closes mid-batch loses that batch only; complete batches before it stay', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await RawPeer.connect(port);
    await peer.write(hello(auth));
    await peer.next('credit');
    await peer.write(Buffer.concat([records(1, recordsOf(RS, 4), auth), eob(1, 4, auth), records(2, recordsOf(RS, 4), auth)]));
    await until(() => results.length === 1);
    peer.socket.destroy();
    await until(() => listener.stats.partialBatchesDropped === 1);
    assert.is(results.length, 1);
    assert.ok(results[0].kind === 'batch' && results[0].batchId.equals(batch(1)));

    // The batch comes again from another replica: delivered whole.
    const other = await RawPeer.connect(port);
    await other.write(hello(auth));
    await other.next('credit');
    const data = recordsOf(RS, 6, 9);
    await other.write(Buffer.concat([records(2, data, auth), eob(2, 6, auth)]));
    await until(() => results.length === 2);
    const r = results[1];
    assert.ok(r.kind === 'batch' && Buffer.concat(r.records).equals(data));
    other.socket.end();
    await other.closed;
  } finally {
    await listener.close();
  }
});

rl('frames split at every byte give the same batches', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const data1 = recordsOf(RS, 7, 3);
    const data2 = recordsOf(RS, 2, 4);
    const bytes = Buffer.concat([hello(auth), records(1, data1, auth), records(2, data2, auth), eob(2, 2, auth), eob(1, 7, auth)]);
    const steps = [1, 3, 17, 101];
    for (const [i, step] of steps.entries()) {
      const peer = await RawPeer.connect(port);
      for (let at = 0; at < bytes.length; at += step) await peer.write(bytes.subarray(at, at + step));
      // The first stream delivers both batches; every later one repeats them (dropped as duplicates).
      await until(() => results.length === 2 && listener.stats.duplicateBatches === 2 * i);
      peer.socket.end();
      await peer.closed;
    }
    const got = results.map((r) => (r.kind === 'batch' ? [r.batchId.toHex(), Buffer.concat(r.records).toString('hex')] : []));
    assert.equal(got, [
      [batch(2).toHex(), data2.toString('hex')],
      [batch(1).toHex(), data1.toString('hex')],
    ]);
    // Later copies of completed batches are dropped as duplicates.
    assert.is(listener.stats.batches, 2);
    assert.is(listener.stats.duplicateBatches, 6);
  } finally {
    await listener.close();
  }
});

rl('a bbn fails its batch with the code of its reason; a copy that completes later withdraws the error', async () => {
  const { listener, port, auth, results } = await setup();
  const q2 = { queryId: 43, token: newQueryToken() };
  const results2: QueryResult[] = [];
  const open2 = listener.open(q2, (r) => void results2.push(r));
  try {
    const peer = await RawPeer.connect(port);
    await peer.write(hello(auth));
    await peer.next('credit');
    await peer.write(Buffer.concat([records(1, recordsOf(RS, 2), auth), encodeFrame({ kind: 'bbn', batchId: batch(1), reason: bbnReason(13, 'segment missing'), auth })]));
    await until(() => results.length === 1);
    const r = results[0];
    assert.ok(r.kind === 'batchError');
    if (r.kind === 'batchError') {
      assert.is(r.error.code, 13);
      assert.is(r.error.batchId, batch(1).toHex());
      assert.match(r.error.message, /segment missing/);
    }
    // The SCC's own notice stream (role scc) carries another query's batches on the same listener.
    const scc = await RawPeer.connect(port);
    await scc.write(hello(q2, 'scc'));
    await scc.next('credit');
    await scc.write(encodeFrame({ kind: 'bbn', batchId: batch(5), reason: bbnReason(7, 'no replica left'), auth: q2 }));
    await until(() => results2.length === 1);
    assert.equal(open2.batchErrors().map((e) => e.code), [7]);

    const other = await RawPeer.connect(port);
    await other.write(hello(auth));
    await other.next('credit');
    await other.write(Buffer.concat([records(1, recordsOf(RS, 2), auth), eob(1, 2, auth)]));
    await until(() => results.length === 2);
    assert.ok(results[1].kind === 'batch');
    // A sender's error frame ends its stream; the query is told.
    await peer.write(encodeFrame({ kind: 'error', code: 4, message: 'query 42 cancelled', auth }));
    await until(() => results.length === 3);
    const s = results[2];
    assert.ok(s.kind === 'streamError' && s.code === 4);
    for (const p of [peer, scc, other]) {
      p.socket.end();
      await p.closed;
    }
  } finally {
    await listener.close();
  }
});

rl('a closed query refuses new streams; one query id opens once', async () => {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  try {
    const auth = { queryId: 1, token: newQueryToken() };
    const q = listener.open(auth, () => undefined);
    assert.throws(() => listener.open(auth, () => undefined), /query 1 is already open/);
    q.close();
    const peer = await RawPeer.connect(port);
    await peer.write(hello(auth));
    assert.is((await peer.errorAndClose()).code, 3);
  } finally {
    await listener.close();
  }
});

rl.run();
