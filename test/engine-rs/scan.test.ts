import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { evaluateFilter, QueryError, ScanError, ScanFilter, Schema } from '../../engine-rs/index';
import {
  allowed,
  holds,
  layout,
  OPS,
  read,
  Rng,
  randomScalar,
  schemaJson,
  valueText,
  writeRandom,
  type Order,
  type RefField,
  type Val,
} from './scanReference';

const N = 300;
const { fields, recordSize } = layout();

interface Built {
  schema: Schema;
  data: Buffer;
  recs: Buffer[];
}

function build(order: Order, seed: number): Built {
  const rng = new Rng(seed);
  const recs: Buffer[] = [];
  for (let i = 0; i < N; i++) {
    const rec = Buffer.alloc(recordSize, 0xa5); // gaps between fields are not zero
    rec.writeUInt32LE(i, 0);
    for (const f of fields.slice(1)) writeRandom(rng, rec, f, order);
    recs.push(rec);
  }
  return { schema: Schema.parse(schemaJson(order)), data: Buffer.concat(recs), recs };
}

function ids(out: Buffer): number[] {
  const r: number[] = [];
  for (let at = 0; at < out.length; at += recordSize) r.push(out.readUInt32LE(at));
  return r;
}

/** A filter JSON object and its operands as the reference sees them. */
interface Drawn {
  json: Record<string, unknown>;
  test: (rec: Buffer, order: Order) => boolean;
}

function hex(b: Buffer): string {
  return b.toString('hex');
}

/** Draws operands for `op` on `f`: mostly values some record holds, sometimes fresh ones. */
function draw(rng: Rng, b: Built, f: RefField, op: string, order: Order): Drawn {
  const some = (): Buffer => b.recs[rng.below(b.recs.length)];
  const scalar = (): Val => {
    for (;;) {
      const v = rng.below(4) === 0 ? randomScalar(rng, f.type, f.size, f.precision) : (read(some(), f, order) as Val);
      const val = f.type === 'boolean' && typeof v === 'bigint' ? v !== 0n : v;
      if (!(typeof val === 'number' && Number.isNaN(val))) return val;
    }
  };
  const text = (v: Val) => valueText(f.type, v, f.scale ?? 0, rng);
  const base = { field: f.name, op };
  if (op === 'masked_eq') {
    const value = some().subarray(f.offset, f.offset + f.size);
    const mask = Buffer.from(Array.from({ length: f.size }, () => (rng.below(3) === 0 ? rng.next() & 0xff : 0)));
    return {
      json: { ...base, value: hex(value), mask: hex(mask) },
      test: (rec) => mask.every((m, i) => (rec[f.offset + i] & m) === (value[i] & m)),
    };
  }
  if (op === 'list_contains' || op === 'not_list_contains') {
    const a = f.array!;
    let v: Val;
    do {
      v = rng.below(4) === 0 ? randomScalar(rng, a.element, a.size) : rng.pick(read(some(), f, order, true) as Val[]);
    } while (typeof v === 'number' && Number.isNaN(v));
    return {
      json: { ...base, value: valueText(a.element, v, 0, rng) },
      test: (rec) => holds(op, read(rec, f, order, true), [v]),
    };
  }
  let operands: Val[];
  if (op === 'is_null' || op === 'is_not_null') operands = [];
  else if (op === 'between') operands = [scalar(), scalar()];
  else if (op === 'in') operands = Array.from({ length: 1 + rng.below(5) }, scalar);
  else if (op === 'prefix') {
    const full = scalar() as Buffer;
    const cut =
      f.type === 'bytes'
        ? full.subarray(0, rng.below(full.length + 1))
        : Buffer.from([...full.toString('utf8')].slice(0, rng.below(full.toString('utf8').length + 1)).join(''));
    operands = [cut];
  } else operands = [scalar()];
  const json: Record<string, unknown> = { ...base };
  if (op === 'between' || op === 'in') json.values = operands.map(text);
  else if (operands.length) json.value = text(operands[0]);
  return { json, test: (rec) => holds(op, read(rec, f, order), operands) };
}

const ops = suite('ScanFilter: every FilterOp on every type against the TypeScript reference');

