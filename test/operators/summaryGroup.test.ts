/**
 * Summary groups in the scan operator (operators/summaryGroup.ts, operators/queryReads.ts): with
 * merged partials, the batches a group's summaries answer are folded at once and completed by one
 * aggregate element, taking one read slot and no open / step / close each; the ones it leaves are
 * read as usual (a bbn for one that cannot be read); a group that answers none turns grouping off
 * for the query; verify_hash never groups; a cancel during a group folds nothing of it; a failing
 * group call falls back to reading each batch. The source is in memory (the native group has its
 * own tests in test/engine-rs).
 */
import { firstValueFrom, Subject, toArray, type Observable } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import type { PartialAccumulator } from '../../operators/mergedPartials';
import { ReadScheduler } from '../../operators/readScheduler';
import { nextGroupSize } from '../../operators/queryReads';
import { SUMMARY_GROUP_BATCHES } from '../../operators/summaryGroup';
import { scan, type BatchScan, type BatchScanStep, type CompiledQuery, type ScanMeter, type ScanSource, type SummaryAnswers } from '../../operators/scan';
import type { Chunk } from '../../stream/chunk';
import type { QueryResultElement, QuerySpec } from '../../stream/queryElement';
import { StageCounters } from '../../stream/stageCounters';
import { idOf, specOf, TestQuery } from '../support/testQuery';

/** Sums of matched record counts, as one global group. */
class SumAcc implements PartialAccumulator {
  total = 0;
  take(): string {
    const t = this.total;
    this.total = 0;
    return `[{"k":[],"m":["${t}"]}]`;
  }
}

/** A batch: its records, whether its summary answers it, whether it can be read at all; `small`: a group scans it, `matched` of its records matching. */
interface MemBatch {
  readonly records: number;
  readonly summary: boolean;
  readonly unreadable?: boolean;
  readonly small?: { readonly matched: number };
}

interface Calls {
  groups: number[][];
  opened: number[];
}

const num = (id: BatchID): number => Number(id.toHex().slice(-8));

/** What a group answers for one batch: [records, blocks, matched, scanned, skipped]; records -1 read as usual, -2 not tried. */
type Answer = [number, number, number, number, number];

/**
 * `groupScans`: small batches one group scans at most (those after are not tried); `noGroups`: the
 * source has no group call (every batch read on its own).
 */
function source(batches: Map<number, MemBatch>, calls: Calls, opts: { groupFails?: boolean; groupWaits?: Promise<void>; groupScans?: number; noGroups?: boolean } = {}): ScanSource {
  const fromSummaries = async (ids: readonly BatchID[]): Promise<SummaryAnswers> => {
    calls.groups.push(ids.map(num));
    await opts.groupWaits;
    if (opts.groupFails) throw new Error('group failed');
    let scans = opts.groupScans ?? 0;
    const answers = ids.map((id): Answer => {
      const b = batches.get(num(id));
      if (!b || b.unreadable) return [-1, -1, -1, -1, -1];
      if (b.summary) return [b.records, 2, b.records, 0, 2];
      if (!b.small) return [-1, -1, -1, -1, -1];
      if (scans-- <= 0) return [-2, -1, -1, -1, -1];
      return [b.records, 2, b.small.matched, b.records, 0];
    });
    const col = (k: number): Float64Array => Float64Array.from(answers.map((a) => a[k] as number));
    return {
      records: col(0),
      blocks: col(1),
      matched: col(2),
      scanned: col(3),
      skipped: col(4),
      partial: {
        foldInto: (acc) => {
          (acc as SumAcc).total += answers.filter((a) => a[0] >= 0).reduce((t, a) => t + a[2], 0);
          return true;
        },
      },
    };
  };
  return {
    compile(): Promise<CompiledQuery> {
      return Promise.resolve({
        recordSize: 4,
        aggregate: true,
        newAccumulator: () => new SumAcc(),
        ...(!opts.noGroups && { fromSummaries }),
        open: (batchId: BatchID): Promise<BatchScan | { code: number; message: string }> => {
          calls.opened.push(num(batchId));
          const b = batches.get(num(batchId));
          if (!b || b.unreadable) return Promise.resolve({ code: 13, message: `batch ${num(batchId)} not held` });
          return Promise.resolve({
            next: () => Promise.resolve(b.summary ? { records: Buffer.alloc(0), matched: b.records, scanned: 0, blocksRead: 0, blocksSkipped: 2, done: true } : { records: Buffer.alloc(0), matched: b.small?.matched ?? b.records, scanned: b.records, blocksRead: 2, blocksSkipped: 0, done: true }),
            foldInto: (acc: PartialAccumulator) => {
              (acc as SumAcc).total += b.small?.matched ?? b.records;
              return true;
            },
            close: () => undefined,
          });
        },
      });
    },
  };
}

