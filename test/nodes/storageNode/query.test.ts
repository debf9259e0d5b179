/**
 * The Storage Node's query path end to end in one process: pipelines/storage-node.yaml with
 * batches ingested through its production port, queries on its command port from an SCC-side
 * control connection, results at the client's ResultListener. Real sockets, real segments.
 */
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeRecords, generateBatchIdNumber } from '../../../engine-rs/index';
import { builtinRegistry } from '../../../roles/builtins';
import { parsePipeline } from '../../../pipelines/load';
import { parseBbnReason } from '../../../query/batchNotice';
import { batchOf, ControlPeer, R, recordsByBatch, startNode, TestClient, untilOk, type TestNode } from './queryKit';

const BATCHES = [batchOf(1, 700), batchOf(2, 33), batchOf(3, 0), batchOf(4, 1500)];

let node: TestNode;
let client: TestClient;

const q = suite('Storage Node query service: results, progress, refusals');
q.before(async () => {
  node = await startNode();
  await node.ingest(BATCHES);
  client = await TestClient.start();
});
q.after(async () => {
  await client.close();
  await node.stop();
});

q('a query without filters streams every record of each batch to the return address, one eob per batch, progress to the SCC', async () => {
  const ids = BATCHES.map((b) => b.id);
  const { auth, json, results } = client.query(ids);
  const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, ids.length);
  assert.equal(
    ends.map((f) => f.kind),
    ['eob', 'eob', 'eob', 'eob'],
  );
  // Echoes carry the query block and the records sent for the batch.
  for (const f of ends) {
    assert.ok(f.kind === 'eob' && f.auth && Buffer.from(f.auth.token).equals(Buffer.from(auth.token)));
  }
  assert.equal(
    ends.map((f) => (f.kind === 'eob' ? f.recordCount : -1)),
    BATCHES.map((b) => b.data.length / R),
  );
  await untilOk(() => results.filter((r) => r.kind === 'batch').length === ids.length);
  const got = recordsByBatch(results);
  for (const b of BATCHES) assert.ok(got.get(b.id.toHex())?.equals(b.data), `batch ${b.id.toHex().slice(-4)}`);
  scc.close();
});

q('a bad query is answered with error 11 naming the key; the control connection stays open', async () => {
  const scc = await ControlPeer.open(node.commandPort);
  const bad = client.query([BATCHES[0].id]);
  scc.sendQuery(bad.auth, bad.json.replace('"verify_hash"', '"verify_hsh"'));
  const e1 = await scc.errorOf(bad.auth.queryId);
  assert.is(e1.code, 11);
  assert.match(e1.message, /verify_hsh/);

  const empty = client.query([BATCHES[0].id]);
  scc.sendQuery(empty.auth, empty.json.replace('"sub_queries":[]', '"sub_queries":[{"filters":[]}]'));
  const e2 = await scc.errorOf(empty.auth.queryId);
  assert.is(e2.code, 11);
  assert.match(e2.message, /sub_queries\[0\]\.filters/);

  const many = client.query([BATCHES[0].id]);
  const branch = '{"filters":[{"field":"qty","op":"eq","value":"1"}]}';
  scc.sendQuery(many.auth, many.json.replace('"sub_queries":[]', `"sub_queries":[${Array(17).fill(branch).join(',')}]`));
  const e3 = await scc.errorOf(many.auth.queryId);
  assert.is(e3.code, 11);
  assert.match(e3.message, /too many branches: 17 sub-queries, the limit is 16/);

  const notJson = client.query([BATCHES[0].id]);
  scc.sendQuery(notJson.auth, '{"query_id": "x"}');
  assert.is((await scc.errorOf(notJson.auth.queryId)).code, 11);

  // The frame's query id and token must be the JSON's.
  const other = client.query([BATCHES[0].id]);
  scc.sendQuery({ queryId: other.auth.queryId + 1000, token: other.auth.token }, other.json);
  const e4 = await scc.errorOf(other.auth.queryId + 1000);
  assert.is(e4.code, 11);
  assert.match(e4.message, /^query_id: /);

  // Still open: a good query on the same connection runs.
  const good = client.query([BATCHES[1].id]);
  scc.sendQuery(good.auth, good.json);
  const ends = await scc.batchEnds(good.auth.queryId, 1);
  assert.is(ends[0].kind, 'eob');
  scc.close();
});

