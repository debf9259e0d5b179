import { firstValueFrom, Subject, toArray, type Observable } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import { MAX_CHUNK_BYTES, type Chunk } from '../../stream/chunk';
import type { QueryResultElement } from '../../stream/queryElement';
import { ReadScheduler } from '../../operators/readScheduler';
import { scan, type BatchScan, type BatchScanStep, type CompiledQuery, type ScanSource } from '../../operators/scan';
import { StageCounters } from '../../stream/stageCounters';
import { QueryError } from '../../query/queryError';
import { idOf, specOf, TestQuery } from '../support/testQuery';

const RS = 8;

/** One batch of the in-memory source: its steps' records (every record matches), or why it cannot be read. */
interface MemBatch {
  steps?: number[];
  /** The step that throws (a damaged block). */
  failAt?: number;
  hashOk?: boolean;
  unreadable?: string;
}

/** A ScanSource over batches held in memory; counts the steps read per query. */
class MemorySource implements ScanSource {
  readonly reads = new Map<number, number>();

  constructor(
    private readonly batches: Map<string, MemBatch>,
    private readonly compileError?: Error,
  ) {}

  compile(spec: { queryId: number }): Promise<CompiledQuery> {
    if (this.compileError) return Promise.reject(this.compileError);
    return Promise.resolve({
      recordSize: RS,
      open: (batchId: BatchID): Promise<BatchScan | { code: number; message: string }> => {
        const b = this.batches.get(batchId.toHex());
        if (!b || b.unreadable) return Promise.resolve({ code: 13, message: b?.unreadable ?? 'not held' });
        let i = 0;
        const steps = b.steps ?? [];
        return Promise.resolve({
          next: async (): Promise<BatchScanStep> => {
            this.reads.set(spec.queryId, (this.reads.get(spec.queryId) ?? 0) + 1);
            if (b.failAt === i) throw new Error('ERR_SEGMENT_BLOCK_CHECKSUM: block 3');
            const n = steps[i++] ?? 0;
            const done = i >= steps.length;
            return { records: Buffer.alloc(n * RS, i), matched: n, scanned: n * 2, blocksRead: 1, blocksSkipped: 0, done, ...(done && b.hashOk !== undefined ? { hashOk: b.hashOk } : {}) };
          },
          close: () => undefined,
        });
      },
    });
  }
}

function source(entries: [number, MemBatch][]): MemorySource {
  return new MemorySource(new Map(entries.map(([n, b]) => [idOf(n).toHex(), b])));
}

/** What a scan emits for `queries`, once its input completed and the queries ended. */
async function run(src: ScanSource, queries: TestQuery[], counters = new StageCounters('records'), slots = 2): Promise<QueryResultElement[]> {
  const input = new Subject<Chunk>();
  const out = firstValueFrom((input as Observable<Chunk>).pipe(scan({ source: src, scheduler: new ReadScheduler(slots), counters }), toArray()));
  for (const q of queries) input.next({ kind: 'query', query: q });
  input.complete();
  return (await out) as QueryResultElement[];
}

const op = suite('scan operator');

op('records then one eob per batch, in the query\'s batch order; counters add up', async () => {
  const src = source([
    [1, { steps: [3, 0, 2] }],
    [2, { steps: [] }],
    [3, { steps: [5] }],
  ]);
  const q = new TestQuery(specOf(7, [idOf(3), idOf(1), idOf(2)]));
  const counters = new StageCounters('records');
  const out = await run(src, [q], counters);
  assert.equal(
    out.map((e) => `${e.kind}:${'batchId' in e ? e.batchId.toHex().slice(-1) : ''}:${e.kind === 'records' ? e.count : e.kind === 'eob' ? e.recordCount : e.kind === 'bbn' ? e.code : e.kind}`),
    ['records:3:5', 'eob:3:5', 'records:1:3', 'records:1:2', 'eob:1:5', 'eob:2:0'],
  );
  assert.ok(out.every((e) => e.results.query === q && e.results.batches === 3 && e.results.recordSize === RS));
  assert.equal(counters.snapshot(), { unit: 'records', received: 20, sent: 10, dropped: 10, held: 0, errors: 0, controls: 3 });
  assert.is(q.ended, false, 'the result stream ends the query once it has written everything');
});