/** Sums of what a scan's meter was told. */
class SumMeter implements ScanMeter {
  readonly sums = { matched: 0, scanned: 0, blocksRead: 0, blocksSkipped: 0 };
  readonly batches: (string | number)[] = [];
  step(s: BatchScanStep): void {
    for (const k of Object.keys(this.sums) as (keyof SumMeter['sums'])[]) this.sums[k] += s[k];
  }
  batch(outcome: 'eob' | number): void {
    this.batches.push(outcome);
  }
  active(): void {}
}

async function run(src: ScanSource, spec: QuerySpec, opts: { scheduler?: ReadScheduler; onStart?: (q: TestQuery) => void } = {}) {
  const counters = new StageCounters('records');
  const meter = new SumMeter();
  const scheduler = opts.scheduler ?? new ReadScheduler(2);
  const input = new Subject<Chunk>();
  const out = firstValueFrom((input as Observable<Chunk>).pipe(scan({ source: src, scheduler, counters, meter, queryThreads: 3 }), toArray()));
  const q = new TestQuery(spec, 4);
  input.next({ kind: 'query', query: q });
  opts.onStart?.(q);
  input.complete();
  return { out: (await out) as QueryResultElement[], q, counters, scheduler, meter };
}

type Aggregate = Extract<QueryResultElement, { kind: 'aggregate' }>;
const aggregates = (out: QueryResultElement[]): Aggregate[] => out.filter((e): e is Aggregate => e.kind === 'aggregate');
const ids = (ns: number[]): BatchID[] => ns.map(idOf);
const merged = (extra: Partial<QuerySpec> = {}): QuerySpec => specOf(7, ids([1, 2, 3, 4, 5]), { mergeBatches: true, aggregateJson: '{}', ...extra });

const t = suite('scan operator: batches answered from their summaries as a group');

t('one group answers what its summaries answer in one read slot; the rest are read as usual', async () => {
  const calls: Calls = { groups: [], opened: [] };
  const batches = new Map<number, MemBatch>([
    [1, { records: 10, summary: true }],
    [2, { records: 20, summary: false }],
    [3, { records: 30, summary: true }],
    [4, { records: 40, summary: true, unreadable: true }],
    [5, { records: 50, summary: true }],
  ]);
  const { out, counters, scheduler } = await run(source(batches, calls), merged());
  assert.equal(calls.groups, [[1, 2, 3, 4, 5]], 'one group for all the batches');
  assert.equal(calls.opened.sort(), [2, 4], 'only the batches the group left are opened');
  assert.is(scheduler.grants, 2, 'one slot for the group, one for the read batch');
  const frames = aggregates(out);
  const completed = frames.flatMap((f) => (f.completes ?? []).map((c) => [num(c.batchId), c.recordCount]));
  assert.equal(
    completed.sort((a, b) => (a[0] as number) - (b[0] as number)),
    [
      [1, 10],
      [2, 20],
      [3, 30],
      [5, 50],
    ],
  );
  const total = frames.reduce((s, f) => s + Number((JSON.parse(f.json) as { groups: { m: string[] }[] }).groups[0]?.m[0] ?? 0), 0);
  assert.is(total, 110, 'every answered and read batch counted once');
  const bbns = out.filter((e) => e.kind === 'bbn');
  assert.equal(
    bbns.map((e) => num((e as { batchId: BatchID }).batchId)),
    [4],
    'the unreadable batch is a bbn, from its own open',
  );
  assert.is(out.filter((e) => e.kind === 'eob').length, 0, 'merged: no eob element');
  assert.is(counters.received, 110);
  assert.is(counters.sent, 110);
});

