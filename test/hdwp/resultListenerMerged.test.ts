/**
 * The listener's side of merged partials (docs/query.md "Merged partials"), over real sockets: a v2
 * aggregate frame completes every batch it lists (the partial with the first, no eob needed); a v1
 * partial still waits for its eob; a frame overlapping batches already answered is never counted
 * twice; malformed v2 frames fail their batch with code 1 (protocol). An `eobs` frame ends several
 * batches at once, each with the rows held under it; overlapping answered batches never lose rows
 * silently.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeFrame, encodeRecords, type QueryAuth } from '../../index';
import { newQueryToken } from '../../query/token';
import { ResultListener, type QueryResult } from '../../hdwp/resultListener';
import { batch, RawPeer, recordsOf, until } from '../sources/hdwpKit';

const RS = 24;

async function setup(): Promise<{ listener: ResultListener; port: number; auth: QueryAuth; results: QueryResult[] }> {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  const auth: QueryAuth = { queryId: 43, token: newQueryToken() };
  const results: QueryResult[] = [];
  listener.open(auth, (r) => void results.push(r));
  return { listener, port, auth, results };
}

const hello = (auth: QueryAuth): Buffer => encodeFrame({ kind: 'hello', version: 1, role: 'storageNode', datasetId: 'flows', recordSize: RS, auth });
const eob = (n: number, count: number, auth: QueryAuth): Buffer => encodeFrame({ kind: 'eob', batchId: batch(n), recordCount: count, closingHash: new Uint8Array(0), auth });
const aggregate = (n: number, json: string, auth: QueryAuth): Buffer => encodeFrame({ kind: 'aggregate', batchId: batch(n), json, auth });
const eobs = (ends: readonly [number, number][], auth: QueryAuth): Buffer => encodeFrame({ kind: 'eobs', batches: ends.map(([n, c]) => ({ batchId: batch(n), recordCount: c })), auth });
const records = (n: number, count: number, auth: QueryAuth): Buffer => encodeRecords(batch(n), RS, recordsOf(RS, count, n), { auth });
const merged = (ns: readonly number[], counts: readonly number[], groups = '[{"k":[],"m":["7"]}]'): string => `{"v":2,"batches":[${ns.map((n, i) => `["${batch(n).toHex()}",${counts[i]}]`).join(',')}],"groups":${groups}}`;

async function connected(port: number, auth: QueryAuth): Promise<RawPeer> {
  const peer = await RawPeer.connect(port);
  await peer.write(hello(auth));
  await peer.next('credit');
  return peer;
}

const batchesOf = (results: readonly QueryResult[]): Extract<QueryResult, { kind: 'batch' }>[] => results.filter((r): r is Extract<QueryResult, { kind: 'batch' }> => r.kind === 'batch');
const errorsOf = (results: readonly QueryResult[]): Extract<QueryResult, { kind: 'batchError' }>[] => results.filter((r): r is Extract<QueryResult, { kind: 'batchError' }> => r.kind === 'batchError');

const t = suite('ResultListener: merged partials (real sockets)');

t('a v2 frame completes every batch it lists, the partial going with the first, without eobs', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await connected(port, auth);
    await peer.write(aggregate(1, merged([1, 2, 3], [10, 0, 5]), auth));
    await until(() => results.length === 3);
    const got = batchesOf(results);
    assert.equal(
      got.map((r) => [r.batchId.toHex(), r.declaredCount, r.count, r.aggregate?.groups.length]),
      [
        [batch(1).toHex(), 10, 0, 1],
        [batch(2).toHex(), 0, 0, undefined],
        [batch(3).toHex(), 5, 0, undefined],
      ],
    );
    assert.equal(got[0]?.aggregate?.groups, [{ k: [], m: ['7'] }]);
    assert.is(listener.stats.batches, 3);
    // An eob for a batch the frame completed is a duplicate, not a second answer.
    await peer.write(eob(2, 0, auth));
    await until(() => listener.stats.duplicateBatches === 1);
    assert.is(batchesOf(results).length, 3);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

t('a v1 partial still waits for its eob, beside merged frames on the same stream', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await connected(port, auth);
    await peer.write(aggregate(5, '{"v":1,"groups":[{"k":["6"],"m":["3"]}]}', auth));
    await peer.write(aggregate(6, merged([6], [4]), auth));
    await until(() => results.length === 1);
    assert.is(batchesOf(results)[0]?.batchId.toHex(), batch(6).toHex());
    await peer.write(eob(5, 3, auth));
    await until(() => results.length === 2);
    const v1 = batchesOf(results)[1];
    assert.equal([v1?.batchId.toHex(), v1?.declaredCount, v1?.aggregate?.groups], [batch(5).toHex(), 3, [{ k: ['6'], m: ['3'] }]]);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

t('a frame overlapping answered batches: all answered → dropped as duplicates; some → the others fail with code 1', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await connected(port, auth);
    await peer.write(aggregate(1, merged([1, 2], [1, 1]), auth));
    await until(() => results.length === 2);
    // The same two batches again (another replica answered them): nothing new, two duplicates.
    await peer.write(aggregate(2, merged([2, 1], [1, 1]), auth));
    await until(() => listener.stats.duplicateBatches === 2);
    assert.is(results.length, 2);
    // Batch 2 again with a new batch 3: 3 cannot be counted exactly; it fails, naming why.
    await peer.write(aggregate(3, merged([3, 2], [4, 1]), auth));
    await until(() => results.length === 3);
    const [e] = errorsOf(results);
    assert.equal([e?.error.batchId, e?.error.code], [batch(3).toHex(), 1]);
    assert.match(String(e?.error.message), /already answered/);
    assert.is(batchesOf(results).length, 2, 'no partial of the overlapping frame was handed on');
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

t('malformed v2 frames fail their batch with code 1 and hand on no partial', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await connected(port, auth);
    // Not listing its own batch first.
    await peer.write(aggregate(9, merged([8, 9], [1, 1]), auth));
    await until(() => results.length === 1);
    assert.equal([errorsOf(results)[0]?.error.batchId, errorsOf(results)[0]?.error.code], [batch(9).toHex(), 1]);
    assert.match(String(errorsOf(results)[0]?.error.message), /first/);
    // Bad batches lists: upper-case hex, a repeated batch, a negative count, none at all. Each
    // holds the frame's batch until an eob, which then fails it (the partial did not parse).
    const id = batch(10).toHex();
    const bad = [
      `{"v":2,"batches":[["${id.toUpperCase()}",1]],"groups":[]}`,
      `{"v":2,"batches":[["${id}",1],["${id}",1]],"groups":[]}`,
      `{"v":2,"batches":[["${id}",-1]],"groups":[]}`,
      `{"v":2,"batches":[],"groups":[]}`,
      `{"v":1,"batches":[["${id}",1]],"groups":[]}`,
    ];
    for (const [i, json] of bad.entries()) {
      await peer.write(aggregate(10, json, auth));
      await peer.write(eob(10, 1, auth));
      await until(() => errorsOf(results).length === 2 + i);
      const e = errorsOf(results)[1 + i];
      assert.equal([e?.error.batchId, e?.error.code], [id, 1], json);
    }
    assert.is(batchesOf(results).length, 0);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

t('an eobs frame ends every batch it lists, each with the rows held under it', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await connected(port, auth);
    // The rows of batches 1..3 came under batch 2 (the first that matched).
    await peer.write(records(2, 5, auth));
    await peer.write(eobs([[1, 0], [2, 5], [3, 0]], auth));
    await until(() => results.length === 3);
    assert.equal(
      batchesOf(results).map((r) => [r.batchId.toHex(), r.count, r.declaredCount, Buffer.concat(r.records).length]),
      [
        [batch(1).toHex(), 0, 0, 0],
        [batch(2).toHex(), 5, 5, 5 * RS],
        [batch(3).toHex(), 0, 0, 0],
      ],
    );
    assert.equal([listener.stats.batches, listener.stats.records], [3, 5]);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

t('an eobs frame overlapping answered batches: all answered → duplicates; some → the others fail with code 1, no rows handed on', async () => {
  const { listener, port, auth, results } = await setup();
  try {
    const peer = await connected(port, auth);
    await peer.write(Buffer.concat([records(1, 2, auth), eobs([[1, 2], [2, 0]], auth)]));
    await until(() => results.length === 2);
    await peer.write(Buffer.concat([records(2, 3, auth), eobs([[2, 3], [1, 0]], auth)]));
    await until(() => listener.stats.duplicateBatches === 2);
    assert.is(results.length, 2);
    // Batch 3's rows came under batch 1, already answered: batch 3 fails rather than ending empty.
    await peer.write(Buffer.concat([records(1, 4, auth), eobs([[1, 4], [3, 0]], auth)]));
    await until(() => results.length === 3);
    const [e] = errorsOf(results);
    assert.equal([e?.error.batchId, e?.error.code], [batch(3).toHex(), 1]);
    assert.match(String(e?.error.message), /already answered/);
    assert.is(batchesOf(results).length, 2);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

t.run();