op('a step larger than a chunk is cut into chunks of at most 4 MiB at whole records', async () => {
  const big = Math.floor((MAX_CHUNK_BYTES * 2.5) / RS);
  const out = await run(source([[1, { steps: [big] }]]), [new TestQuery(specOf(1, [idOf(1)]))]);
  const recs = out.filter((e) => e.kind === 'records');
  assert.is(recs.length, 3);
  assert.ok(recs.every((e) => e.kind === 'records' && e.buf.length <= MAX_CHUNK_BYTES && e.buf.length % RS === 0));
  assert.is(recs.reduce((n, e) => n + (e.kind === 'records' ? e.count : 0), 0), big);
});

op('unreadable (13), damaged mid-read (13) and hash mismatch (12) end their batch with a bbn; the others go on', async () => {
  const src = source([
    [1, { unreadable: "batch … of 'ds' is not held by node 'sn1'" }],
    [2, { steps: [1, 1, 1], failAt: 1 }],
    [3, { steps: [2], hashOk: false }],
    [4, { steps: [1], hashOk: true }],
  ]);
  const q = new TestQuery(specOf(2, [idOf(1), idOf(2), idOf(3), idOf(4)], { verifyHash: true }));
  const out = await run(src, [q]);
  const ends = out.filter((e) => e.kind !== 'records');
  assert.equal(
    ends.map((e) => (e.kind === 'bbn' ? e.code : 'eob')),
    [13, 13, 12, 'eob'],
  );
  const [unheld, damaged, mismatch] = ends.map((e) => (e.kind === 'bbn' ? e.reason : ''));
  assert.is(unheld, "13 batch unreadable: batch … of 'ds' is not held by node 'sn1'");
  assert.match(damaged, /^13 batch unreadable: batch [0-9a-f]{128} of 'ds' could not be read: ERR_SEGMENT_BLOCK_CHECKSUM/);
  assert.match(mismatch, /^12 hash mismatch: batch [0-9a-f]{128} of 'ds': the recomputed hash chain does not match/);
});

op('a filter the schema refuses: error 11 to the SCC, nothing emitted, the query ends; other failures are 7', async () => {
  const bad = new TestQuery(specOf(3, [idOf(1)]));
  assert.equal(await run(new MemorySource(new Map(), new QueryError('sub_queries[0].filters[0].value', '300 does not fit uint8')), [bad]), []);
  assert.equal(bad.replies, [{ kind: 'error', code: 11, message: 'sub_queries[0].filters[0].value: 300 does not fit uint8' }]);
  assert.ok(bad.ended);
  const broken = new TestQuery(specOf(4, [idOf(1)]));
  await run(new MemorySource(new Map(), new Error('disk gone')), [broken]);
  assert.is(broken.replies[0].kind === 'error' && broken.replies[0].code, 7);
  // A query of no batches ends at once.
  const none = new TestQuery(specOf(5, []));
  assert.equal(await run(source([]), [none]), []);
  assert.ok(none.ended);
});

op('stopped mid-batch: no more reads, no eob for that batch or later ones', async () => {
  const src = source([
    [1, { steps: Array(100).fill(1) }],
    [2, { steps: [1] }],
  ]);
  const q = new TestQuery(specOf(6, [idOf(1), idOf(2)]));
  const input = new Subject<Chunk>();
  const seen: QueryResultElement[] = [];
  const done = new Promise<void>((resolve) =>
    input.pipe(scan({ source: src, scheduler: new ReadScheduler(1) })).subscribe({
      next: (e) => {
        seen.push(e as QueryResultElement);
        if (seen.length === 10) q.stop({ code: 4, message: 'query 6 cancelled' });
      },
      complete: resolve,
    }),
  );
  input.next({ kind: 'query', query: q });
  input.complete();
  await done;
  assert.is(seen.length, 10);
  assert.ok(seen.every((e) => e.kind === 'records'));
  assert.is(src.reads.get(6), 10, 'the step in hand finished, none after it');
});