t('small batches are scanned in the group, counted exactly as their own reads; those past its budget join the next group', async () => {
  const batches = new Map<number, MemBatch>([
    [1, { records: 10, summary: true }],
    [2, { records: 20, summary: false, small: { matched: 5 } }],
    [3, { records: 30, summary: false, small: { matched: 0 } }],
    [4, { records: 40, summary: false }],
    [5, { records: 50, summary: false, small: { matched: 7 } }],
    [6, { records: 60, summary: false, small: { matched: 60 } }],
    [7, { records: 70, summary: true, unreadable: true }],
  ]);
  const spec = specOf(7, ids([1, 2, 3, 4, 5, 6, 7]), { mergeBatches: true, aggregateJson: '{}' });
  const calls: Calls = { groups: [], opened: [] };
  const grouped = await run(source(batches, calls, { groupScans: 2 }), spec);
  assert.equal(calls.groups, [[1, 2, 3, 4, 5, 6, 7], [5, 6]], 'the batches not tried form the next group');
  assert.equal(calls.opened.sort(), [4, 7], 'only the large and the unreadable batch are opened');
  // The same query read batch by batch: the same answer, counters, meter and batch ends.
  const alone = await run(source(batches, { groups: [], opened: [] }, { noGroups: true }), spec);
  const completed = (out: QueryResultElement[]) =>
    aggregates(out)
      .flatMap((f) => (f.completes ?? []).map((c) => [num(c.batchId), c.recordCount]))
      .sort((a, b) => (a[0] as number) - (b[0] as number));
  assert.equal(completed(grouped.out), [
    [1, 10],
    [2, 5],
    [3, 0],
    [4, 40],
    [5, 7],
    [6, 60],
  ]);
  assert.equal(completed(grouped.out), completed(alone.out));
  const total = (out: QueryResultElement[]) => aggregates(out).reduce((s, f) => s + Number((JSON.parse(f.json) as { groups: { m: string[] }[] }).groups[0]?.m[0] ?? 0), 0);
  assert.is(total(grouped.out), 122);
  assert.is(total(alone.out), 122);
  for (const k of ['received', 'sent', 'dropped', 'controls', 'errors'] as const) assert.is(grouped.counters[k], alone.counters[k], k);
  assert.equal(grouped.meter.sums, alone.meter.sums);
  assert.equal(grouped.meter.sums, { matched: 122, scanned: 200, blocksRead: 10, blocksSkipped: 2 });
  assert.equal(grouped.meter.batches.sort(), alone.meter.batches.sort());
});