q('a batch this node does not hold: bbn 13 to the SCC only (it asks the next replica); the other batches arrive', async () => {
  const missing = generateBatchIdNumber(999n);
  const { auth, json, results } = client.query([BATCHES[1].id, missing, BATCHES[2].id]);
  const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, 3);
  assert.equal(
    ends.map((f) => f.kind),
    ['eob', 'bbn', 'eob'],
  );
  const bbn = ends[1];
  assert.ok(bbn.kind === 'bbn');
  assert.ok(bbn.batchId.equals(missing));
  assert.is(parseBbnReason(bbn.reason).code, 13);
  assert.match(bbn.reason, /^13 batch unreadable: batch [0-9a-f]{128} of 'ticks' is not held by node 'sn-query'$/);
  await untilOk(() => results.length === 2);
  assert.is(results.filter((r) => r.kind === 'batch').length, 2);
  // The client is told by the SCC once no replica is left (nodes/scc/queryRun.ts), never by a node.
  await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(results.some((r) => r.kind === 'batchError'), 'no bbn 13 reaches the client from the node');
  scc.close();
});

q('the same query on a second control connection (a leg re-routed from another replica) runs beside the first', async () => {
  const { auth, json } = client.query([BATCHES[1].id, BATCHES[2].id]);
  const [a, b] = await Promise.all([ControlPeer.ask(node.commandPort, auth, json, 2), ControlPeer.ask(node.commandPort, auth, json, 2)]);
  assert.equal(a.ends.map((f) => f.kind), ['eob', 'eob']);
  assert.equal(b.ends.map((f) => f.kind), ['eob', 'eob'], 'not refused as already running');
  a.scc.close();
  b.scc.close();
});

q('cancel of an unknown query is error 3; records on the query port are a protocol error (1) that closes only that connection', async () => {
  const scc = await ControlPeer.open(node.commandPort);
  scc.sendCancel({ queryId: 4242, token: Buffer.alloc(16, 7) });
  assert.is((await scc.errorOf(4242)).code, 3);
  const wrong = await ControlPeer.open(node.commandPort);
  wrong.socket.write(encodeRecords(BATCHES[0].id, R, BATCHES[0].data.subarray(0, R)));
  await wrong.closed;
  const err = wrong.frames.find((f) => f.kind === 'error');
  assert.ok(err && err.kind === 'error' && err.code === 1, JSON.stringify(wrong.frames.map((f) => f.kind)));
  // The first connection still works.
  const good = client.query([BATCHES[1].id]);
  scc.sendQuery(good.auth, good.json);
  assert.is((await scc.batchEnds(good.auth.queryId, 1))[0].kind, 'eob');
  scc.close();
});

q.run();

const wiring = suite('Storage Node query stages: wiring');

wiring('the query stages find the node wherever the segmentStore stage is written in the file', async () => {
  // The store block moved after the query stages.
  const moved = await startNode({
    edit: (y) => {
      const at = y.indexOf('  store:');
      const end = y.indexOf('  # The query path');
      return `${y.slice(0, at)}${y.slice(end)}\n${y.slice(at, end)}`;
    },
  });
  try {
    await moved.ingest([BATCHES[1]]);
    const c = await TestClient.start();
    const { auth, json, results } = c.query([BATCHES[1].id]);
    const { scc, ends } = await ControlPeer.ask(moved.commandPort, auth, json, 1);
    assert.is(ends[0].kind, 'eob');
    await untilOk(() => results.length === 1);
    scc.close();
    await c.close();
  } finally {
    await moved.stop();
  }
});

wiring('query stages without the storageNode service they read fail at load, naming the line and the service (issue #16: no longer at run)', async () => {
  const text = ['pipeline: queries-alone', 'stages:', '  queries:', '    type: queryListener', '  scan:', '    type: scan', '    inputs: [queries]', '  results:', '    type: resultStream', '    inputs: [scan]', ''].join('\n');
  const loaded = parsePipeline(text, path.join(os.tmpdir(), 'alone.yaml'), { registry: builtinRegistry(), env: {} });
  assert.not.ok(loaded.ok);
  if (loaded.ok) return;
  const scanProblem = loaded.problems.find((p) => p.line === 5);
  assert.match(String(scanProblem?.message), /stage 'scan' \(scan\) needs a 'storageNode' service .*declare one under services: \(type: storageNode\)/);
  assert.equal(loaded.problems.map((p) => p.line), [3, 5, 8]);
});

wiring.run();
