import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ReadScheduler, type ReadQueue } from '../../operators/readScheduler';

/** Resolves with the rejection reason of `p`, failing the test when it resolves. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/**
 * A query that reads without pause: acquire, hold the slot across one turn of the microtask queue
 * (a stand-in for the native read), release, ask again. Records each grant in `log`.
 */
function reader(q: ReadQueue, name: string, log: string[], stop: () => boolean): Promise<void> {
  return (async () => {
    while (!stop()) {
      const slot = await q.acquire();
      if (stop()) {
        slot.release();
        return;
      }
      log.push(name);
      await Promise.resolve();
      slot.release();
    }
  })();
}

async function share(weights: Record<string, number>, grants: number, slots = 1): Promise<Record<string, number>> {
  const s = new ReadScheduler(slots);
  const log: string[] = [];
  const stop = (): boolean => log.length >= grants;
  const queues = Object.entries(weights).map(([name, w]) => ({ name, q: s.join(w) }));
  await Promise.all(queues.map(({ name, q }) => reader(q, name, log, stop)));
  for (const { q } of queues) q.leave();
  const out: Record<string, number> = {};
  for (const name of Object.keys(weights)) out[name] = log.filter((x) => x === name).length;
  return out;
}

const wfq = suite('ReadScheduler: weighted fair read queues');

wfq('weight 8 gets 8 slots for each slot of weight 1 while both want to read', async () => {
  const got = await share({ heavy: 8, light: 1 }, 900);
  assert.ok(Math.abs(got.heavy - 800) <= 1, JSON.stringify(got));
  assert.ok(Math.abs(got.light - 100) <= 1, JSON.stringify(got));
});

wfq('equal weights alternate', async () => {
  const got = await share({ a: 1, b: 1 }, 100);
  assert.equal(got, { a: 50, b: 50 });
});

wfq('three weights share in proportion (1 : 2 : 5)', async () => {
  const got = await share({ a: 1, b: 2, c: 5 }, 800);
  assert.ok(Math.abs(got.a - 100) <= 1 && Math.abs(got.b - 200) <= 1 && Math.abs(got.c - 500) <= 1, JSON.stringify(got));
});

wfq('weights clamp to 1..255; absent or invalid weights count as 1', () => {
  const s = new ReadScheduler(1);
  assert.is(s.join(0).weight, 1);
  assert.is(s.join(-3).weight, 1);
  assert.is(s.join(1000).weight, 255);
  assert.is(s.join(2.5).weight, 1);
  assert.is(s.join(Number.NaN).weight, 1);
  assert.throws(() => new ReadScheduler(0), /read slots must be an integer ≥ 1, got 0/);
});

wfq('with enough slots nobody waits (weights only matter under contention)', async () => {
  const got = await share({ heavy: 8, light: 1 }, 200, 2);
  assert.equal(got, { heavy: 100, light: 100 });
});

wfq('a queue that was idle does not bank slots: it rejoins at the current virtual time', async () => {
  const s = new ReadScheduler(1);
  const log: string[] = [];
  const early = s.join(1);
  let n = 0;
  await reader(early, 'early', log, () => ++n > 50);
  // 'early' has 50 grants of pass behind it; a newcomer of the same weight must not get 50 in a row.
  const late = s.join(1);
  log.length = 0;
  await Promise.all([reader(early, 'early', log, () => log.length >= 20), reader(late, 'late', log, () => log.length >= 20)]);
  const firstTen = log.slice(0, 10);
  assert.ok(firstTen.filter((x) => x === 'early').length >= 4, firstTen.join(','));
});

wfq('slots are held until released; a waiting request resolves once one frees', async () => {
  const s = new ReadScheduler(2);
  const q = s.join(1);
  const a = await q.acquire();
  const b = await s.join(1).acquire();
  assert.is(s.busy, 2);
  let third = false;
  const p = s.join(1).acquire().then((slot) => {
    third = true;
    return slot;
  });
  await new Promise((r) => setImmediate(r));
  assert.is(third, false);
  assert.is(s.waiting, 1);
  a.release();
  a.release(); // idempotent
  const c = await p;
  assert.is(third, true);
  assert.is(s.busy, 2);
  b.release();
  c.release();
  assert.is(s.busy, 0);
});

wfq('an aborted signal rejects a waiting request at once and frees its place', async () => {
  const s = new ReadScheduler(1);
  const hold = await s.join(1).acquire();
  const ac = new AbortController();
  const waiting = s.join(1).acquire(ac.signal);
  ac.abort({ code: 4, message: 'query 7 cancelled' });
  assert.is(((await rejection(waiting)) as { code: number }).code, 4);
  assert.is(s.waiting, 0);
  hold.release();
  // An already aborted signal never queues.
  await rejection(s.join(1).acquire(ac.signal));
  assert.is(s.waiting, 0);
});

wfq('leave() rejects the queue\'s waiting request and refuses new ones', async () => {
  const s = new ReadScheduler(1);
  const hold = await s.join(1).acquire();
  const q = s.join(3);
  const waiting = q.acquire();
  q.leave();
  assert.match(String(await rejection(waiting)), /read queue left/);
  assert.match(String(await rejection(q.acquire())), /read queue left/);
  hold.release();
  assert.is(s.waiting, 0);
});

wfq.run();
