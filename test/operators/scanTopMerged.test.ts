/**
 * The scan operator's two per-query reductions (operators/scan.ts): `top` (each batch sends only
 * its best records, once, at its end; the eob counts what was sent) and merged partials (finished
 * batches fold into one accumulator; one aggregate element completes them, no eob element; a bbn
 * batch or one whose hash failed is never folded). The source is in memory; its `selectTop` and
 * accumulator are small JS stand-ins for the engine-rs ones (tested in test/engine-rs).
 */
import { firstValueFrom, Subject, toArray, type Observable } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import type { PartialAccumulator } from '../../operators/mergedPartials';
import { ReadScheduler } from '../../operators/readScheduler';
import { scan, type BatchScan, type BatchScanStep, type CompiledQuery, type ScanSource } from '../../operators/scan';
import type { Chunk } from '../../stream/chunk';
import type { QueryResultElement, QuerySpec } from '../../stream/queryElement';
import { StageCounters } from '../../stream/stageCounters';
import { idOf, specOf, TestQuery } from '../support/testQuery';

const RS = 4;

/** One batch: its steps' records, each record's key (its first byte) given. */
interface MemBatch {
  readonly steps: readonly (readonly number[])[];
  readonly hashOk?: boolean;
  readonly unreadable?: boolean;
}

/** The k largest first bytes, ties with the k-th kept, original order (what engine-rs TopPlan does for one u8 field). */
function topOf(k: number) {
  return (records: Buffer): Buffer => {
    const keys = [];
    for (let at = 0; at < records.length; at += RS) keys.push(records[at] as number);
    if (keys.length <= k) return Buffer.from(records);
    const cut = [...keys].sort((a, b) => b - a)[k - 1] as number;
    return Buffer.concat(keys.flatMap((key, i) => (key >= cut ? [records.subarray(i * RS, (i + 1) * RS)] : [])));
  };
}

/** Sums of matched record counts; the JSON array of one group. */
class SumAcc implements PartialAccumulator {
  total = 0;
  take(): string {
    const t = this.total;
    this.total = 0;
    return `[{"k":[],"m":["${t}"]}]`;
  }
}

function source(batches: Map<string, MemBatch>, with_: { top?: number; merged?: boolean }): ScanSource {
  return {
    compile(): Promise<CompiledQuery> {
      return Promise.resolve({
        recordSize: RS,
        ...(with_.top !== undefined && { selectTop: topOf(with_.top) }),
        ...(with_.merged && { aggregate: true, newAccumulator: () => new SumAcc() }),
        open: (batchId: BatchID): Promise<BatchScan | { code: number; message: string }> => {
          const b = batches.get(batchId.toHex());
          if (!b || b.unreadable) return Promise.resolve({ code: 13, message: 'not held' });
          let i = 0;
          let matched = 0;
          const scanStep = async (): Promise<BatchScanStep> => {
            const keys = b.steps[i++] ?? [];
            const done = i >= b.steps.length;
            matched += keys.length;
            const records = with_.merged ? Buffer.alloc(0) : Buffer.concat(keys.map((k) => Buffer.from([k, 0, 0, i])));
            return { records, matched: keys.length, scanned: keys.length, blocksRead: 1, blocksSkipped: 0, done, ...(done && b.hashOk !== undefined ? { hashOk: b.hashOk } : {}) };
          };
          return Promise.resolve({
            next: scanStep,
            ...(with_.merged && {
              foldInto: (acc: PartialAccumulator) => {
                (acc as SumAcc).total += matched;
                return true;
              },
            }),
            close: () => undefined,
          });
        },
      });
    },
  };
}

async function run(src: ScanSource, spec: QuerySpec, counters = new StageCounters('records')): Promise<{ out: QueryResultElement[]; q: TestQuery }> {
  const input = new Subject<Chunk>();
  const out = firstValueFrom((input as Observable<Chunk>).pipe(scan({ source: src, scheduler: new ReadScheduler(2), counters }), toArray()));
  const q = new TestQuery(spec, RS);
  input.next({ kind: 'query', query: q });
  input.complete();
  return { out: (await out) as QueryResultElement[], q };
}

const batches = (entries: [number, MemBatch][]): Map<string, MemBatch> => new Map(entries.map(([n, b]) => [idOf(n).toHex(), b]));

const t = suite('scan operator: top records and merged partials');

t('top: a batch sends its best records once, at its end, ties kept; its eob counts what was sent', async () => {
  const src = source(
    batches([
      [1, { steps: [[5, 1, 9], [9, 2, 7]] }],
      [2, { steps: [[3]] }],
      [3, { steps: [[], []] }],
    ]),
    { top: 2 },
  );
  const counters = new StageCounters('records');
  const { out } = await run(src, specOf(4, [idOf(1), idOf(2), idOf(3)], { top: { field: 'k', k: 2, desc: true } }), counters);
  const records = out.filter((e) => e.kind === 'records');
  assert.is(records.length, 2, 'one records element per batch that matched');
  const first = records[0] as Extract<QueryResultElement, { kind: 'records' }>;
  assert.ok(first.batchId.equals(idOf(1)));
  // Keys 9 (step 1), 9 (step 2): the two best, in order; 7 is third.
  assert.equal([...first.buf].filter((_, i) => i % RS === 0), [9, 9]);
  const eobs = out.filter((e) => e.kind === 'eob') as Extract<QueryResultElement, { kind: 'eob' }>[];
  assert.equal(
    eobs.map((e) => [Number(e.batchId.toHex().slice(-2)), e.recordCount]),
    [
      [1, 2],
      [2, 1],
      [3, 0],
    ],
  );
  assert.is(counters.sent, 3);
  assert.is(counters.dropped, 4, 'the matches left out by the top');
});

