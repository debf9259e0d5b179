import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, lastValueFrom, Observable, of, Subject, toArray, VirtualTimeScheduler } from 'rxjs';
import { generateBatchIdNumber, type BatchID } from '../../engine-rs/batchId';
import { batchTimeout, type BatchState } from '../../operators/batchTimeout';
import type { AckResult, Chunk } from '../../stream/chunk';
import { StageCounters } from '../../stream/stageCounters';

const id = (n: number): BatchID => generateBatchIdNumber(n);
const recs = (n: number, count: number, dataset = 'ds'): Chunk => ({ kind: 'records', dataset, batchId: id(n), count, recordSize: 4, buf: Buffer.alloc(4 * count, n) });
const acks: AckResult[] = [];
const eob = (n: number, recordCount: number, dataset = 'ds'): Chunk => ({ kind: 'eob', dataset, batchId: id(n), recordCount, ack: (r) => acks.push(r) });
const bbn = (n: number, dataset = 'ds'): Chunk => ({ kind: 'bbn', dataset, batchId: id(n), reason: 'sender gave up', ack: (r) => acks.push(r) });
const num = (b: BatchID): number => Number(Buffer.from(b.bytes).readBigUInt64BE(56));
/** "r 1:3" for records, "eob 1:3" / "bbn 1" for controls. */
const trace = (cs: Chunk[]): string[] =>
  cs.map((c) => (c.kind === 'records' ? `r ${num(c.batchId as BatchID)}:${c.count}` : c.kind === 'eob' ? `eob ${num(c.batchId)}:${c.recordCount}` : c.kind === 'bbn' ? `bbn ${num(c.batchId)}` : 'bytes'));

/** Runs `fn` against the operator on virtual time; returns what came out. */
const virtual = (o: { action: 'eob' | 'bbn'; timeoutMs?: number; counters?: StageCounters; problems?: string[]; states?: string[]; maxOpen?: number }, fn: (src: Subject<Chunk>, at: (ms: number, f: () => void) => void) => void): Chunk[] => {
  const scheduler = new VirtualTimeScheduler(undefined, 100_000);
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  src
    .pipe(
      batchTimeout({
        timeoutMs: o.timeoutMs ?? 100,
        action: o.action,
        scheduler,
        maxOpenBatches: o.maxOpen,
        counters: o.counters,
        onProblem: (m) => o.problems?.push(m),
        onTransition: (b, _d, to: BatchState) => o.states?.push(`${num(b)} ${to}`),
      }),
    )
    .subscribe((c) => got.push(c));
  fn(src, (ms, f) => scheduler.schedule(f, ms));
  scheduler.flush();
  return got;
};

const st = suite('batchTimeout: state table');
st('open → closed on eob, open → discarded on bbn; elements pass through unchanged', () => {
  acks.length = 0;
  const counters = new StageCounters('records');
  const states: string[] = [];
  const a = recs(1, 3);
  const got = virtual({ action: 'eob', timeoutMs: 0, counters, states }, (src) => {
    src.next(a);
    src.next(recs(2, 1));
    src.next(eob(1, 3));
    src.next(bbn(2));
    src.complete();
  });
  assert.equal(trace(got), ['r 1:3', 'r 2:1', 'eob 1:3', 'bbn 2']);
  assert.is(got[0], a, 'the same element object, not a copy');
  assert.equal(states, ['1 open', '2 open', '1 closed', '2 discarded']);
  assert.equal(acks, [], 'closing elements are forwarded with their ack for the sink to answer');
  assert.equal(counters.snapshot(), { unit: 'records', received: 4, sent: 4, dropped: 0, held: 0, errors: 0, controls: 2 });
});
st('records after close or discard are refused, counted dropped and reported', () => {
  const counters = new StageCounters('records');
  const problems: string[] = [];
  const got = virtual({ action: 'eob', timeoutMs: 0, counters, problems, maxOpen: 1 }, (src) => {
    src.next(recs(1, 2));
    src.next(eob(1, 2));
    src.next(recs(1, 5));
    src.next(recs(2, 1));
    src.next(recs(3, 7));
  });
  assert.equal(trace(got), ['r 1:2', 'eob 1:2', 'r 2:1']);
  assert.equal(counters.snapshot(), { unit: 'records', received: 15, sent: 3, dropped: 12, held: 0, errors: 2, controls: 1 });
  assert.match(problems[0], /5 records for batch .* refused: the batch is closed \(closed by its eob\)/);
  assert.match(problems[1], /7 records .* the batch is discarded \(refused: 1 batches are open already\)/);
});
st('a second eob is refused through its ack; a repeated bbn is acknowledged again; bbn after close refused', () => {
  acks.length = 0;
  const got = virtual({ action: 'eob', timeoutMs: 0 }, (src) => {
    src.next(eob(1, 0));
    src.next(eob(1, 0));
    src.next(recs(2, 1));
    src.next(bbn(2));
    src.next(bbn(2));
    src.next(bbn(1));
  });
  assert.equal(trace(got), ['eob 1:0', 'r 2:1', 'bbn 2'], 'an empty batch closes with its eob alone');
  assert.is(acks.length, 3);
  assert.ok(!acks[0].ok && acks[0].code === 1 && /is closed \(closed by its eob\); its eob is refused/.test(acks[0].message));
  assert.equal(acks[1], { ok: true });
  assert.ok(!acks[2].ok && /is closed .* its bbn is refused/.test(acks[2].message));
});
st('batch ids are per dataset', () => {
  const got = virtual({ action: 'eob', timeoutMs: 0 }, (src) => {
    src.next(recs(1, 1, 'a'));
    src.next(eob(1, 1, 'a'));
    src.next(recs(1, 1, 'b'));
  });
  assert.equal(trace(got), ['r 1:1', 'eob 1:1', 'r 1:1']);
});
st('too many open batches: the new batch is refused as a whole, its eob answered with the reason', () => {
  acks.length = 0;
  const scheduler = new VirtualTimeScheduler();
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  src.pipe(batchTimeout({ timeoutMs: 0, action: 'eob', maxOpenBatches: 1, scheduler })).subscribe((c) => got.push(c));
  src.next(recs(1, 1));
  src.next(recs(2, 1));
  src.next(eob(2, 1));
  assert.equal(trace(got), ['r 1:1']);
  assert.ok(!acks[0].ok && /1 batches are open already/.test(acks[0].message));
});
st.run();

