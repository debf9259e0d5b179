import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { vectorSearch } from '../../local/vectorSearch';
import { expectArgsError, rng } from './fixtures';

/** The independent computation: every row's cosine distance in plain loops, sorted, first k. */
function naive(vectors: (number[] | null)[], target: number[], k: number): { row: number; d: number }[] {
  const all: { row: number; d: number }[] = [];
  vectors.forEach((v, row) => {
    if (!v) return;
    let dot = 0;
    let a = 0;
    let b = 0;
    for (let i = 0; i < v.length; i++) {
      dot += v[i]! * target[i]!;
      a += v[i]! * v[i]!;
      b += target[i]! * target[i]!;
    }
    if (a === 0) return;
    all.push({ row, d: 1 - dot / Math.sqrt(a * b) });
  });
  all.sort((x, y) => x.d - y.d || x.row - y.row);
  return all.slice(0, k);
}

function tableOf(vectors: (number[] | null)[], type: arrow.DataType, batches: number): arrow.Table {
  const whole = new arrow.Table({
    id: arrow.vectorFromArray(vectors.map((_v, i) => i), new arrow.Int32()),
    label: arrow.vectorFromArray(vectors.map((_v, i) => ['a', 'b', 'c'][i % 3]!), new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    v: arrow.vectorFromArray(vectors, type),
  }).batches[0]!;
  // Batches sliced out of one: the scan must honour each slice's offset into the shared buffers.
  const per = Math.ceil(vectors.length / batches);
  const out: arrow.RecordBatch[] = [];
  for (let at = 0; at < vectors.length; at += per) out.push(whole.slice(at, Math.min(at + per, vectors.length)));
  return new arrow.Table(out);
}

const f32 = (dims: number): arrow.DataType => new arrow.FixedSizeList(dims, new arrow.Field('item', new arrow.Float32(), true));
const l64 = (): arrow.DataType => new arrow.List(new arrow.Field('item', new arrow.Float64(), true));

const search = suite('vectorSearch');

for (const seed of [1, 2, 3, 4]) {
  search(`random vectors, seed ${seed}: same rows and distances as the naive computation`, () => {
    const r = rng(seed);
    const dims = 3 + (seed % 6);
    const n = 400 + seed * 37;
    const vectors = Array.from({ length: n }, (_x, i) => (i % 50 === 7 ? null : Array.from({ length: dims }, () => Math.fround(r() * 2 - 1))));
    const target = Array.from({ length: dims }, () => r() * 2 - 1);
    for (const [type, batches] of [[f32(dims), 1], [f32(dims), 3], [l64(), 4]] as const) {
      const k = 1 + Math.floor(r() * 25);
      const got = vectorSearch(tableOf(vectors, type, batches), 'v', target, k);
      const want = naive(vectors, target, k);
      assert.equal([...got.getChild('id')!], want.map((w) => w.row), `${String(type)} in ${batches} batches`);
      const d = [...got.getChild('distance')!] as number[];
      want.forEach((w, i) => assert.ok(Math.abs(d[i]! - w.d) < 1e-12, `distance ${i}: ${d[i]} vs ${w.d}`));
      assert.equal([...got.getChild('label')!], want.map((w) => ['a', 'b', 'c'][w.row % 3]));
    }
  });
}

search('ties are ordered by row; scaled copies have equal distance; zero and null vectors are skipped', () => {
  const vectors = [[1, 0], [0, 0], [2, 0], null, [0, 1], [3, 0], [1, 1]];
  const got = vectorSearch(tableOf(vectors, l64(), 2), 'v', [5, 0], 4);
  assert.equal([...got.getChild('id')!], [0, 2, 5, 6]);
  assert.equal(([...got.getChild('distance')!] as number[]).slice(0, 3), [0, 0, 0]);
  // A k beyond the rows returns every row that has a distance.
  assert.is(vectorSearch(tableOf(vectors, l64(), 1), 'v', [5, 0], 100).numRows, 5);
});

search('a table that already has a distance column gets distance_1', () => {
  const t = new arrow.Table({
    distance: arrow.vectorFromArray([7], new arrow.Int32()),
    v: arrow.vectorFromArray([[1, 2]], l64()),
  });
  const got = vectorSearch(t, 'v', [1, 2], 1);
  assert.equal(got.schema.fields.map((f) => f.name), ['distance', 'v', 'distance_1']);
  assert.equal([...got.getChild('distance')!], [7]);
});

search('unusable arguments are refused, naming the argument', () => {
  const t = tableOf([[1, 2], [3, 4]], l64(), 1);
  const bad = expectArgsError;
  bad(() => vectorSearch(t, 'nope', [1, 2], 1), 'vectorColumn', /no column "nope"/);
  bad(() => vectorSearch(t, 'label', [1, 2], 1), 'vectorColumn', /list of floats/);
  bad(() => vectorSearch(t, 'v', [], 1), 'target', /non-empty/);
  bad(() => vectorSearch(t, 'v', [0, 0], 1), 'target', /zero vector/);
  bad(() => vectorSearch(t, 'v', [1, NaN], 1), 'target', /element 1/);
  bad(() => vectorSearch(t, 'v', [1, 2, 3], 1), 'target', /row 0 has 2/);
  bad(() => vectorSearch(tableOf([[1, 2]], f32(2), 1), 'v', [1], 1), 'target', /vectors of 2/);
  bad(() => vectorSearch(t, 'v', [1, 2], 0), 'topK', /integer >= 1/);
  bad(() => vectorSearch(t, 'v', [1, 2], 1.5), 'topK', /integer >= 1/);
});

search.run();
