/**
 * Rows groups in the scan operator (operators/summaryGroup.ts `readRowsGroup`, queryReads.ts): with
 * merged rows over a filter, small batches are scanned whole in one call; their matches are held
 * and sent together (their best with a `top`), one too large to hold goes out at once with its own
 * eob, the batches the call leaves are read as usual, and the query gets the same records, batch
 * ends and counters as when every batch is read on its own. The source is in memory (the native
 * group has its own tests in engine-rs and test/nodes/storageNode/compiledPlans.test.ts).
 */
import { firstValueFrom, Subject, toArray, type Observable } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import { MergedRows } from '../../operators/mergedRows';
import { ReadScheduler } from '../../operators/readScheduler';
import { scan, type BatchScan, type CompiledQuery, type RowsAnswers, type ScanSource } from '../../operators/scan';
import type { Chunk } from '../../stream/chunk';
import type { QueryResultElement, QuerySpec } from '../../stream/queryElement';
import { StageCounters } from '../../stream/stageCounters';
import { idOf, specOf, TestQuery } from '../support/testQuery';

const RS = 4;
const num = (id: BatchID): number => Number(id.toHex().slice(-8));

/** A batch: its records' values; `matches`: which match; `group`: a group call scans it (else its own read); `unreadable`. */
interface MemBatch {
  readonly values: number[];
  readonly group: boolean;
  readonly unreadable?: boolean;
}

const matches = (v: number): boolean => v % 3 === 0;
const recordsOf = (values: number[]): Buffer => {
  const b = Buffer.alloc(values.length * RS);
  values.forEach((v, i) => b.writeUInt32LE(v, i * RS));
  return b;
};
/** The best record (largest value) and its ties, in order: a top of 1. */
const top1 = (records: Buffer): Buffer => {
  let best = -1;
  for (let i = 0; i < records.length; i += RS) best = Math.max(best, records.readUInt32LE(i));
  const keep: Buffer[] = [];
  for (let i = 0; i < records.length; i += RS) if (records.readUInt32LE(i) === best) keep.push(records.subarray(i, i + RS));
  return Buffer.concat(keep);
};

function source(batches: Map<number, MemBatch>, calls: { groups: number[][]; opened: number[] }, opts: { noGroups?: boolean; top?: boolean } = {}): ScanSource {
  const fromRows = async (ids: readonly BatchID[]): Promise<RowsAnswers> => {
    calls.groups.push(ids.map(num));
    const rows: Buffer[] = [];
    const answers = ids.map((id) => {
      const b = batches.get(num(id));
      if (!b || b.unreadable || !b.group) return [-1, -1, -1, -1, -1, -1];
      const m = recordsOf(b.values.filter(matches));
      // With a top the native call keeps each batch's best.
      const kept = opts.top ? top1(m) : m;
      rows.push(kept);
      return [b.values.length, 1, m.length / RS, b.values.length, 0, kept.length / RS];
    });
    const col = (k: number): Float64Array => Float64Array.from(answers.map((a) => a[k] as number));
    return { records: col(0), blocks: col(1), matched: col(2), scanned: col(3), skipped: col(4), kept: col(5), rows: Buffer.concat(rows) };
  };
  return {
    compile(): Promise<CompiledQuery> {
      return Promise.resolve({
        recordSize: RS,
        ...(opts.top && { selectTop: top1 }),
        ...(!opts.noGroups && { fromRows }),
        open: (batchId: BatchID): Promise<BatchScan | { code: number; message: string }> => {
          calls.opened.push(num(batchId));
          const b = batches.get(num(batchId));
          if (!b || b.unreadable) return Promise.resolve({ code: 13, message: `batch ${num(batchId)} not held` });
          const m = b.values.filter(matches);
          return Promise.resolve({
            next: () => Promise.resolve({ records: recordsOf(m), matched: m.length, scanned: b.values.length, blocksRead: 1, blocksSkipped: 0, done: true }),
            close: () => undefined,
          });
        },
      });
    },
  };
}

