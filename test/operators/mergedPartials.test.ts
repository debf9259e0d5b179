/**
 * MergedPartials (operators/mergedPartials.ts): frames list exactly the batches folded since the
 * last one, in fold order; a full accumulator sends what it holds first; the batch cap and the delay
 * timer send frames on their own; a discard drops what is pending. The accumulator here is a small
 * sum of counts — the native one has its own tests (test/engine-rs).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../engine-rs/batchId';
import { MergedPartials, type CompletedBatch, type FoldableBatch, type PartialAccumulator } from '../../operators/mergedPartials';

/** Counts per key; `max` groups at most. */
class CountAcc implements PartialAccumulator {
  groups = new Map<string, number>();
  constructor(readonly max = 100) {}
  take(): string {
    const out = JSON.stringify([...this.groups].sort().map(([k, n]) => ({ k: [k], m: [String(n)] })));
    this.groups.clear();
    return out;
  }
}

const batchOf = (counts: Record<string, number>): FoldableBatch => ({
  foldInto(acc) {
    const a = acc as CountAcc;
    const fresh = Object.keys(counts).filter((k) => !a.groups.has(k)).length;
    if (a.groups.size + fresh > a.max) return false;
    for (const [k, n] of Object.entries(counts)) a.groups.set(k, (a.groups.get(k) ?? 0) + n);
    return true;
  },
});
const done = (n: number, recordCount: number): CompletedBatch => ({ batchId: generateBatchIdNumber(n), recordCount });

interface Frame {
  readonly json: { v: number; batches: [string, number][]; groups: { k: string[]; m: string[] }[] };
  readonly completes: readonly CompletedBatch[];
}
function setup(max = 100, opts = {}): { merged: MergedPartials; frames: Frame[] } {
  const frames: Frame[] = [];
  const merged = new MergedPartials(new CountAcc(max), (json, completes) => frames.push({ json: JSON.parse(json) as Frame['json'], completes }), opts);
  return { merged, frames };
}

const t = suite('MergedPartials');

t('one frame lists the folded batches in order with their merged groups', () => {
  const { merged, frames } = setup();
  merged.add(batchOf({ tcp: 2, udp: 1 }), done(1, 3));
  merged.add(batchOf({}), done(2, 0));
  merged.add(batchOf({ tcp: 5 }), done(3, 5));
  assert.is(frames.length, 0, 'nothing before the flush');
  merged.flush();
  assert.is(frames.length, 1);
  const f = frames[0] as Frame;
  assert.is(f.json.v, 2);
  assert.equal(f.json.batches, [
    [generateBatchIdNumber(1).toHex(), 3],
    [generateBatchIdNumber(2).toHex(), 0],
    [generateBatchIdNumber(3).toHex(), 5],
  ]);
  assert.equal(f.json.groups, [
    { k: ['tcp'], m: ['7'] },
    { k: ['udp'], m: ['1'] },
  ]);
  assert.equal(
    f.completes.map((c) => c.recordCount),
    [3, 0, 5],
  );
  merged.flush();
  assert.is(frames.length, 1, 'an empty flush sends nothing');
});

t('a batch that would pass max_groups sends the frame so far, then starts the next', () => {
  const { merged, frames } = setup(2);
  merged.add(batchOf({ a: 1, b: 1 }), done(1, 2));
  merged.add(batchOf({ c: 1 }), done(2, 1));
  assert.is(frames.length, 1);
  assert.equal(frames[0]?.json.groups.map((g) => g.k[0]), ['a', 'b']);
  assert.is(frames[0]?.json.batches.length, 1);
  merged.flush();
  assert.equal(frames[1]?.json.groups, [{ k: ['c'], m: ['1'] }]);
  assert.equal(frames[1]?.json.batches, [[generateBatchIdNumber(2).toHex(), 1]]);
});

t('a batch too large for an empty accumulator throws (the scan holds batches to max_groups)', () => {
  const { merged } = setup(1);
  assert.throws(() => merged.add(batchOf({ a: 1, b: 1 }), done(1, 2)), /does not fit an empty accumulator/);
});

t('the batch cap and the delay send frames on their own', async () => {
  const capped = setup(100, { maxBatches: 2, maxDelayMs: 10_000 });
  for (let i = 1; i <= 5; i++) capped.merged.add(batchOf({ x: 1 }), done(i, 1));
  assert.equal(
    capped.frames.map((f) => f.json.batches.length),
    [2, 2],
  );
  capped.merged.discard();
  const timed = setup(100, { maxDelayMs: 5 });
  timed.merged.add(batchOf({ x: 1 }), done(1, 1));
  await new Promise((r) => setTimeout(r, 40));
  assert.is(timed.frames.length, 1);
  assert.equal(timed.frames[0]?.json.groups, [{ k: ['x'], m: ['1'] }]);
});

t('addAll: a partial of several batches is folded and listed at once, in a frame of its own when the one being filled has no room', () => {
  const { merged, frames } = setup(100, { maxBatches: 4, maxDelayMs: 10_000 });
  merged.add(batchOf({ x: 1 }), done(1, 1));
  merged.add(batchOf({ x: 2 }), done(2, 2));
  // Three more do not fit beside two: the first frame goes out, the group starts the next.
  merged.addAll(batchOf({ x: 10, y: 1 }), [done(3, 5), done(4, 6), done(5, 0)]);
  assert.is(frames.length, 1);
  assert.equal(frames[0]?.json.batches.map((b) => b[1]), [1, 2]);
  assert.equal(frames[0]?.json.groups, [{ k: ['x'], m: ['3'] }]);
  merged.flush();
  assert.equal(frames[1]?.json.batches.map((b) => b[1]), [5, 6, 0]);
  assert.equal(frames[1]?.json.groups, [
    { k: ['x'], m: ['10'] },
    { k: ['y'], m: ['1'] },
  ]);
  merged.addAll(batchOf({ z: 1 }), []);
  merged.flush();
  assert.is(frames.length, 2, 'an empty group adds nothing');
  assert.throws(() => merged.addAll(batchOf({}), [1, 2, 3, 4, 5].map((n) => done(n, 0))), /at most 4/);
});

t('discard drops the pending batches and their groups; nothing is sent later', async () => {
  const { merged, frames } = setup(100, { maxDelayMs: 5 });
  merged.add(batchOf({ x: 1 }), done(1, 1));
  merged.discard();
  await new Promise((r) => setTimeout(r, 30));
  merged.flush();
  assert.is(frames.length, 0);
  merged.add(batchOf({ y: 2 }), done(2, 2));
  merged.flush();
  assert.equal(frames[0]?.json.groups, [{ k: ['y'], m: ['2'] }], 'the discarded groups are gone');
});

t.run();
