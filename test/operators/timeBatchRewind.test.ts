/**
 * `timeBatch` across a consumer-group rebalance (docs/ingester.md, "Rebalances"): a source holds
 * the batch timeout while it cannot read, and rewinds the open windows when it reads again from its
 * last commit (operators/windowRewind.ts).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Subject, VirtualTimeScheduler } from 'rxjs';
import { recordChunk, type Chunk, type RecordChunk } from '../../stream/chunk';
import { StageCounters } from '../../stream/stageCounters';
import { timeBatch, type WindowGroup, type WindowKeeper } from '../../operators/timeBatch';
import { WindowRewind } from '../../operators/windowRewind';

// Test records: 8 bytes, a big-endian i64 time in seconds (the test's own splitter).
const chunkOf = (...times: number[]): RecordChunk => {
  const buf = Buffer.alloc(8 * times.length);
  times.forEach((t, i) => buf.writeBigInt64BE(BigInt(t), 8 * i));
  return recordChunk('flows', 8, times.length, buf);
};
const split = (c: RecordChunk): WindowGroup[] => {
  const by = new Map<number, Buffer[]>();
  for (let i = 0; i < c.count; i++) {
    const w = Math.floor(Number(c.buf.readBigInt64BE(8 * i)) / 60) * 60;
    by.set(w, [...(by.get(w) ?? []), c.buf.subarray(8 * i, 8 * i + 8)]);
  }
  return [...by].map(([windowStart, bufs]) => ({ windowStart, count: bufs.length, buf: Buffer.concat(bufs) }));
};
const trace = (cs: Chunk[]): string[] =>
  cs.map((c) => {
    if (c.kind === 'records') return `r ${c.batchId?.timeStart}:${c.count}`;
    if (c.kind === 'eob') return `eob ${c.batchId.timeStart}:${c.recordCount}`;
    if (c.kind === 'bbn') return `bbn ${c.batchId.timeStart}`;
    return 'other';
  });

/** A timeBatch on a virtual clock, attached to a fresh run's {@link WindowRewind}. */
function setup(opts: { maxOpenBatches?: number; batchTimeoutMs?: number } = {}) {
  const scheduler = new VirtualTimeScheduler(undefined, 100_000);
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  const rewind = new WindowRewind();
  const counters = new StageCounters('records');
  const problems: string[] = [];
  const sub = src
    .pipe(timeBatch({ split, interval: 60, scheduler, counters, onProblem: (m) => problems.push(m), attach: (k) => rewind.attach(k), ...opts }))
    .subscribe((c) => got.push(c));
  return { scheduler, src, got, rewind, counters, problems, sub };
}

const t = suite('timeBatch rewind and hold (rebalances)');

t('rewind discards every open window with a bbn; re-read records open them afresh, closed windows stay closed', () => {
  const { src, got, rewind, counters, problems } = setup({ maxOpenBatches: 2 });
  src.next(chunkOf(1, 2)); // window 0
  src.next(chunkOf(61)); // window 60
  src.next(chunkOf(121)); // window 120: window 0 is evicted (closed with 2 records)
  assert.is(rewind.rewind('rebalance'), 2, 'two windows discarded');
  assert.equal(trace(got), ['r 0:2', 'r 60:1', 'eob 0:2', 'r 120:1', 'bbn 60', 'bbn 120']);
  const bbn = got[4];
  assert.is(bbn.kind === 'bbn' && bbn.reason, 'rebalance');
  got.length = 0;
  // Read again from the commit: window 0's records are in its closed batch already.
  src.next(chunkOf(2, 61, 121, 122));
  src.complete();
  assert.equal(trace(got), ['r 60:1', 'r 120:2', 'eob 60:1', 'eob 120:2']);
  assert.is(counters.dropped, 1);
  assert.match(problems[0], /1 records for window 0 arrived after its batch was closed \(late, or read again after a rebalance/);
  assert.is(rewind.rewinds, 1);
});

t('a held timeout does not close idle windows; release restarts it from then', () => {
  const { scheduler, src, got, rewind } = setup({ batchTimeoutMs: 100 });
  src.next(chunkOf(1));
  rewind.hold();
  scheduler.schedule(() => src.next(chunkOf(2)), 50);
  scheduler.schedule(() => rewind.release(), 1000);
  scheduler.schedule(() => assert.equal(trace(got), ['r 0:1', 'r 0:1'], 'held: still open after 1 s'), 1099);
  scheduler.flush();
  assert.equal(trace(got), ['r 0:1', 'r 0:1', 'eob 0:2']);
  assert.is(scheduler.now(), 1100, 'closed BATCH_TIMEOUT_MS after the release');
});

t('a timeBatch attached while the source holds starts held; detached at teardown', () => {
  const scheduler = new VirtualTimeScheduler(undefined, 100_000);
  const rewind = new WindowRewind();
  rewind.hold();
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  const sub = src.pipe(timeBatch({ split, interval: 60, batchTimeoutMs: 100, scheduler, attach: (k) => rewind.attach(k) })).subscribe((c) => got.push(c));
  src.next(chunkOf(1));
  scheduler.flush();
  assert.equal(trace(got), ['r 0:1'], 'no timeout while held');
  sub.unsubscribe();
  rewind.rewind('after teardown');
  assert.equal(trace(got), ['r 0:1'], 'a torn-down timeBatch is no longer told');
});

t('a rewind waits for chunks still being split (they were read before it)', async () => {
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  let keeper: WindowKeeper | undefined;
  const slow = (c: RecordChunk): Promise<WindowGroup[]> => new Promise((r) => setTimeout(() => r(split(c)), 5));
  src.pipe(timeBatch({ split: slow, interval: 60, attach: (k) => ((keeper = k), () => undefined) })).subscribe((c) => got.push(c));
  src.next(chunkOf(1));
  keeper?.rewind('rebalance');
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(trace(got), ['r 0:1', 'bbn 0']);
});

t.run();