t('after a group spends its scan budget, the next ones ask for about as many batches as it tried, not 64 again', async () => {
  const n = 40;
  // Ids whose hex digits are all decimal (num() reads them back as these numbers).
  const ns = Array.from({ length: 120 }, (_, i) => i + 1).filter((k) => /^\d+$/.test(k.toString(16))).slice(0, n);
  const keys = ns.map((k) => num(idOf(k)));
  const batches = new Map<number, MemBatch>(keys.map((k): [number, MemBatch] => [k, { records: 10, summary: false, small: { matched: 1 } }]));
  const calls: Calls = { groups: [], opened: [] };
  const { out } = await run(source(batches, calls, { groupScans: 3 }), specOf(7, ids(ns), { mergeBatches: true, aggregateJson: '{}' }));
  assert.equal(calls.groups[0]?.length, n, 'the first group asks for every batch (under 64)');
  for (const g of calls.groups.slice(1)) assert.ok(g.length <= 3 + 2, `a later group asks for ${g.length}`);
  assert.equal(calls.opened, [], 'every batch folded in a group');
  const done = aggregates(out).flatMap((f) => (f.completes ?? []).map((c) => num(c.batchId)));
  assert.equal(done.sort((a, b) => a - b), [...keys].sort((a, b) => a - b), 'each batch completed once');
});
t('nextGroupSize: what the last group tried and a little more; doubling back to 64 while groups try all', () => {
  assert.is(nextGroupSize(64, 64, 54), 12);
  assert.is(nextGroupSize(64, 64, 64), 2, 'a group that tried none: at least 2');
  assert.is(nextGroupSize(12, 12, 0), 24);
  assert.is(nextGroupSize(48, 48, 0), SUMMARY_GROUP_BATCHES);
  assert.is(nextGroupSize(64, 64, 1), SUMMARY_GROUP_BATCHES);
  assert.is(nextGroupSize(12, 3, 0), 12, 'a short group (the last batches) keeps the size');
});
t('a group that answers none turns grouping off: the batches are read one by one', async () => {
  const calls: Calls = { groups: [], opened: [] };
  const batches = new Map<number, MemBatch>([1, 2, 3, 4, 5].map((n) => [n, { records: n, summary: false }]));
  const { out } = await run(source(batches, calls), specOf(7, ids([1, 2, 3, 4, 5, 6, 7]), { mergeBatches: true, aggregateJson: '{}' }));
  assert.is(calls.groups.length, 1, 'no second group');
  assert.equal(
    calls.opened.sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7],
  );
  assert.is(aggregates(out).flatMap((f) => f.completes ?? []).length, 5);
  assert.is(out.filter((e) => e.kind === 'bbn').length, 2, 'batches 6 and 7 are not held');
});

t('verify_hash, or a query without merged partials, never groups', async () => {
  const calls: Calls = { groups: [], opened: [] };
  const batches = new Map<number, MemBatch>([1, 2, 3, 4, 5].map((n) => [n, { records: n, summary: true }]));
  await run(source(batches, calls), merged({ verifyHash: true }));
  assert.is(calls.groups.length, 0);
  assert.is(calls.opened.length, 5);
});

t('a group call that fails leaves every batch to its own read', async () => {
  const calls: Calls = { groups: [], opened: [] };
  const batches = new Map<number, MemBatch>([1, 2, 3, 4, 5].map((n) => [n, { records: n, summary: true }]));
  const { out } = await run(source(batches, calls, { groupFails: true }), merged());
  assert.is(calls.groups.length, 1);
  assert.is(calls.opened.length, 5);
  assert.is(aggregates(out).flatMap((f) => f.completes ?? []).length, 5);
});

t('a cancel while a group is read folds nothing of it and completes none of its batches', async () => {
  const calls: Calls = { groups: [], opened: [] };
  const batches = new Map<number, MemBatch>([1, 2, 3, 4, 5].map((n) => [n, { records: n, summary: true }]));
  let release!: () => void;
  const groupWaits = new Promise<void>((r) => (release = r));
  const { out } = await run(source(batches, calls, { groupWaits }), merged(), {
    onStart: (q) => {
      // Cancelled once the group is in flight, then the native call returns.
      void (async () => {
        while (calls.groups.length === 0) await new Promise((r) => setImmediate(r));
        q.stop({ code: 4, message: 'cancelled' });
        release();
      })();
    },
  });
  assert.is(calls.groups.length, 1);
  assert.is(calls.opened.length, 0, 'no batch is read after the cancel');
  assert.is(aggregates(out).length, 0, 'no frame: nothing completed');
});

t.run();
