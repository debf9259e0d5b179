/**
 * Resolving a time window to the batches that exist (query/timeRange.ts), the node's route over its
 * batch index (nodes/storageNode/batchRanges.ts), the Proxy's union of node answers
 * (net/storageNodeBatches.ts) and the query route's naming (control/proxy/queryRoute.ts):
 * the resolved set is exactly the enumeration's ids that some node holds, malformed windows and
 * answers are refused, and nothing is enumerated when nodes answered.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID, generateBatchIdNumber, generateBatchIdString, generateBatchIdTime, generateBatchIdsTime } from '../../engine-rs/batchId';
import { QueryError } from '../../query/queryError';
import { checkTimeRange, heldRuns, heldRunsOf, readRuns, recordWindow, runsOf, sortedStarts, timeFormHex, timeFormStart, unionStarts } from '../../query/timeRange';
import { BatchIndex } from '../../nodes/storageNode/batchIndex';
import { batchRangesRoute } from '../../nodes/storageNode/batchRanges';
import { StorageNodeBatches, type NodeGetter } from '../../net/storageNodeBatches';

const IV = 60;
const T0 = 1_700_000_000 - (1_700_000_000 % IV);
const YEAR = 365 * 86_400;

const id = (t: number): BatchID => generateBatchIdTime(t, t + IV, IV);

const range = suite('timeRange: checks, time form, runs');

range('checkTimeRange refuses start > end, non-integers, unsafe integers and bad intervals, naming the key', () => {
  assert.equal(checkTimeRange(1, 2, 60), { start: 1, end: 2, interval: 60 });
  assert.equal(checkTimeRange(5, 5, 1), { start: 5, end: 5, interval: 1 });
  const fails = (f: () => unknown, key: string): void => {
    try {
      f();
      assert.unreachable('accepted');
    } catch (err) {
      assert.instance(err, QueryError);
      assert.is((err as QueryError).path, key);
    }
  };
  fails(() => checkTimeRange(10, 9, 60), 'end');
  fails(() => checkTimeRange(1.5, 9, 60), 'start');
  fails(() => checkTimeRange('1', 9, 60), 'start');
  fails(() => checkTimeRange(0, 2 ** 60, 60), 'end');
  fails(() => checkTimeRange(0, 1, 0), 'interval');
  fails(() => checkTimeRange(0, 1, 2 ** 32), 'interval');
  fails(() => checkTimeRange(undefined, 1, 60), 'start');
});

range('timeFormStart: only the ids the enumeration makes (aligned, one interval wide, bytes 0..48 zero)', () => {
  assert.is(timeFormStart(id(T0).bytes, IV), T0);
  assert.is(timeFormStart(id(-120).bytes, IV), -120);
  assert.is(timeFormStart(generateBatchIdTime(T0, T0 + 120, IV).bytes, IV), undefined, 'two intervals wide');
  assert.is(timeFormStart(id(T0).bytes, 30), undefined, 'another interval');
  assert.is(timeFormStart(generateBatchIdNumber(T0).bytes, IV), undefined);
  // The number form of 60 is the same 64 bytes as the time form of [0, 60): it is that batch.
  assert.is(timeFormStart(generateBatchIdNumber(60n).bytes, IV), 0);
  assert.is(timeFormStart(generateBatchIdString('flows-2023-11-14').bytes, IV), undefined);
  assert.is(timeFormStart(new Uint8Array(10), IV), undefined);
  assert.is(timeFormHex(T0, IV), id(T0).toHex());
});

range('timeFormStart and timeFormHex agree with the native time-form id across the 32-bit halves and the ±2^53 edge', () => {
  const M = Number.MAX_SAFE_INTEGER;
  for (const iv of [1, 60, 0xffff_ffff]) {
    for (const s0 of [0, -iv, 2 ** 32, -(2 ** 32), 2 ** 32 - iv, 2 ** 52, -(2 ** 52), M - iv - (M - iv) % iv]) {
      const s = s0 - (s0 % iv);
      const native = generateBatchIdTime(s, s + iv, iv);
      assert.is(timeFormHex(s, iv), native.toHex(), `hex of ${s} at ${iv}`);
      assert.is(timeFormStart(native.bytes, iv), s, `start of ${s} at ${iv}`);
    }
  }
  // A start past 2^53 - 1 (whatever its end) is never a window's.
  const far = Buffer.alloc(64);
  far.writeBigInt64BE(2n ** 53n, 48);
  far.writeBigInt64BE(2n ** 53n + 1n, 56);
  assert.is(timeFormStart(far, 1), undefined);
  // The largest start: its end passes 2^53 - 1 and it still counts, as in BigInt.
  const edge = Buffer.alloc(64);
  edge.writeBigInt64BE(BigInt(M), 48);
  edge.writeBigInt64BE(BigInt(M) + 1n, 56);
  assert.is(timeFormStart(edge, 1), M);
  assert.is(timeFormHex(M, 1), edge.toString('hex'));
  // A negative end that does not follow its start.
  const back = Buffer.alloc(64);
  back.writeBigInt64BE(-120n, 48);
  back.writeBigInt64BE(-180n, 56);
  assert.is(timeFormStart(back, 60), undefined);
});

range('recordWindow names exactly the intervals that can hold records of the window, none past it', () => {
  // Time batches hold the records of [t, t + IV): a record of [s, e] lies in an interval from floor(s) to floor(e).
  for (const [s, e] of [
    [T0, T0 + 59],
    [T0, T0 + 60],
    [T0 + 1, T0 + 59],
    [T0 + 10, T0 + 130],
    [T0 - 61, T0 - 1],
    [T0 - YEAR, T0],
  ] as const) {
    const w = recordWindow({ start: s, end: e }, IV);
    const named = generateBatchIdsTime(w.start, w.end, IV).map((b) => timeFormStart(b.bytes, IV));
    const needed: number[] = [];
    for (let t = Math.floor(s / IV) * IV; t <= e; t += IV) needed.push(t);
    assert.equal(named, needed, `[${s}, ${e}]`);
    // The reference's enumeration of the window itself names one interval more whenever e is not on a boundary.
    if (e % IV !== 0) assert.is(generateBatchIdsTime(s, e, IV).length, needed.length + 1);
  }
});

range('heldRunsOf over sortedStarts answers every window, limit and truncation as heldRuns over the ids', () => {
  const held = [T0 - YEAR, -120, 0, 60, 120, 600, T0, T0 + 60, T0 + 120, T0 + 240].map((t) => id(t).bytes);
  const starts = sortedStarts(held, IV);
  assert.equal(starts, [T0 - YEAR, -120, 0, 60, 120, 600, T0, T0 + 60, T0 + 120, T0 + 240].sort((a, b) => a - b));
  for (const [s, e] of [[-1e15, 1e15], [0, 0], [1, 59], [-200, 130], [T0, T0 + 200], [T0 + 1, T0 + 1], [T0 + 300, T0 + 900], [-1e15, -1e14]] as const) {
    for (const limit of [1, 2, 3, 1000]) assert.equal(heldRunsOf(starts, { start: s, end: e }, IV, limit), heldRunsSlow(held, { start: s, end: e }, IV, limit), `${s}..${e} limit ${limit}`);
  }
});

/** heldRuns as it was written first: filter to the window, sort, cut. */
function heldRunsSlow(held: Uint8Array[], r: { start: number; end: number }, iv: number, limit: number) {
  const first = Math.floor(r.start / iv) * iv;
  const last = Math.ceil(r.end / iv) * iv;
  const starts = held.map((b) => timeFormStart(b, iv)).filter((s): s is number => s !== undefined && s >= first && s <= last).sort((a, b) => a - b);
  const kept = starts.slice(0, limit);
  return { runs: runsOf(kept, iv), batches: kept.length, truncated: starts.length > limit };
}