const to = suite('batchTimeout: BATCH_TIMEOUT_MS and TIMEOUT_ACTION (virtual time)');
to('TIMEOUT_ACTION=EOB closes an idle batch with an eob counting the records seen', () => {
  acks.length = 0;
  const problems: string[] = [];
  const states: string[] = [];
  const got = virtual({ action: 'eob', problems, states }, (src, at) => {
    src.next(recs(1, 2));
    at(60, () => src.next(recs(1, 3)));
    at(150, () => src.next(recs(2, 1)));
    at(200, () => src.next(recs(1, 4)));
    at(210, () => src.next(eob(1, 9)));
  });
  // Batch 1: last activity at 60 → times out at 160; batch 2 opened at 150 → times out at 250.
  assert.equal(trace(got), ['r 1:2', 'r 1:3', 'r 2:1', 'eob 1:5', 'eob 2:1']);
  assert.equal(got[3].kind === 'eob' && got[3].ack, undefined, 'a timeout eob has no sender waiting');
  assert.equal(states, ['1 open', '2 open', '1 closed', '2 closed']);
  assert.match(problems[0], /4 records for batch .* refused: the batch is closed \(closed by the batch timeout/);
  assert.ok(!acks[0].ok && acks[0].code === 5, "the sender's late eob is refused with error code 5 (timeout)");
});
to('TIMEOUT_ACTION=BBN discards an idle batch with a bbn naming the timeout', () => {
  const states: string[] = [];
  const got = virtual({ action: 'bbn', states }, (src, at) => {
    src.next(recs(7, 1));
    at(99, () => src.next(recs(7, 1)));
    at(500, () => src.next(recs(7, 1)));
  });
  assert.equal(trace(got), ['r 7:1', 'r 7:1', 'bbn 7']);
  assert.match(got[2].kind === 'bbn' ? got[2].reason : '', /no activity for 100 ms \(BATCH_TIMEOUT_MS, TIMEOUT_ACTION=BBN\)/);
  assert.equal(states, ['7 open', '7 discarded']);
});
to('a closed batch has no timer left; timeout 0 never fires', () => {
  const got = virtual({ action: 'bbn' }, (src, at) => {
    src.next(recs(1, 1));
    at(50, () => src.next(eob(1, 1)));
  });
  assert.equal(trace(got), ['r 1:1', 'eob 1:1']);
  const never = virtual({ action: 'bbn', timeoutMs: 0 }, (src) => src.next(recs(1, 1)));
  assert.equal(trace(never), ['r 1:1']);
});
to.run();

const life = suite('batchTimeout: lifecycle');
life('empty input completes with nothing; open batches stay open at completion', async () => {
  assert.equal(await lastValueFrom(EMPTY.pipe(batchTimeout({ timeoutMs: 10, action: 'eob' }), toArray())), []);
  assert.equal(trace(await lastValueFrom(of(recs(1, 1)).pipe(batchTimeout({ timeoutMs: 10, action: 'eob' }), toArray()))), ['r 1:1']);
});
life('upstream error passes through; wrong elements error the stream', () => {
  let err: unknown;
  new Observable<Chunk>((s) => s.error(new Error('socket gone'))).pipe(batchTimeout({ timeoutMs: 0, action: 'eob' })).subscribe({ error: (e) => (err = e) });
  assert.match(String(err), /socket gone/);
  of<Chunk>({ kind: 'bytes', source: 'x', offset: 0, buf: Buffer.alloc(1) }).pipe(batchTimeout({ timeoutMs: 0, action: 'eob' })).subscribe({ error: (e) => (err = e) });
  assert.match(String(err), /got a 'bytes' element/);
  of<Chunk>({ kind: 'records', dataset: 'd', count: 1, recordSize: 1, buf: Buffer.alloc(1) }).pipe(batchTimeout({ timeoutMs: 0, action: 'eob' })).subscribe({ error: (e) => (err = e) });
  assert.match(String(err), /without a batch id/);
});
life('early unsubscribe clears timers: nothing more is emitted', () => {
  const scheduler = new VirtualTimeScheduler();
  const src = new Subject<Chunk>();
  const got: Chunk[] = [];
  const sub = src.pipe(batchTimeout({ timeoutMs: 100, action: 'eob', scheduler })).subscribe((c) => got.push(c));
  src.next(recs(1, 1));
  sub.unsubscribe();
  scheduler.flush();
  assert.is(src.observed, false);
  assert.equal(trace(got), ['r 1:1']);
});
life('rejects a bad timeout', () => {
  assert.throws(() => batchTimeout({ timeoutMs: -1, action: 'eob' }), /timeoutMs/);
});
life.run();