for (const order of ['little', 'big'] as const) {
  for (const seed of [1, 2, 3]) {
    ops(`${order}-endian records, seed ${seed}`, () => {
      const b = build(order, seed * 7919 + (order === 'big' ? 1 : 0));
      const rng = new Rng(seed * 104729 + 3);
      let checked = 0;
      for (const f of fields.slice(1)) {
        for (const op of OPS) {
          if (!allowed(op, f)) {
            const operands = op.startsWith('is_') ? {} : op === 'between' || op === 'in' ? { values: ['1', '2'] } : { value: '1' };
            const json = JSON.stringify([{ filters: [{ field: f.name, op, ...operands }] }]);
            assert.throws(
              () => ScanFilter.compile(b.schema, json),
              (e: unknown) => e instanceof QueryError && e.path === 'sub_queries[0].filters[0].op' && e.message.includes(f.name),
              `${op} on ${f.name}`,
            );
            continue;
          }
          for (let k = 0; k < 5; k++) {
            const d = draw(rng, b, f, op, order);
            const json = JSON.stringify([{ filters: [d.json] }]);
            let filter: ScanFilter;
            try {
              filter = ScanFilter.compile(b.schema, json);
            } catch (e) {
              throw new Error(`${json}: ${(e as Error).message}`);
            }
            const got = ids(evaluateFilter(filter, b.data));
            const want = b.recs.map((r, i) => (d.test(r, order) ? i : -1)).filter((i) => i >= 0);
            assert.equal(got, want, `${order} ${json}`);
            checked++;
          }
        }
      }
      assert.ok(checked > 500, `checked ${checked}`);
    });
  }
}

ops('random sub-queries: OR over sub-queries, AND within each', () => {
  for (const order of ['little', 'big'] as const) {
    const b = build(order, 4242);
    const rng = new Rng(99);
    for (let q = 0; q < 150; q++) {
      const subs = Array.from({ length: 1 + rng.below(4) }, () =>
        Array.from({ length: 1 + rng.below(4) }, () => {
          const f = rng.pick(fields.slice(1));
          const op = rng.pick(OPS.filter((o) => allowed(o, f)));
          return draw(rng, b, f, op, order);
        }),
      );
      const json = JSON.stringify(subs.map((s) => ({ filters: s.map((d) => d.json) })));
      const got = ids(evaluateFilter(ScanFilter.compile(b.schema, json), b.data));
      const want = b.recs.map((r, i) => (subs.some((s) => s.every((d) => d.test(r, order))) ? i : -1)).filter((i) => i >= 0);
      assert.equal(got, want, json);
    }
  }
});

ops('records spanning many kernel chunks keep their order', () => {
  const b = build('little', 5);
  const many = Buffer.concat(Array.from({ length: 12 }, () => b.data)); // 3600 records
  const f = ScanFilter.compile(b.schema, JSON.stringify([{ filters: [{ field: 'u8', op: 'lt', value: '128' }] }, { filters: [{ field: 'ok', op: 'eq', value: 'true' }] }]));
  const got = ids(evaluateFilter(f, many));
  const want: number[] = [];
  for (let k = 0; k < 12; k++) {
    b.recs.forEach((r, i) => {
      if (r[fields.find((x) => x.name === 'u8')!.offset] < 128 || r[fields.find((x) => x.name === 'ok')!.offset] !== 0) want.push(i);
    });
  }
  assert.equal(got, want);
});

ops('no sub-queries match every record; a filter that can never hold matches none', () => {
  const b = build('little', 6);
  const all = ScanFilter.compile(b.schema, '[]');
  assert.is(all.matchesAll, true);
  assert.is(all.subQueries, 0);
  assert.equal(evaluateFilter(all, b.data), b.data);
  const none = ScanFilter.compile(b.schema, JSON.stringify([{ filters: [{ field: 'u32', op: 'lt', value: '0' }] }]));
  assert.is(none.matchesNone, true);
  assert.is(evaluateFilter(none, b.data).length, 0);
  assert.is(evaluateFilter(none, Buffer.alloc(0)).length, 0);
});

ops('evaluateFilter refuses a buffer that is not whole records', () => {
  const b = build('little', 7);
  const f = ScanFilter.compile(b.schema, '[]');
  assert.throws(
    () => evaluateFilter(f, b.data.subarray(0, recordSize * 2 + 5)),
    (e: unknown) => e instanceof ScanError && e.code === 'ERR_SCAN_LENGTH' && /5 left over/.test(e.message),
  );
});

ops.run();
