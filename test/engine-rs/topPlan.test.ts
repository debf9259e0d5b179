/**
 * TopPlan (engine-rs/scan.ts): compile refusals with their paths; `select` over records written by
 * RecordCodec equals a JS reference (values read with BigInt / Number, a full sort, the k-th best,
 * every record on its side kept, in order) for uint64 above 2^63, negative int32, a double with
 * NaN and -0, a timestamp, ties at the boundary; a field mask makes a hidden field order as zeros.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { QueryError, RecordCodec, Schema, TopPlan } from '../../engine-rs/index';
import { mulberry32 } from '../../lib/mulberry32';

const R = 40;
const schema = Schema.parse({
  id: 'top',
  record_size: R,
  time_field: 'ts',
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'big', offset: 8, size: 8, type: 'uint64' },
    { name: 'neg', offset: 16, size: 4, type: 'int32' },
    { name: 'd', offset: 20, size: 8, type: 'double' },
    { name: 'ok', offset: 28, size: 1, type: 'boolean' },
    { name: 'id', offset: 29, size: 11, type: 'string' },
  ],
});
const codec = new RecordCodec(schema);

type Field = 'ts' | 'big' | 'neg' | 'd';
type Key = bigint | number;

interface Row {
  ts: string;
  big: string;
  neg: string;
  d: string;
}

/** Records of `rows` through the codec, each tagged with its index in `id`. */
function encode(rows: Row[]): Buffer {
  return Buffer.concat(
    rows.map((r, i) => {
      const { record, errors } = codec.encodeRecord({ ...r, ok: 'true', id: String(i) });
      assert.equal(errors, []);
      return record;
    }),
  );
}

/** The field's key as the caller reads it (`stored & mask`). */
function keyOf(rec: Buffer, field: Field, mask?: Uint8Array): Key {
  const b = Buffer.from(rec);
  if (mask) for (let i = 0; i < R; i++) b[i] &= mask[i];
  switch (field) {
    case 'ts':
      return b.readBigInt64LE(0);
    case 'big':
      return b.readBigUInt64LE(8);
    case 'neg':
      return b.readInt32LE(16);
    case 'd':
      return b.readDoubleLE(20);
  }
}