range('heldRuns is the enumeration of the window intersected with the held ids', () => {
  const held = [T0 - YEAR, T0 - 60, T0, T0 + 60, T0 + 120, T0 + 600].map((t) => id(t).bytes);
  held.push(generateBatchIdString('other').bytes, generateBatchIdNumber(T0 + 60).bytes);
  for (const [s, e] of [
    [T0, T0 + 130],
    [T0 - YEAR - 100, T0 + 10_000 - YEAR],
    [T0 - YEAR, T0 - YEAR],
    [T0 + 1, T0 + 59],
    [T0 + 700, T0 + 800],
  ] as const) {
    const want = generateBatchIdsTime(s, e, IV)
      .map((b) => b.toHex())
      .filter((h) => held.some((x) => Buffer.from(x).toString('hex') === h));
    const got = heldRuns(held, { start: s, end: e }, IV, 1000);
    const ids = got.runs.flatMap(([st, n]) => Array.from({ length: n }, (_, k) => timeFormHex(st + k * IV, IV)));
    assert.equal(ids, want, `[${s}, ${e}]`);
    assert.is(got.batches, want.length);
  }
  const all = heldRuns(held, { start: 0, end: T0 + YEAR }, IV, 1000);
  assert.equal(all.runs, [
    [T0 - YEAR, 1],
    [T0 - 60, 4],
    [T0 + 600, 1],
  ]);
  const cut = heldRuns(held, { start: 0, end: T0 + YEAR }, IV, 2);
  assert.is(cut.truncated, true);
  assert.is(cut.batches, 2);
});

