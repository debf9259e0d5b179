/**
 * BatchLoader (sql/batchLoader.ts): fetched batches reach DuckDB in groups — at the row or batch
 * threshold, and the rest at `flush` — in arrival order, empty batches dropped, each batch once.
 */
import * as arrow from 'apache-arrow';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchLoader } from '../../sql/batchLoader';

const batch = (from: number, n: number): arrow.RecordBatch => new arrow.Table({ x: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => from + i), new arrow.Int32()) }).batches[0] as arrow.RecordBatch;
const xs = (groups: readonly (readonly arrow.RecordBatch[])[]): number[][] => groups.map((g) => g.flatMap((b) => [...(b.getChild('x') as arrow.Vector)] as number[]));

const t = suite('BatchLoader');

t('appends at the row threshold and the rest at flush, in order', async () => {
  const groups: arrow.RecordBatch[][] = [];
  const l = new BatchLoader(async (g) => void groups.push([...g]), { rows: 5, batches: 100 });
  await l.add(batch(0, 2));
  await l.add(batch(2, 2));
  assert.is(groups.length, 0);
  await l.add(batch(4, 3));
  assert.equal(xs(groups), [[0, 1, 2, 3, 4, 5, 6]]);
  await l.add(batch(7, 1));
  await l.add(new arrow.Table({ x: arrow.vectorFromArray([] as number[], new arrow.Int32()) }).batches[0] ?? batch(0, 0));
  await l.flush();
  await l.flush();
  assert.equal(xs(groups), [[0, 1, 2, 3, 4, 5, 6], [7]]);
});

t('appends at the batch threshold; nothing held, nothing appended', async () => {
  const groups: arrow.RecordBatch[][] = [];
  const l = new BatchLoader(async (g) => void groups.push([...g]), { rows: 1_000_000, batches: 3 });
  await l.flush();
  for (let i = 0; i < 7; i++) await l.add(batch(i, 1));
  assert.equal(xs(groups), [
    [0, 1, 2],
    [3, 4, 5],
  ]);
  await l.flush();
  assert.equal(xs(groups).at(-1), [6]);
});

t('an append that fails rejects the add that triggered it', async () => {
  const l = new BatchLoader(() => Promise.reject(new Error('disk full')), { rows: 1 });
  await l.add(batch(0, 1)).then(
    () => assert.unreachable('should reject'),
    (err: Error) => assert.match(err.message, /disk full/),
  );
});

t.run();