/** SQL's order: NaN above every number, -0 = 0. */
function cmp(a: Key, b: Key): number {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number(Number.isNaN(a)) - Number(Number.isNaN(b));
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The naive top k. */
function reference(records: Buffer, field: Field, k: number, desc: boolean, mask?: Uint8Array): Buffer {
  const recs = Array.from({ length: records.length / R }, (_, i) => records.subarray(i * R, (i + 1) * R));
  if (recs.length <= k) return Buffer.from(records);
  const keys = recs.map((r) => keyOf(r, field, mask));
  const sorted = [...keys].sort(cmp);
  const t = desc ? sorted[recs.length - k] : sorted[k - 1];
  return Buffer.concat(recs.filter((_, i) => (desc ? cmp(keys[i], t) >= 0 : cmp(keys[i], t) <= 0)));
}

/** The `id`s of the selected records, in order. */
function ids(out: Buffer): number[] {
  return Array.from({ length: out.length / R }, (_, i) => Number(out.toString('latin1', i * R + 29, (i + 1) * R).replace(/\0+$/, '')));
}

function refusal(top: { field: string; k: number; desc: boolean }, mask?: Uint8Array): QueryError {
  try {
    TopPlan.compile(schema, top, mask);
  } catch (e) {
    assert.instance(e, QueryError);
    const q = e as QueryError;
    assert.is(q.code, 'ERR_QUERY');
    assert.is(q.message, `${q.path}: ${q.reason}`);
    return q;
  }
  throw new Error(`accepted: ${JSON.stringify(top)}`);
}

const compile = suite('TopPlan.compile refuses what it cannot order, by path');

compile('an unknown field, a string, a boolean', () => {
  const q = refusal({ field: 'bigg', k: 1, desc: true });
  assert.is(q.path, 'top.field');
  assert.match(q.reason, /unknown field/);
  assert.match(q.reason, /big/);
  const s = refusal({ field: 'id', k: 1, desc: true });
  assert.is(s.path, 'top.field');
  assert.match(s.reason, /cannot order by 'id' \(string\)/);
  assert.is(refusal({ field: 'ok', k: 1, desc: false }).path, 'top.field');
});

compile('k outside 1..1_000_000, a mask of the wrong length', () => {
  for (const k of [0, 1_000_001, 1.5, -1, Number.NaN, 2 ** 60]) {
    const q = refusal({ field: 'big', k, desc: true });
    assert.is(q.path, 'top.k', String(k));
  }
  assert.is(refusal({ field: 'big', k: 1, desc: true }, new Uint8Array(R - 1)).path, 'field_mask');
  TopPlan.compile(schema, { field: 'big', k: 1_000_000, desc: true });
  TopPlan.compile(schema, { field: 'd', k: 1, desc: false }, new Uint8Array(R).fill(0xff));
});

compile.run();

const select = suite('TopPlan.select equals the JS reference');

const BIGS = ['0', '1', '9223372036854775807', '9223372036854775808', '18446744073709551615', '18446744073709551000'];
const DS = ['NaN', '-0', '0', '1.5', '-2.25', 'Infinity', '-Infinity', '1e300', '-7'];

function randomRows(n: number, seed: number): Row[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  // Few distinct values: ties at the boundary are common.
  return Array.from({ length: n }, () => ({
    ts: pick(['-100', '0', '1700000000', '1700000001', '2024-01-02T03:04:05Z']),
    big: rnd() < 0.5 ? pick(BIGS) : String(2n ** 63n + BigInt(Math.floor(rnd() * 1000))),
    neg: String(Math.floor(rnd() * 20) - 15),
    d: rnd() < 0.6 ? pick(DS) : String((rnd() - 0.5) * 100),
  }));
}

select('every field, k and direction over random records with many ties', () => {
  let checked = 0;
  for (const [n, seed] of [
    [0, 1],
    [1, 2],
    [5, 3],
    [60, 4],
    [400, 5],
  ]) {
    const records = encode(randomRows(n, seed));
    for (const field of ['ts', 'big', 'neg', 'd'] as Field[]) {
      for (const k of [1, 2, 3, 10, n, n + 1]) {
        if (k < 1) continue;
        for (const desc of [true, false]) {
          const got = TopPlan.compile(schema, { field, k, desc }).select(records);
          const want = reference(records, field, k, desc);
          assert.equal(ids(got), ids(want), `${field} k=${k} desc=${desc} n=${n}`);
          assert.ok(got.equals(want));
          if (n > k) assert.ok(got.length / R >= k);
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 150);
});

select('uint64 above 2^63, negative int32, NaN above every number, ties at the boundary kept', () => {
  const base = { ts: '0', neg: '0', d: '0' };
  const records = encode([
    { ...base, big: '9223372036854775808', neg: '-5', d: '1' },
    { ...base, big: '18446744073709551615', neg: '-1', d: 'NaN' },
    { ...base, big: '5', neg: '-2147483648', d: '-0' },
    { ...base, big: '18446744073709551615', neg: '-1', d: '0' },
    { ...base, big: '9223372036854775807', neg: '7', d: '-Infinity' },
  ]);
  const top = (field: Field, k: number, desc: boolean) => ids(TopPlan.compile(schema, { field, k, desc }).select(records));
  assert.equal(top('big', 1, true), [1, 3]);
  assert.equal(top('big', 3, true), [0, 1, 3]);
  assert.equal(top('big', 1, false), [2]);
  assert.equal(top('neg', 2, false), [0, 2]);
  assert.equal(top('neg', 2, true), [1, 3, 4]);
  assert.equal(top('d', 1, true), [1]);
  assert.equal(top('d', 2, true), [0, 1]);
  // -0 and 0 tie: both kept at the boundary.
  assert.equal(top('d', 2, false), [2, 3, 4]);
  assert.equal(top('d', 5, true), [0, 1, 2, 3, 4]);
});

select('a timestamp orders by its seconds, negatives first', () => {
  const base = { big: '0', neg: '0', d: '0' };
  const records = encode(['2024-01-02T03:04:05Z', '-100', '1700000000', '0', '2024-01-02T03:04:05Z'].map((ts) => ({ ...base, ts })));
  const top = (k: number, desc: boolean) => ids(TopPlan.compile(schema, { field: 'ts', k, desc }).select(records));
  assert.equal(top(1, true), [0, 4]);
  assert.equal(top(2, false), [1, 3]);
  assert.equal(top(3, true), [0, 2, 4]);
});

select('a field mask makes a hidden field order as zeros; the stored bytes come back', () => {
  const records = encode(randomRows(50, 9));
  const hidden = new Uint8Array(R).fill(0xff);
  hidden.fill(0, 8, 16);
  const got = TopPlan.compile(schema, { field: 'big', k: 1, desc: true }, hidden).select(records);
  // Every key is 0: all tie with the best.
  assert.ok(got.equals(records));
  // Part of it hidden: its visible bytes order it.
  const part = new Uint8Array(R).fill(0xff);
  part.fill(0, 14, 16);
  for (const desc of [true, false]) {
    const p = TopPlan.compile(schema, { field: 'big', k: 4, desc }, part).select(records);
    assert.ok(p.equals(reference(records, 'big', 4, desc, part)));
  }
});

select('edges: no records, k at least n, not whole records', () => {
  const plan = TopPlan.compile(schema, { field: 'neg', k: 3, desc: true });
  assert.is(plan.select(new Uint8Array(0)).length, 0);
  const records = encode(randomRows(3, 11));
  const all = plan.select(records);
  assert.ok(all.equals(records));
  assert.ok(all.buffer !== records.buffer, 'a new Buffer');
  assert.throws(() => plan.select(records.subarray(0, R + 1)), (e: unknown) => e instanceof RangeError && /not a whole number of 40-byte records/.test(e.message));
});

select.run();
