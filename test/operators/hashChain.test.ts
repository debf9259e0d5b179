import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, lastValueFrom, Observable, of, toArray } from 'rxjs';
import { generateBatchIdNumber, type BatchID } from '../../engine-rs/batchId';
import { HashChain, type HashAlgorithmName } from '../../engine-rs/hashChain';
import type { AckResult, Chunk, EobElement } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { hashChain, type HashQueueStats } from '../../operators/hashChain';
import { StageCounters } from '../../stream/stageCounters';

const RS = 150;
const id = (n: number): BatchID => generateBatchIdNumber(n);
/** Deterministic record bytes. */
const bytes = (records: number, seed: number): Buffer => {
  const b = Buffer.alloc(records * RS);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < b.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
};
/** `buf` as records chunks of the given sizes in records, cycling through `sizes`. */
const chunks = (batch: BatchID, buf: Buffer, sizes: number[], dataset = 'ds'): Chunk[] => {
  const out: Chunk[] = [];
  for (let off = 0, i = 0; off < buf.length; i++) {
    const n = Math.min(sizes[i % sizes.length], (buf.length - off) / RS);
    out.push({ kind: 'records', dataset, batchId: batch, count: n, recordSize: RS, buf: buf.subarray(off, off + n * RS) });
    off += n * RS;
  }
  return out;
};
const direct = async (batch: BatchID, buf: Buffer, algorithm: HashAlgorithmName = 'sha512', blockSize = 64): Promise<Buffer> => {
  const c = new HashChain(batch, { algorithm, recordSize: RS, blockSize });
  await c.update(buf);
  return c.finish().closingHash;
};
const acks: AckResult[] = [];
const eob = (batch: BatchID, recordCount: number, closingHash?: Buffer): EobElement => ({ kind: 'eob', dataset: 'ds', batchId: batch, recordCount, ack: (r) => acks.push(r), ...(closingHash ? { closingHash } : {}) });
const run = (els: Chunk[], o: Partial<Parameters<typeof hashChain>[0]> = {}): Promise<Chunk[]> =>
  lastValueFrom(of(...els).pipe(hashChain({ recordSize: RS, maxQueueBytes: 4 << 20, ...o }), toArray()));

const hc = suite('hashChain: closing hash');
hc('equals a HashChain over the same bytes, whatever the chunking, for every algorithm', async () => {
  const b = id(42);
  const data = bytes(1000, 1);
  for (const algorithm of ['sha512', 'sha256', 'blake3'] as const) {
    const want = await direct(b, data, algorithm, 16);
    for (const sizes of [[1000], [1], [7, 64, 3], [63, 65], [128]]) {
      const out = await run([...chunks(b, data, sizes), eob(b, 1000)], { algorithm, blockSize: 16 });
      const last = out[out.length - 1];
      assert.is(last.kind, 'eob');
      assert.ok(last.kind === 'eob' && last.closingHash && Buffer.from(last.closingHash).equals(want), `${algorithm} ${sizes.join(',')}`);
    }
  }
});
hc('chunks pass through unchanged and in order; batches interleave; the ack hook travels with the eob', async () => {
  const [a, c] = [id(1), id(2)];
  const da = bytes(10, 2);
  const dc = bytes(5, 3);
  const ea = eob(a, 10);
  const input = [...chunks(a, da, [4]), ...chunks(c, dc, [5]), ea, eob(c, 5)];
  const counters = new StageCounters('records');
  const out = await run(input, { counters });
  assert.is(out.length, input.length);
  for (let i = 0; i < 4; i++) assert.is(out[i], input[i], 'the same chunk objects');
  const outA = out[4] as EobElement;
  assert.ok(Buffer.from(outA.closingHash as Uint8Array).equals(await direct(a, da)));
  assert.is(outA.ack, ea.ack);
  assert.ok(Buffer.from((out[5] as EobElement).closingHash as Uint8Array).equals(await direct(c, dc)));
  assert.equal(counters.snapshot(), { unit: 'records', received: 15, sent: 15, dropped: 0, held: 0, errors: 0, controls: 2 });
});
hc('an empty batch closes with the hash of its batch id; a bbn drops the chain', async () => {
  const out = await run([eob(id(9), 0)]);
  assert.ok(Buffer.from((out[0] as EobElement).closingHash as Uint8Array).equals(await direct(id(9), Buffer.alloc(0))));
  const d = bytes(3, 4);
  const out2 = await run([...chunks(id(5), d, [2]), { kind: 'bbn', dataset: 'ds', batchId: id(5), reason: 'x' }, ...chunks(id(5), d, [3]), eob(id(5), 3)]);
  const last = out2[out2.length - 1] as EobElement;
  assert.ok(Buffer.from(last.closingHash as Uint8Array).equals(await direct(id(5), d)), 'records after the bbn start a fresh chain');
});
hc.run();