async function run(src: ScanSource, spec: QuerySpec) {
  const counters = new StageCounters('records');
  const input = new Subject<Chunk>();
  const out = firstValueFrom((input as Observable<Chunk>).pipe(scan({ source: src, scheduler: new ReadScheduler(2), counters, queryThreads: 2 }), toArray()));
  input.next({ kind: 'query', query: new TestQuery(spec, RS) });
  input.complete();
  return { out: (await out) as QueryResultElement[], counters };
}

/** What the query got: the values sent (sorted), the batches ended with their counts, the bbns. */
function answer(out: QueryResultElement[]) {
  const values: number[] = [];
  const ended: [number, number][] = [];
  const bbns: number[] = [];
  for (const e of out) {
    if (e.kind === 'records') for (let i = 0; i < e.buf.length; i += RS) values.push(e.buf.readUInt32LE(i));
    if (e.kind === 'eob') ended.push([num(e.batchId), e.recordCount]);
    if (e.kind === 'eobs') for (const c of e.completes) ended.push([num(c.batchId), c.recordCount]);
    if (e.kind === 'bbn') bbns.push(num(e.batchId));
  }
  return { values: values.sort((a, b) => a - b), batches: ended.map((x) => x[0]).sort((a, b) => a - b), sent: ended.reduce((s, x) => s + x[1], 0), bbns };
}

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
const t = suite('scan operator: small batches scanned as a group (merged rows)');

for (const top of [false, true]) {
  t(`the group's batches give the records, batch ends and counters of one-by-one reads${top ? ', with a top' : ''}`, async () => {
    const big = (MergedRows.MAX_BATCH_BYTES / RS) * 3 + 30;
    const batches = new Map<number, MemBatch>([
      [1, { values: range(0, 50), group: true }],
      [2, { values: range(100, 7), group: false }],
      [3, { values: range(200, 90), group: true }],
      [4, { values: range(1000, big), group: true }],
      [5, { values: range(400, 3), group: true, unreadable: true }],
      [6, { values: [1, 2], group: true }],
    ]);
    const spec = specOf(9, [1, 2, 3, 4, 5, 6].map(idOf), { mergeBatches: true });
    const calls = { groups: [] as number[][], opened: [] as number[] };
    const grouped = await run(source(batches, calls, { top }), spec);
    const alone = await run(source(batches, { groups: [], opened: [] }, { noGroups: true, top }), spec);
    assert.equal(calls.groups, [[1, 2, 3, 4, 5, 6]], 'one group for all');
    assert.equal(calls.opened.sort(), [2, 5], 'only what the group left is opened');
    const a = answer(grouped.out);
    assert.equal(a, answer(alone.out));
    assert.equal(a.bbns, [5]);
    assert.equal(a.batches, [1, 2, 3, 4, 6], 'every readable batch ended once');
    if (!top) assert.is(a.values.length, [1, 2, 3, 4, 6].reduce((s, k) => s + (batches.get(k) as MemBatch).values.filter(matches).length, 0));
    // The large batch went out on its own, ended by its own eob.
    if (!top) assert.ok(grouped.out.some((e) => e.kind === 'eob' && num(e.batchId) === 4));
    for (const k of ['received', 'sent', 'dropped', 'errors'] as const) assert.is(grouped.counters[k], alone.counters[k], k);
  });
}

t('limit or verify_hash: no group, each batch read on its own', async () => {
  const batches = new Map<number, MemBatch>([1, 2, 3].map((k) => [k, { values: range(k * 10, 9), group: true }]));
  for (const extra of [{ limit: 100 }, { verifyHash: true }]) {
    const calls = { groups: [] as number[][], opened: [] as number[] };
    await run(source(batches, calls), specOf(3, [1, 2, 3].map(idOf), { mergeBatches: true, ...extra }));
    assert.equal(calls.groups, [], JSON.stringify(extra));
    assert.equal(calls.opened.sort(), [1, 2, 3]);
  }
});

t.run();
