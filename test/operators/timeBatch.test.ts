import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, lastValueFrom, Observable, of, Subject, throwError, toArray, VirtualTimeScheduler } from 'rxjs';
import { generateBatchIdTime } from '../../engine-rs/batchId';
import { recordChunk, type Chunk, type RecordChunk } from '../../stream/chunk';
import { StageCounters } from '../../stream/stageCounters';
import { timeBatch, type WindowGroup } from '../../operators/timeBatch';

// Test records: 8 bytes, a big-endian i64 time in seconds. The splitter below is the test's own
// stand-in for the native one (tests may loop per record).
const chunkOf = (...times: number[]): RecordChunk => {
  const buf = Buffer.alloc(8 * times.length);
  times.forEach((t, i) => buf.writeBigInt64BE(BigInt(t), 8 * i));
  return recordChunk('flows', 8, times.length, buf);
};
const split = (interval: number) => (c: RecordChunk): WindowGroup[] => {
  const by = new Map<number, Buffer[]>();
  for (let i = 0; i < c.count; i++) {
    const t = Number(c.buf.readBigInt64BE(8 * i));
    const w = Math.floor(t / interval) * interval;
    by.set(w, [...(by.get(w) ?? []), c.buf.subarray(8 * i, 8 * i + 8)]);
  }
  return [...by].map(([windowStart, bufs]) => ({ windowStart, count: bufs.length, buf: Buffer.concat(bufs) }));
};
const times = (c: Chunk): number[] => (c.kind === 'records' ? Array.from({ length: c.count }, (_, i) => Number(c.buf.readBigInt64BE(8 * i))) : []);
/** A readable trace: "r 120:[125,130]" for records, "eob 120:2" / "bbn 120" for controls. */
const trace = (cs: Chunk[]): string[] =>
  cs.map((c) => {
    if (c.kind === 'records') return `r ${c.batchId?.timeStart}:[${times(c).join(',')}]`;
    if (c.kind === 'eob') return `eob ${c.batchId.timeStart}:${c.recordCount}`;
    if (c.kind === 'bbn') return `bbn ${c.batchId.timeStart}`;
    return 'bytes';
  });