const refuse = suite('hashChain: refused batches');
refuse('a wrong record count, a sender hash that differs, a wrong record size: the eob becomes a bbn and the sender hears why', async () => {
  const b = id(3);
  const d = bytes(4, 5);
  const problems: string[] = [];
  const cases: [Chunk[], RegExp][] = [
    [[...chunks(b, d, [4]), eob(b, 5)], /its eob counts 5 records, 4 arrived/],
    [[...chunks(b, d, [4]), eob(b, 4, Buffer.alloc(64, 1))], /closing hash differs/],
    [[{ kind: 'records', dataset: 'ds', batchId: b, count: 2, recordSize: 8, buf: Buffer.alloc(16) }, eob(b, 2)], /records of 8 bytes; this SCC hashes RECORD_SIZE=150/],
  ];
  for (const [input, re] of cases) {
    acks.length = 0;
    const out = await run(input, { onProblem: (m) => problems.push(m) });
    const last = out[out.length - 1];
    assert.is(last.kind, 'bbn');
    assert.match(last.kind === 'bbn' ? last.reason : '', re);
    assert.is(acks.length, 0, 'the sender is answered only once the replicas discarded the batch');
    if (last.kind === 'bbn') last.ack?.({ ok: true });
    assert.is(acks.length, 1);
    assert.ok(!acks[0].ok && re.test(acks[0].message) && acks[0].code > 0);
  }
  assert.is(problems.length, 3);
});
refuse('a matching sender hash is accepted', async () => {
  const b = id(4);
  const d = bytes(4, 6);
  const out = await run([...chunks(b, d, [1]), eob(b, 4, await direct(b, d))]);
  assert.is(out[out.length - 1].kind, 'eob');
});
refuse.run();

const queue = suite('hashChain: MAX_HASH_QUEUE_BYTES');
queue('never more than the cap is queued for hashing; a full queue makes chunks wait (holding the flow)', async () => {
  const b = id(7);
  const data = bytes(20 * 2000, 7); // 20 chunks of 300 000 bytes
  const stats: HashQueueStats = { queuedBytes: 0, highWater: 0, waits: 0, openChains: 0 };
  const cap = 1 << 20;
  const flow = new Flow();
  // A pulling source (as hdwpSource grants credit): the next chunk comes only once no work is pending.
  const pendingWhenWaiting: number[] = [];
  const out = await lastValueFrom(
    new Observable<Chunk>((s) => {
      void (async () => {
        for (const c of chunks(b, data, [2000])) {
          const waitsBefore = stats.waits;
          s.next(c);
          if (stats.waits > waitsBefore) pendingWhenWaiting.push(flow.pending);
          await flow.whenAtMost(0);
        }
        s.next(eob(b, 40000));
        s.complete();
      })();
    }).pipe(
      hashChain({ recordSize: RS, maxQueueBytes: cap, stats, flow }),
      toArray(),
    ),
  );
  assert.ok(stats.highWater <= cap, `high water ${stats.highWater} over the cap ${cap}`);
  assert.ok(stats.highWater >= 3 * 300_000, 'the queue does fill up to the cap');
  assert.ok(stats.waits > 0, 'chunks waited for room');
  assert.is(stats.queuedBytes, 0);
  assert.ok(pendingWhenWaiting.length > 0 && pendingWhenWaiting.every((p) => p === 1), 'a waiting chunk holds its unit of flow, so the source does not pull');
  assert.is(flow.pending, 0, 'every unit of flow was given back');
  const last = out[out.length - 1] as EobElement;
  assert.ok(Buffer.from(last.closingHash as Uint8Array).equals(await direct(b, data)));
});
queue('a chunk larger than the cap goes alone into an empty queue', async () => {
  const b = id(8);
  const data = bytes(4000, 8); // one chunk of 600 000 bytes
  const stats: HashQueueStats = { queuedBytes: 0, highWater: 0, waits: 0, openChains: 0 };
  const out = await run([...chunks(b, data, [4000]), ...chunks(id(9), data, [4000]), eob(b, 4000), eob(id(9), 4000)], { maxQueueBytes: 100_000, stats });
  assert.is(stats.highWater, 600_000);
  assert.is(out.length, 4);
});
queue.run();