op('limit: reading stops once enough matched; the batches left end with an empty eob, unread', async () => {
  const src = source([
    [1, { steps: [4, 4, 4, 4] }],
    [2, { steps: [4] }],
  ]);
  const q = new TestQuery(specOf(8, [idOf(1), idOf(2)], { limit: 6 }));
  const out = await run(src, [q]);
  assert.equal(
    out.map((e) => `${e.kind}:${e.kind === 'records' ? e.count : e.kind === 'eob' ? e.recordCount : ''}`),
    ['records:4', 'records:4', 'eob:8', 'eob:0'],
  );
  assert.is(src.reads.get(8), 2);
});

op('a query waits while more than max_pending_chunks of its results are unwritten', async () => {
  const src = source([[1, { steps: Array(20).fill(1) }]]);
  const q = new TestQuery(specOf(9, [idOf(1)]));
  const input = new Subject<Chunk>();
  const held: QueryResultElement[] = [];
  input.pipe(scan({ source: src, scheduler: new ReadScheduler(1), maxPendingChunks: 3 })).subscribe((e) => {
    const r = e as QueryResultElement;
    r.results.flow.begin(); // the sink has it and has not written it yet
    held.push(r);
  });
  input.next({ kind: 'query', query: q });
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  assert.is(src.reads.get(9), 4, 'reads pause once 4 chunks wait (more than 3)');
  held[0].results.flow.end();
  held[1].results.flow.end();
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  assert.is(src.reads.get(9), 6);
  q.stop({ code: 4, message: 'done' });
  for (const h of held.slice(2)) h.results.flow.end();
  input.complete();
});

op('queries of weight 8 and 1 on one read slot: 8 steps for each step', async () => {
  const src = source([
    [1, { steps: Array(1000).fill(1) }],
    [2, { steps: Array(1000).fill(1) }],
  ]);
  const heavy = new TestQuery(specOf(10, [idOf(1)], { qos: 8 }));
  const light = new TestQuery(specOf(11, [idOf(2)], { qos: 1 }));
  const input = new Subject<Chunk>();
  const done = new Promise<void>((resolve) => input.pipe(scan({ source: src, scheduler: new ReadScheduler(1) })).subscribe({ complete: resolve }));
  input.next({ kind: 'query', query: heavy });
  input.next({ kind: 'query', query: light });
  input.complete();
  while ((src.reads.get(10) ?? 0) + (src.reads.get(11) ?? 0) < 180) await new Promise((r) => setImmediate(r));
  const [h, l] = [src.reads.get(10) ?? 0, src.reads.get(11) ?? 0];
  heavy.stop({ code: 4, message: 'enough' });
  light.stop({ code: 4, message: 'enough' });
  await done;
  assert.ok(Math.abs(h / (h + l) - 8 / 9) < 0.03, `heavy ${h}, light ${l}`);
});

op('teardown stops running queries (code 9); a non-query element is an error', async () => {
  const q = new TestQuery(specOf(12, [idOf(1)]));
  const input = new Subject<Chunk>();
  // The subscriber never writes what it gets, so the query stays paused on its results, running.
  const sub = input.pipe(scan({ source: source([[1, { steps: Array(1000).fill(1) }]]), scheduler: new ReadScheduler(1) })).subscribe((e) => (e as QueryResultElement).results.flow.begin());
  input.next({ kind: 'query', query: q });
  await new Promise((r) => setImmediate(r));
  sub.unsubscribe();
  assert.equal(q.signal.reason, { code: 9, message: 'the storage node is shutting down' });

  const got = await new Promise<unknown>((resolve) => {
    const s = new Subject<Chunk>();
    s.pipe(scan({ source: source([]), scheduler: new ReadScheduler(1) })).subscribe({ error: resolve });
    s.next({ kind: 'bytes', source: 'x', offset: 0, buf: Buffer.alloc(1) });
  });
  assert.match(String(got), /scan takes queries, got a 'bytes' element/);
});

op('an upstream error passes through', async () => {
  const s = new Subject<Chunk>();
  const got = new Promise<unknown>((resolve) => s.pipe(scan({ source: source([]), scheduler: new ReadScheduler(1) })).subscribe({ error: resolve }));
  s.error(new Error('upstream broke'));
  assert.match(String(await got), /upstream broke/);
});

op.run();