range('a window of 10^15 seconds at one second costs the held ids, not the intervals', () => {
  const held = [id(T0).bytes];
  const r = heldRuns(held, { start: -1e15, end: 1e15 }, IV, 10);
  assert.equal(r.runs, [[T0, 1]]);
});

range('runsOf merges consecutive starts; readRuns refuses runs off the interval, outside the window or out of order', () => {
  assert.equal(runsOf([0, 60, 120, 300, 360], 60), [
    [0, 3],
    [300, 2],
  ]);
  const w = { start: 0, end: 600 };
  assert.equal(readRuns([[0, 3]], w, 60), [[0, 3]]);
  assert.is(readRuns([[30, 1]], w, 60), undefined, 'off the interval');
  assert.is(readRuns([[600, 2]], w, 60), undefined, 'past ceil(end)');
  assert.is(readRuns([[-60, 1]], w, 60), undefined, 'before floor(start)');
  assert.is(readRuns([[120, 1], [60, 1]], w, 60), undefined, 'out of order');
  assert.is(readRuns([[0, 2], [60, 1]], w, 60), undefined, 'overlapping');
  assert.is(readRuns([[0, 0]], w, 60), undefined, 'empty run');
  assert.is(readRuns([['0', 1]], w, 60), undefined);
  assert.is(readRuns({}, w, 60), undefined);
  assert.equal(unionStarts([[[0, 2]], [[60, 2]]], 60, 10), { starts: [0, 60, 120], truncated: false });
  assert.equal(unionStarts([[[0, 5]]], 60, 3).truncated, true);
});

range.run();

const route = suite('GET /v1/batch-ranges (Storage Node)');

function indexOf(starts: number[], dataset = 'flows'): BatchIndex {
  const ix = new BatchIndex();
  for (const t of starts) ix.add({ dataset, batchId: id(t), path: `/d/${t}`, device: 'd0', records: 1, bytes: 1, closingHash: Buffer.alloc(64) });
  ix.add({ dataset, batchId: generateBatchIdString('x'), path: '/d/x', device: 'd0', records: 1, bytes: 1, closingHash: Buffer.alloc(64) });
  return ix;
}

route('answers the held batches of the window as runs; an unknown dataset holds none', () => {
  const ix = indexOf([T0 - YEAR, T0, T0 + 60]);
  const ok = batchRangesRoute(ix, new URLSearchParams(`dataset=flows&start=1&end=${T0 + 3600}&interval=60`));
  assert.is(ok.status, 200);
  assert.equal(ok.body, { dataset: 'flows', start: 1, end: T0 + 3600, interval: 60, batches: 3, runs: [[T0 - YEAR, 1], [T0, 2]], truncated: false });
  const none = batchRangesRoute(ix, new URLSearchParams(`dataset=nope&start=1&end=${T0}&interval=60`));
  assert.equal(none.body, { dataset: 'nope', start: 1, end: T0, interval: 60, batches: 0, runs: [], truncated: false });
  const lim = batchRangesRoute(ix, new URLSearchParams(`dataset=flows&start=1&end=${T0 + 3600}&interval=60&limit=1`));
  assert.equal((lim.body as { runs: unknown }).runs, [[T0 - YEAR, 1]]);
  assert.is((lim.body as { truncated: boolean }).truncated, true);
});

route('answers again from what the index holds now: a batch added after an answer is in the next one, another interval or dataset apart', () => {
  const ix = indexOf([T0, T0 + 60]);
  const ask = (q: string): unknown => batchRangesRoute(ix, new URLSearchParams(q)).body;
  const window = `dataset=flows&start=${T0 - 600}&end=${T0 + 600}&interval=60`;
  assert.equal((ask(window) as { runs: unknown }).runs, [[T0, 2]]);
  assert.equal((ask(window) as { runs: unknown }).runs, [[T0, 2]], 'asked twice, same answer');
  ix.add({ dataset: 'flows', batchId: id(T0 + 120), path: '/d/new', device: 'd0', records: 1, bytes: 1, closingHash: Buffer.alloc(64) });
  ix.add({ dataset: 'flows', batchId: id(T0 - 600), path: '/d/first', device: 'd0', records: 1, bytes: 1, closingHash: Buffer.alloc(64) });
  assert.equal((ask(window) as { runs: unknown }).runs, [[T0 - 600, 1], [T0, 3]]);
  // The same ids at another interval are none of its windows; another dataset's are its own.
  assert.equal((ask(`dataset=flows&start=${T0 - 600}&end=${T0 + 600}&interval=30`) as { batches: number }).batches, 0);
  ix.add({ dataset: 'dns', batchId: id(T0), path: '/d/dns', device: 'd0', records: 1, bytes: 1, closingHash: Buffer.alloc(64) });
  assert.equal((ask(`dataset=dns&start=${T0 - 600}&end=${T0 + 600}&interval=60`) as { runs: unknown }).runs, [[T0, 1]]);
  assert.equal((ask(window) as { runs: unknown }).runs, [[T0 - 600, 1], [T0, 3]]);
});

