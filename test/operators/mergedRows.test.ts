/**
 * MergedRows (operators/mergedRows.ts): held batches go out together under the first that matched
 * a record, declared with every row, the others with none; thresholds and the timer flush; with a
 * top, only the best of all held batches is sent; flushes go out in order; discard drops.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, type BatchID } from '../../engine-rs/batchId';
import { MergedRows } from '../../operators/mergedRows';

const RS = 2;
const id = (n: number): BatchID => generateBatchIdNumber(n);
const recs = (...keys: number[]): Buffer => Buffer.from(keys.flatMap((k) => [k, 0]));

interface Sent {
  carrier?: number;
  keys: number[];
  completes: [number, number][];
}
function setup(opts: { maxBytes?: number; maxBatches?: number; maxDelayMs?: number; top?: number } = {}): { rows: MergedRows; sent: Sent[] } {
  const sent: Sent[] = [];
  const num = (b: BatchID): number => Number(BigInt(`0x${b.toHex().slice(-16)}`));
  const selectTop = opts.top === undefined ? undefined : (r: Buffer): Buffer => Buffer.from([...r].filter((_, i) => i % RS === 0).sort((a, b) => b - a).slice(0, opts.top).flatMap((k) => [k, 0]));
  const rows = new MergedRows({ recordSize: RS, ...(selectTop && { selectTop }), ...opts }, async (carrier, records, completes) => {
    sent.push({ ...(carrier && { carrier: num(carrier) }), keys: records ? [...records].filter((_, i) => i % RS === 0) : [], completes: completes.map((c) => [num(c.batchId), c.recordCount]) });
  });
  return { rows, sent };
}

const t = suite('MergedRows');

t('one group: rows under the first batch that matched, which is declared with all of them', async () => {
  const { rows, sent } = setup();
  rows.add(id(1), Buffer.alloc(0));
  rows.add(id(2), recs(5, 6));
  rows.add(id(3), recs(7));
  await rows.flush();
  assert.equal(sent, [{ carrier: 2, keys: [5, 6, 7], completes: [[1, 0], [2, 3], [3, 0]] }]);
  await rows.flush();
  assert.is(sent.length, 1, 'nothing held, nothing sent');
});

t('batches that matched nothing complete without a carrier', async () => {
  const { rows, sent } = setup();
  rows.add(id(1), Buffer.alloc(0));
  rows.add(id(2), Buffer.alloc(0));
  await rows.flush();
  assert.equal(sent, [{ keys: [], completes: [[1, 0], [2, 0]] }]);
});

t('the byte and batch thresholds and the timer send groups on their own, in order', async () => {
  const bytes = setup({ maxBytes: 4, maxDelayMs: 10_000 });
  bytes.rows.add(id(1), recs(1));
  bytes.rows.add(id(2), recs(2));
  bytes.rows.add(id(3), recs(3));
  await bytes.rows.flush();
  assert.equal(
    bytes.sent.map((s) => s.completes.map((c) => c[0])),
    [[1, 2], [3]],
  );
  const count = setup({ maxBatches: 2, maxDelayMs: 10_000 });
  for (let i = 1; i <= 5; i++) count.rows.add(id(i), Buffer.alloc(0));
  await count.rows.flush();
  assert.equal(
    count.sent.map((s) => s.completes.length),
    [2, 2, 1],
  );
  const timed = setup({ maxDelayMs: 5 });
  timed.rows.add(id(9), recs(4));
  await new Promise((r) => setTimeout(r, 40));
  assert.equal(timed.sent, [{ carrier: 9, keys: [4], completes: [[9, 1]] }]);
});

t('with a top, only the best of all held batches is sent', async () => {
  const { rows, sent } = setup({ top: 2 });
  rows.add(id(1), recs(3, 9));
  rows.add(id(2), recs(8, 1));
  rows.add(id(3), recs(2));
  await rows.flush();
  assert.equal(sent, [{ carrier: 1, keys: [9, 8], completes: [[1, 2], [2, 0], [3, 0]] }]);
});

t('discard drops what is held; a failed send makes every later flush reject with it', async () => {
  const { rows, sent } = setup({ maxDelayMs: 5 });
  rows.add(id(1), recs(1));
  rows.discard();
  await new Promise((r) => setTimeout(r, 30));
  await rows.flush();
  assert.is(sent.length, 0);
  let fail = true;
  const flaky = new MergedRows({ recordSize: RS, maxDelayMs: 10_000 }, async () => {
    if (fail) {
      fail = false;
      throw new Error('stream closed');
    }
  });
  flaky.add(id(1), recs(1));
  await flaky.flush().then(
    () => assert.unreachable('the first send fails'),
    (e: Error) => assert.match(e.message, /stream closed/),
  );
  flaky.add(id(2), recs(2));
  await flaky.flush().then(
    () => assert.unreachable('the earlier failure is still reported'),
    (e: Error) => assert.match(e.message, /stream closed/),
  );
});

t.run();