const tb = suite('timeBatch');
tb('values: groups by window with time-form batch ids and closes every batch with an eob at the end', async () => {
  const counters = new StageCounters('records');
  const out = await lastValueFrom(of(chunkOf(125, 130, 185), chunkOf(190, 130)).pipe(timeBatch({ split: split(60), interval: 60, counters }), toArray()));
  assert.equal(trace(out), ['r 120:[125,130]', 'r 180:[185]', 'r 180:[190]', 'r 120:[130]', 'eob 120:3', 'eob 180:2']);
  const first = out[0];
  assert.ok(first.kind === 'records' && first.batchId?.equals(generateBatchIdTime(120, 180, 60)));
  assert.is(first.kind === 'records' && first.batchId?.timeEnd, 180);
  assert.equal(counters.snapshot(), { unit: 'records', received: 5, sent: 5, dropped: 0, held: 0, errors: 0, controls: 2 });
});
tb('a batch is complete when more than maxOpenBatches are open: the oldest closes first', async () => {
  const out = await lastValueFrom(of(chunkOf(0, 61), chunkOf(125)).pipe(timeBatch({ split: split(60), interval: 60, maxOpenBatches: 2 }), toArray()));
  assert.equal(trace(out), ['r 0:[0]', 'r 60:[61]', 'eob 0:1', 'r 120:[125]', 'eob 60:1', 'eob 120:1']);
});
tb('records for a closed batch are dropped, counted and reported', async () => {
  const counters = new StageCounters('records');
  const problems: string[] = [];
  const out = await lastValueFrom(
    of(chunkOf(0), chunkOf(60), chunkOf(5, 65)).pipe(timeBatch({ split: split(60), interval: 60, maxOpenBatches: 1, counters, onProblem: (m) => problems.push(m) }), toArray()),
  );
  assert.equal(trace(out), ['r 0:[0]', 'eob 0:1', 'r 60:[60]', 'r 60:[65]', 'eob 60:2']);
  assert.equal(counters.snapshot(), { unit: 'records', received: 4, sent: 3, dropped: 1, held: 0, errors: 1, controls: 2 });
  assert.match(problems[0], /1 records for window 0 arrived after its batch was closed/);
});
tb('batch timeout closes an idle batch with eob, or bbn when asked', () => {
  for (const action of ['eob', 'bbn'] as const) {
    const scheduler = new VirtualTimeScheduler();
    const src = new Subject<Chunk>();
    const got: Chunk[] = [];
    src.pipe(timeBatch({ split: split(60), interval: 60, batchTimeoutMs: 100, timeoutAction: action, scheduler })).subscribe((c) => got.push(c));
    src.next(chunkOf(10));
    scheduler.flush();
    assert.equal(trace(got), ['r 0:[10]', action === 'eob' ? 'eob 0:1' : 'bbn 0']);
    if (action === 'bbn') assert.match(got[1].kind === 'bbn' ? got[1].reason : '', /no records for 100 ms/);
    src.next(chunkOf(20));
    src.complete();
    assert.equal(trace(got).slice(2), [], 'a record for the timed-out batch is late and dropped');
  }
});
tb('records keep a batch alive: the timer restarts', () => {
  const scheduler = new VirtualTimeScheduler(undefined, 1000);
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  src.pipe(timeBatch({ split: split(60), interval: 60, batchTimeoutMs: 100, scheduler })).subscribe((c) => got.push(c));
  src.next(chunkOf(1));
  scheduler.schedule(() => src.next(chunkOf(2)), 80);
  scheduler.flush();
  assert.equal(trace(got), ['r 0:[1]', 'r 0:[2]', 'eob 0:2']);
});
tb('asynchronous splitter keeps arrival order', async () => {
  const slow = (c: RecordChunk) => new Promise<WindowGroup[]>((r) => setTimeout(() => r(split(60)(c)), c.count === 2 ? 5 : 0));
  const out = await lastValueFrom(of(chunkOf(1, 2), chunkOf(3)).pipe(timeBatch({ split: slow, interval: 60 }), toArray()));
  assert.equal(trace(out), ['r 0:[1,2]', 'r 0:[3]', 'eob 0:3']);
});
tb('empty input completes with nothing', async () => {
  assert.equal(await lastValueFrom(EMPTY.pipe(timeBatch({ split: split(60), interval: 60 }), toArray())), []);
});
tb('upstream error passes through without closing batches', async () => {
  const got: Chunk[] = [];
  const src = new Observable<Chunk>((s) => {
    s.next(chunkOf(1));
    s.error(new Error('disk gone'));
  });
  await new Promise<void>((resolve) =>
    src.pipe(timeBatch({ split: split(60), interval: 60 })).subscribe({ next: (c) => got.push(c), error: (e) => (assert.match(String(e), /disk gone/), resolve()) }),
  );
  assert.equal(trace(got), ['r 0:[1]']);
  await new Promise<void>((resolve) => throwError(() => new Error('x')).pipe(timeBatch({ split: split(60), interval: 60 })).subscribe({ error: () => resolve() }));
});
tb('a splitter that throws errors the stream; a non-record element is rejected', () => {
  const bad = () => {
    throw new Error('bad time field');
  };
  let err: unknown;
  of(chunkOf(1)).pipe(timeBatch({ split: bad, interval: 60 })).subscribe({ error: (e) => (err = e) });
  assert.match(String(err), /bad time field/);
  of<Chunk>({ kind: 'bytes', source: 'x', offset: 0, buf: Buffer.alloc(1) }).pipe(timeBatch({ split: split(60), interval: 60 })).subscribe({ error: (e) => (err = e) });
  assert.match(String(err), /takes record chunks, got a 'bytes'/);
});
tb('early unsubscribe clears timers and emits nothing more', () => {
  const scheduler = new VirtualTimeScheduler();
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  const sub = src.pipe(timeBatch({ split: split(60), interval: 60, batchTimeoutMs: 100, scheduler })).subscribe((c) => got.push(c));
  src.next(chunkOf(1));
  sub.unsubscribe();
  scheduler.flush();
  assert.is(src.observed, false);
  assert.equal(trace(got), ['r 0:[1]']);
});
tb('rejects a bad interval or open-batch limit', () => {
  assert.throws(() => timeBatch({ split: split(60), interval: 0 }), /interval/);
  assert.throws(() => timeBatch({ split: split(60), interval: 60, maxOpenBatches: 0 }), /maxOpenBatches/);
});
tb.run();
