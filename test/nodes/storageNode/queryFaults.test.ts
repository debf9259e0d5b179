/**
 * The Storage Node's query path when things go wrong: damaged and tampered segments (bbn 13 / 12
 * for that batch only), result streams that cannot be opened or break mid-stream, cancel (the
 * node's read counter stops moving), and a stop while queries run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HdwpServer } from '../../../hdwp/hdwpServer';
import { parseBbnReason } from '../../../query/batchNotice';
import { serializeHdQuery } from '../../../query/hdQuery';
import { freePort } from '../../support/hdProcess';
import { batchOf, BLOCK, ControlPeer, R, recordsByBatch, startNode, TestClient, untilOk, type TestNode } from './queryKit';

/** CRC-32C (Castagnoli), bitwise: enough for a test that re-seals what it tampered with. */
function crc32c(b: Buffer): number {
  let c = 0xffffffff;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * Changes one record byte of block 0 and re-seals the block CRC and the footer checksum
 * (docs/segment.md), so only the hash chain can tell: what verify_hash exists to catch.
 */
function tamper(file: string): void {
  const s = readFileSync(file);
  const h = s.readUInt32LE(24);
  const t = s.length - 128;
  const f = Number(s.readBigUInt64LE(t + 24));
  const l = s.readUInt8(t + 48);
  s[h + 9] ^= 0x01; // record 0, inside its id
  const records = s.readUInt32LE(f + 8);
  s.writeUInt32LE(crc32c(s.subarray(h, h + records * R)), f + 12);
  s.writeUInt32LE(crc32c(s.subarray(f, t + 116)), t + 116);
  writeFileSync(file, s);
  assert.ok(l === 32, 'sha256 chain');
}

/** Flips one record byte in the middle of the segment, leaving the CRCs as they were. */
function flipByte(file: string): void {
  const s = readFileSync(file);
  const h = s.readUInt32LE(24);
  s[h + R * 40 + 3] ^= 0xff;
  writeFileSync(file, s);
}

const faults = suite('Storage Node query service: damaged segments and broken streams');
let node: TestNode;
let client: TestClient;
const A = batchOf(11, 300);
const B = batchOf(12, 300);
const C = batchOf(13, 300);
const D = batchOf(14, 300);

faults.before(async () => {
  node = await startNode();
  await node.ingest([A, B, C, D]);
  client = await TestClient.start();
  tamper(await node.segmentPath(B.id));
  flipByte(await node.segmentPath(D.id));
});
faults.after(async () => {
  await client.close();
  const r = await node.stop();
  assert.is(r.status, 'aborted');
  assert.ok(r.clean, 'the node stopped in order');
});

faults('verify_hash: a tampered batch (CRCs re-sealed) ends with bbn 12, the other batches arrive', async () => {
  const { auth, json, results } = client.query([A.id, B.id, C.id], { verifyHash: true });
  const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, 3);
  assert.equal(
    ends.map((f) => f.kind),
    ['eob', 'bbn', 'eob'],
  );
  const bbn = ends[1];
  assert.ok(bbn.kind === 'bbn' && bbn.batchId.equals(B.id));
  assert.is(parseBbnReason(bbn.reason).code, 12);
  assert.match(bbn.reason, /^12 hash mismatch: /);
  await untilOk(() => results.length === 3);
  const got = recordsByBatch(results);
  assert.ok(got.get(A.id.toHex())?.equals(A.data));
  assert.ok(got.get(C.id.toHex())?.equals(C.data));
  assert.not.ok(got.has(B.id.toHex()), 'the client keeps nothing of the bbn batch');
  const err = results.find((r) => r.kind === 'batchError');
  assert.ok(err && err.kind === 'batchError' && err.error.code === 12);
  assert.match(await node.metrics(), /^hd_sn_query_batches_total\{outcome="12"\} 1$/m);
  scc.close();
});

faults('without verify_hash the tampered batch is served as stored (only the chain can tell)', async () => {
  const { auth, json, results } = client.query([B.id]);
  const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, 1);
  assert.is(ends[0].kind, 'eob');
  await untilOk(() => results.length === 1);
  const got = recordsByBatch(results).get(B.id.toHex());
  assert.ok(got && got.length === B.data.length && !got.equals(B.data));
  scc.close();
});

faults('a flipped byte (block checksum) ends that batch with bbn 13, with or without verify_hash', async () => {
  for (const verifyHash of [false, true]) {
    const { auth, json, results } = client.query([D.id, A.id], { verifyHash });
    const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, 2);
    assert.equal(
      ends.map((f) => f.kind),
      ['bbn', 'eob'],
    );
    const bbn = ends[0];
    assert.ok(bbn.kind === 'bbn');
    assert.is(parseBbnReason(bbn.reason).code, 13);
    assert.match(bbn.reason, /ERR_SEGMENT_BLOCK_CHECKSUM|checksum/i);
    // 13 goes to the SCC only (it tries the next replica); the client gets the good batch.
    await untilOk(() => results.length === 1);
    assert.ok(recordsByBatch(results).get(A.id.toHex())?.equals(A.data));
    scc.close();
  }
});

