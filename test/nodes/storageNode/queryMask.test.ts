/**
 * HDQuery `field_mask` on a Storage Node (docs/query.md, docs/proxy.md): every record streamed is
 * ANDed with the mask after filtering, so a hidden field arrives as zeros while the filters still
 * saw its stored value and every other byte arrives intact; a mask that is not one record long is
 * refused with error 11 naming `field_mask`.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { batchOf, ControlPeer, R, recordsByBatch, startNode, TestClient, untilOk, type TestNode } from './queryKit';

const BATCHES = [batchOf(51, 700), batchOf(52, 33)];
/** `price` (offset 16, 4 bytes) and `sym` (offset 24, 16 bytes) hidden. */
const MASK = Buffer.alloc(R, 0xff);
MASK.fill(0, 16, 20);
MASK.fill(0, 24, 40);

let node: TestNode;
let client: TestClient;
let scc: ControlPeer;

const mask = suite('Storage Node field_mask');
mask.before(async () => {
  node = await startNode();
  await node.ingest(BATCHES);
  client = await TestClient.start();
  scc = await ControlPeer.open(node.commandPort);
});
mask.after(async () => {
  scc.close();
  await client.close();
  await node.stop();
});

mask('hidden fields arrive as zeros, the rest intact, after filters that read the hidden field', async () => {
  // The filter reads `price`, which the mask hides: the match uses the stored value.
  const subQueries = [{ filters: [{ field: 'price', op: 'ge' as const, value: '0' }] }];
  const { auth, json, results } = client.query(
    BATCHES.map((b) => b.id),
    { subQueries, fieldMask: MASK },
  );
  assert.is((JSON.parse(json) as { field_mask: string }).field_mask, MASK.toString('hex'));
  scc.sendQuery(auth, json);
  const ends = await scc.batchEnds(auth.queryId, BATCHES.length);
  assert.ok(ends.every((f) => f.kind === 'eob'), JSON.stringify(scc.of(auth.queryId).map((f) => (f.kind === 'error' ? f.message : f.kind))));
  await untilOk(() => results.length === BATCHES.length);
  const got = recordsByBatch(results);
  let total = 0;
  for (const b of BATCHES) {
    const kept: Buffer[] = [];
    for (let at = 0; at < b.data.length; at += R) if (b.data.readInt32LE(at + 16) >= 0) kept.push(b.data.subarray(at, at + R));
    const want = Buffer.concat(kept);
    const have = got.get(b.id.toHex()) ?? Buffer.alloc(0);
    assert.is(have.length, want.length, `batch ${b.id.toHex().slice(0, 8)}: record count`);
    for (let at = 0; at < have.length; at += R) {
      const rec = have.subarray(at, at + R);
      const src = want.subarray(at, at + R);
      assert.ok(rec.subarray(16, 20).equals(Buffer.alloc(4)), `record ${at / R}: price is zero`);
      assert.ok(rec.subarray(24, 40).equals(Buffer.alloc(16)), `record ${at / R}: sym is zero`);
      assert.ok(rec.subarray(0, 16).equals(src.subarray(0, 16)), `record ${at / R}: ts and id intact`);
      assert.ok(rec.subarray(20, 24).equals(src.subarray(20, 24)), `record ${at / R}: qty and side intact`);
    }
    total += have.length / R;
  }
  assert.ok(total > 100, `${total} records matched`);
});

mask('without a filter (whole blocks) the mask applies too', async () => {
  const { auth, json, results } = client.query([BATCHES[1].id], { fieldMask: MASK });
  scc.sendQuery(auth, json);
  await scc.batchEnds(auth.queryId, 1);
  await untilOk(() => results.length === 1);
  const have = recordsByBatch(results).get(BATCHES[1].id.toHex()) ?? Buffer.alloc(0);
  const want = Buffer.from(BATCHES[1].data);
  for (let at = 0; at < want.length; at += R) for (let i = 0; i < R; i++) want[at + i] &= MASK[i];
  assert.ok(have.equals(want));
});

mask('a mask that is not one record long: error 11 naming field_mask, nothing streamed', async () => {
  for (const len of [R - 1, R + 1, 2 * R]) {
    const { auth, json, results } = client.query([BATCHES[0].id], { fieldMask: Buffer.alloc(len, 0xff) });
    scc.sendQuery(auth, json);
    const e = await scc.errorOf(auth.queryId);
    assert.is(e.code, 11);
    assert.match(e.message, new RegExp(`^field_mask: ${len} bytes, the records of 'ticks' are ${R} bytes`));
    assert.is(results.filter((r) => r.kind === 'batch').length, 0);
  }
});

mask.run();
