import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, Observable, of, Subject, throwError } from 'rxjs';
import { awaitEach } from '../../stream/awaitEach';
import { Flow } from '../../stream/flow';

const collect = <T>(o: Observable<T>): Promise<{ values: T[]; error?: unknown }> =>
  new Promise((resolve) => {
    const values: T[] = [];
    o.subscribe({ next: (v) => values.push(v), error: (error) => resolve({ values, error }), complete: () => resolve({ values }) });
  });
const tick = () => new Promise((r) => setTimeout(r, 0));

const t = suite('awaitEach');
t('values: runs one at a time in order and emits what each returns', async () => {
  let running = 0;
  let most = 0;
  const r = await collect(
    of(3, 1, 2).pipe(
      awaitEach(async (n) => {
        most = Math.max(most, ++running);
        await new Promise((res) => setTimeout(res, n));
        running--;
        return Array.from({ length: n }, () => n);
      }),
    ),
  );
  assert.equal(r.values, [3, 3, 3, 1, 2, 2]);
  assert.is(most, 1);
});
t('synchronous source and synchronous fn', async () => {
  const r = await collect(of(1, 2, 3).pipe(awaitEach((n) => [n * 10])));
  assert.equal(r.values, [10, 20, 30]);
});
t('empty source completes without calling fn', async () => {
  let calls = 0;
  const r = await collect(EMPTY.pipe(awaitEach(() => (calls++, [1]))));
  assert.equal(r, { values: [] });
  assert.is(calls, 0);
});
t('upstream error passes through', async () => {
  const r = await collect(throwError(() => new Error('up')).pipe(awaitEach((x) => [x])));
  assert.match(String(r.error), /up/);
});
t('fn rejecting errors the stream and releases the flow', async () => {
  const flow = new Flow();
  const r = await collect(of(1, 2, 3).pipe(awaitEach(async (n) => { if (n === 2) throw new Error('two'); return [n]; }, flow)));
  assert.equal(r.values, [1]);
  assert.match(String(r.error), /two/);
  assert.is(flow.pending, 0);
});
t('flow: pending counts queued and running elements until they are emitted', async () => {
  const flow = new Flow();
  const src = new Subject<number>();
  const release: (() => void)[] = [];
  const seenAtEmit: number[] = [];
  src.pipe(awaitEach((n) => new Promise<number[]>((res) => release.push(() => res([n]))), flow)).subscribe(() => seenAtEmit.push(flow.pending));
  src.next(1);
  src.next(2);
  assert.is(flow.pending, 2);
  await tick();
  release.shift()?.();
  await tick();
  assert.equal(seenAtEmit, [2], 'still pending while its result is being emitted');
  assert.is(flow.pending, 1);
  let waited = false;
  void flow.whenAtMost(0).then(() => (waited = true));
  await tick();
  assert.is(waited, false);
  release.shift()?.();
  await tick();
  assert.is(flow.pending, 0);
  assert.is(waited, true);
});
t('early unsubscribe: queued elements never run and the flow is released', async () => {
  const flow = new Flow();
  const src = new Subject<number>();
  const ran: number[] = [];
  const sub = src.pipe(awaitEach(async (n) => { ran.push(n); await tick(); return [n]; }, flow)).subscribe();
  src.next(1);
  src.next(2);
  src.next(3);
  sub.unsubscribe();
  assert.is(src.observed, false, 'upstream unsubscribed');
  await tick();
  await tick();
  assert.equal(ran, [1]);
  assert.is(flow.pending, 0);
});
t.run();