faults('a return address nothing listens on: error 7 naming it, at once; the node goes on', async () => {
  const port = await freePort();
  const { auth, q } = client.query([A.id]);
  const json = serializeHdQuery({ ...q, returnAddress: { host: '127.0.0.1', port } });
  const scc = await ControlPeer.open(node.commandPort);
  scc.sendQuery(auth, json);
  const e = await scc.errorOf(auth.queryId);
  assert.is(e.code, 7);
  assert.match(e.message, new RegExp(`^return address 127\\.0\\.0\\.1:${port} is not reachable from node 'sn-query': `));
  assert.is((await fetch(`http://127.0.0.1:${node.obsPort}/health`)).status, 200);
  scc.close();
});

faults('a result stream dropped mid-stream by the client: the query stops with an error to the SCC; the node serves the next query', async () => {
  // A listener that takes the hello, grants credit, and hangs up on the first records frame.
  let records = 0;
  const rude = new HdwpServer({
    host: '127.0.0.1',
    port: 0,
    role: 'queryClient',
    roles: ['storageNode'],
    creditWindow: 8192,
    onConnection: (conn) => ({
      onFrame: (f) => {
        if (f.kind === 'records' && ++records === 1) conn.close();
      },
    }),
  });
  const { port } = await rude.listen();
  const big = batchOf(21, 4000);
  await node.ingest([big]);
  const { auth, q } = client.query([big.id, A.id]);
  const scc = await ControlPeer.open(node.commandPort);
  scc.sendQuery(auth, serializeHdQuery({ ...q, returnAddress: { host: '127.0.0.1', port } }));
  const e = await scc.errorOf(auth.queryId);
  assert.is(e.code, 7);
  assert.match(e.message, /result stream failed/);
  assert.is(scc.of(auth.queryId).filter((f) => f.kind === 'eob').length, 0);
  await rude.close();
  // The node is fine: the next query on the same control connection completes.
  const next = client.query([A.id]);
  scc.sendQuery(next.auth, next.json);
  assert.is((await scc.batchEnds(next.auth.queryId, 1))[0].kind, 'eob');
  await untilOk(() => next.results.length === 1);
  scc.close();
});

faults('cancel: the node stops reading within one block step (hd_sn_query_blocks_read_total stops), the client gets error 4', async () => {
  // 16 batches of 6400 records (400 blocks each); the client holds the first batch, so the stream backs up.
  const perBatch = 400 * BLOCK;
  const batches = Array.from({ length: 16 }, (_, i) => batchOf(100 + i, perBatch));
  await node.ingest(batches);
  const slow = await TestClient.start(8192);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let first = false;
  const { auth, json, results } = slow.query(
    batches.map((b) => b.id),
    {},
    async (r) => {
      if (r.kind === 'batch' && !first) {
        first = true;
        await gate;
      }
    },
  );
  const before = await node.counter('hd_sn_query_blocks_read_total');
  const scc = await ControlPeer.open(node.commandPort);
  scc.sendQuery(auth, json);
  await untilOk(() => first);
  assert.ok((await node.counter('hd_sn_query_blocks_read_total')) > before, 'the query was reading');
  scc.sendCancel(auth);
  const e = await scc.errorOf(auth.queryId);
  assert.is(e.code, 4);
  assert.is(e.message, `query ${auth.queryId} cancelled`);
  const atCancel = await node.counter('hd_sn_query_blocks_read_total');
  release();
  await untilOk(() => results.some((r) => r.kind === 'streamError'));
  const stream = results.find((r) => r.kind === 'streamError');
  assert.ok(stream && stream.kind === 'streamError' && stream.code === 4);
  // Let anything still queued run to its end, then look again.
  await untilOk(async () => (await node.counter('hd_sn_queries_active')) === 0);
  const after = await node.counter('hd_sn_query_blocks_read_total');
  assert.ok(after - atCancel <= 400, `read ${after - atCancel} blocks after the cancel, one step is at most 400`);
  assert.ok(after - before < 16 * 400 - 400, `read ${after - before} of ${16 * 400} blocks: the reads stopped early`);
  // No progress for a cancelled query after its error 4.
  const errAt = scc.of(auth.queryId).findIndex((f) => f.kind === 'error');
  assert.is(scc.of(auth.queryId).slice(errAt + 1).length, 0);
  await slow.close();
  scc.close();
});

faults.run();