route('malformed requests are 400 saying what to send', () => {
  const ix = indexOf([T0]);
  for (const [q, why] of [
    ['start=1&end=2&interval=60', /dataset/],
    ['dataset=flows&start=5&end=2&interval=60', /before/],
    ['dataset=flows&start=x&end=2&interval=60', /start/],
    ['dataset=flows&start=1&end=2', /interval/],
    ['dataset=flows&start=1&end=2&interval=0', /interval/],
    ['dataset=flows&start=1&end=99999999999999999999&interval=60', /end/],
    ['dataset=flows&start=1&end=2&interval=60&limit=0', /limit/],
    ['dataset=flows&start=1&end=2&interval=60&limit=100001', /limit/],
    ['dataset=flows&start=1&start=2&end=2&interval=60', /more than once/],
    ['dataset=flows&start=1&end=2&interval=60&x=1', /unknown parameter 'x'/],
  ] as const) {
    const r = batchRangesRoute(ix, new URLSearchParams(q));
    assert.is(r.status, 400, q);
    assert.match((r.body as { error: string }).error, why, q);
  }
});

route.run();

const proxy = suite('StorageNodeBatches: the union of the nodes that answered');

function getter(answers: Record<string, (path: string) => { status: number; text: string } | 'hang' | 'throw'>): NodeGetter & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    nodes: () => Object.keys(answers).map((name, i) => ({ name, host: '127.0.0.1', port: 1000 + i })),
    async get(node, p, signal) {
      asked.push(`${node.name} ${p}`);
      const a = (answers[node.name] as (p: string) => { status: number; text: string } | 'hang' | 'throw')(p);
      if (a === 'throw') throw new Error('ECONNREFUSED');
      if (a === 'hang') return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('timeout'))));
      return a;
    },
  };
}

const from = (ix: BatchIndex) => (p: string) => {
  const r = batchRangesRoute(ix, new URLSearchParams(p.split('?')[1]));
  return { status: r.status, text: JSON.stringify(r.body) };
};

proxy('a lagging replica: the union; a failing, hanging or lying node contributes nothing', async () => {
  const logs: string[] = [];
  const g = getter({
    sn1: from(indexOf([T0 - YEAR, T0])),
    sn2: from(indexOf([T0 - YEAR, T0, T0 + 60])),
    sn3: () => 'throw',
    sn4: () => 'hang',
    sn5: () => ({ status: 200, text: JSON.stringify({ dataset: 'flows', runs: [[T0 + 30, 1]], truncated: false }) }),
  });
  const src = new StorageNodeBatches({ nodes: g, timeoutMs: 200, log: (m) => logs.push(m) });
  // AbortSignal.timeout does not keep the process alive by itself (a Proxy's server does).
  const keep = setInterval(() => undefined, 50);
  const r = await src.batchesInWindow('flows', { start: 1, end: T0 + 3600 }, IV, 100_000).finally(() => clearInterval(keep));
  assert.equal(r.batchIds, [T0 - YEAR, T0, T0 + 60].map((t) => id(t).toHex()));
  assert.is(r.nodesAsked, 5);
  assert.is(r.nodesAnswered, 2);
  assert.is(r.truncated, false);
  assert.is(logs.length, 3, logs.join('\n'));
  assert.match(g.asked[0] as string, /\/v1\/batch-ranges\?dataset=flows&start=1&end=\d+&interval=60&limit=100000$/);
});

proxy('no node: nothing asked, nothing answered', async () => {
  const r = await new StorageNodeBatches({ nodes: getter({}) }).batchesInWindow('flows', { start: 0, end: 1 }, IV, 10);
  assert.equal(r, { batchIds: [], truncated: false, nodesAsked: 0, nodesAnswered: 0 });
});

proxy.run();