t('merged partials: one aggregate element completes the folded batches; a bbn batch and a failed hash are not folded', async () => {
  const src = source(
    batches([
      [1, { steps: [[1, 1], [1]] }],
      [2, { steps: [[1]] }],
      [3, { steps: [[1, 1]], hashOk: false }],
      [4, { steps: [[]] }],
      [5, { steps: [[1]], unreadable: true }],
    ]),
    { merged: true },
  );
  const { out } = await run(src, specOf(5, [1, 2, 3, 4, 5].map(idOf), { aggregateJson: '{}', mergeBatches: true, verifyHash: true }));
  const aggs = out.filter((e) => e.kind === 'aggregate') as Extract<QueryResultElement, { kind: 'aggregate' }>[];
  assert.is(aggs.length, 1);
  const a = aggs[0] as Extract<QueryResultElement, { kind: 'aggregate' }>;
  const json = JSON.parse(a.json) as { v: number; batches: [string, number][]; groups: { m: string[] }[] };
  assert.is(json.v, 2);
  assert.equal(
    json.batches.map(([id, n]) => [id.slice(-2), n]),
    [
      ['01', 3],
      ['02', 1],
      ['04', 0],
    ],
  );
  assert.equal(json.groups, [{ k: [], m: ['4'] }], 'the folded batches only: 3 + 1 + 0');
  assert.ok(a.batchId.equals(idOf(1)), "the frame's batch is the first it completes");
  assert.equal(
    a.completes?.map((c) => c.recordCount),
    [3, 1, 0],
  );
  assert.is(out.filter((e) => e.kind === 'eob').length, 0, 'no eob element: the frame completes them');
  const bbns = out.filter((e) => e.kind === 'bbn') as Extract<QueryResultElement, { kind: 'bbn' }>[];
  assert.equal(bbns.map((b) => [b.batchId.toHex().slice(-2), b.code]).sort(), [
    ['03', 12],
    ['05', 13],
  ]);
});

t('merged rows: small batches go out together under the first that matched, one eobs ends them; a large one streams as before', async () => {
  const big = Array.from({ length: 70_000 }, () => 1); // 280 000 bytes: over what a batch may hold
  const src = source(
    batches([
      [1, { steps: [[]] }],
      [2, { steps: [[4], [5]] }],
      [3, { steps: [big] }],
      [4, { steps: [[6]] }],
    ]),
    {},
  );
  const { out } = await run(src, specOf(6, [1, 2, 3, 4].map(idOf), { mergeBatches: true }));
  const recs = out.filter((e) => e.kind === 'records') as Extract<QueryResultElement, { kind: 'records' }>[];
  const eobs = out.filter((e) => e.kind === 'eob') as Extract<QueryResultElement, { kind: 'eob' }>[];
  const groups = out.filter((e) => e.kind === 'eobs') as Extract<QueryResultElement, { kind: 'eobs' }>[];
  // Batch 3 streamed with its own eob.
  assert.equal(eobs.map((e) => [e.batchId.toHex().slice(-2), e.recordCount]), [['03', 70_000]]);
  assert.is(recs.filter((r) => r.batchId.equals(idOf(3))).reduce((n, r) => n + r.count, 0), 70_000);
  // 1, 2 and 4 in one group, under batch 2, declared with all three rows.
  assert.is(groups.length, 1);
  assert.equal(
    groups[0]?.completes.map((c) => [c.batchId.toHex().slice(-2), c.recordCount]),
    [
      ['01', 0],
      ['02', 3],
      ['04', 0],
    ],
  );
  const carried = recs.filter((r) => r.batchId.equals(idOf(2)));
  assert.equal(carried.flatMap((r) => [...r.buf].filter((_, i) => i % RS === 0)), [4, 5, 6]);
  // The group's rows come before its eobs.
  assert.ok(out.indexOf(carried[0] as QueryResultElement) < out.indexOf(groups[0] as QueryResultElement));
});

t('merged rows with a top: the best of every held batch, once', async () => {
  const src = source(
    batches([
      [1, { steps: [[3, 9]] }],
      [2, { steps: [[8, 1]] }],
      [3, { steps: [[2]] }],
    ]),
    { top: 2 },
  );
  const { out } = await run(src, specOf(7, [1, 2, 3].map(idOf), { top: { field: 'k', k: 2, desc: true }, mergeBatches: true }));
  const recs = out.filter((e) => e.kind === 'records') as Extract<QueryResultElement, { kind: 'records' }>[];
  assert.equal(recs.flatMap((r) => [...r.buf].filter((_, i) => i % RS === 0)), [9, 8]);
  assert.ok(recs.every((r) => r.batchId.equals(idOf(1))));
  assert.is(out.filter((e) => e.kind === 'eob').length, 0);
  assert.is(out.filter((e) => e.kind === 'eobs').length, 1);
});

t.run();