const life = suite('hashChain: lifecycle');
life('empty input, upstream error, wrong elements, bad settings', async () => {
  assert.equal(await lastValueFrom(EMPTY.pipe(hashChain({ recordSize: RS, maxQueueBytes: 1 }), toArray())), []);
  let err: unknown;
  await new Promise<void>((resolve) =>
    new Observable<Chunk>((s) => s.error(new Error('socket gone'))).pipe(hashChain({ recordSize: RS, maxQueueBytes: 1 })).subscribe({ error: (e) => ((err = e), resolve()) }),
  );
  assert.match(String(err), /socket gone/);
  await new Promise<void>((resolve) =>
    of<Chunk>({ kind: 'bytes', source: 'x', offset: 0, buf: Buffer.alloc(1) }).pipe(hashChain({ recordSize: RS, maxQueueBytes: 1 })).subscribe({ error: (e) => ((err = e), resolve()) }),
  );
  assert.match(String(err), /got a 'bytes' element/);
  assert.throws(() => hashChain({ recordSize: RS, maxQueueBytes: 0 }), /maxQueueBytes/);
  assert.throws(() => hashChain({ recordSize: 0, maxQueueBytes: 1 }));
  assert.throws(() => hashChain({ recordSize: RS, maxQueueBytes: 1, algorithm: 'md5' as HashAlgorithmName }), /unknown hash algorithm/);
});
life.run();

const twice = suite('hashChain: state per subscription');
twice('two subscriptions at once each chain their own copy of the batch', async () => {
  // Per-application state (issue #16) put both subscriptions' records into one chain: an eob counting
  // 40 records met 80 (or 0), and the batch was refused.
  const b = id(77);
  const data = bytes(40, 9);
  const want = await direct(b, data);
  const chained = of(...chunks(b, data, [7, 13]), { kind: 'eob', dataset: 'ds', batchId: b, recordCount: 40 } as Chunk).pipe(hashChain({ recordSize: RS, maxQueueBytes: 4 << 20 }));
  const [x, y] = await Promise.all([lastValueFrom(chained.pipe(toArray())), lastValueFrom(chained.pipe(toArray()))]);
  for (const out of [x, y]) {
    const last = out[out.length - 1];
    assert.is(last.kind, 'eob', 'the batch closes in each subscription');
    assert.ok(last.kind === 'eob' && last.closingHash && Buffer.from(last.closingHash).equals(want));
  }
  // And one after the other, as a retry would.
  const again = await lastValueFrom(chained.pipe(toArray()));
  const last = again[again.length - 1];
  assert.ok(last.kind === 'eob' && last.closingHash && Buffer.from(last.closingHash).equals(want));
});
twice('queue figures are per subscription when no stats object is given', async () => {
  const b = id(78);
  const data = bytes(10, 4);
  const chained = of(...chunks(b, data, [10]), { kind: 'eob', dataset: 'ds', batchId: b, recordCount: 10 } as Chunk).pipe(hashChain({ recordSize: RS, maxQueueBytes: RS * 10 }));
  const [x, y] = await Promise.all([lastValueFrom(chained.pipe(toArray())), lastValueFrom(chained.pipe(toArray()))]);
  assert.equal([x.map((c) => c.kind), y.map((c) => c.kind)], [['records', 'eob'], ['records', 'eob']]);
});
twice.run();
