/**
 * Pushed-down filters on a Storage Node: the records that reach the client are exactly those an
 * independent TypeScript evaluation of the same filters keeps, batch by batch, for hand-written
 * queries (time range plus predicates, OR-ed branches, strings, null) and randomised ones.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Filter, SubQuery } from '../../../query/filter';
import { batchOf, ControlPeer, R, recordsByBatch, startNode, TestClient, untilOk, type TestNode } from './queryKit';

/** One record of the test dataset, read field by field (the reference evaluation; tests may loop per record). */
interface Row {
  ts: bigint;
  id: bigint;
  price: number;
  qty: number;
  side: number;
  sym: string;
}

function row(b: Buffer, at: number): Row {
  const end = b.indexOf(0, at + 24);
  return {
    ts: b.readBigInt64LE(at),
    id: b.readBigUInt64LE(at + 8),
    price: b.readInt32LE(at + 16),
    qty: b.readUInt16LE(at + 20),
    side: b.readUInt8(at + 22),
    sym: b.toString('utf8', at + 24, end < 0 || end > at + 40 ? at + 40 : end),
  };
}

type Value = bigint | number | string;

function operand(field: keyof Row, text: string): Value {
  if (field === 'sym') return text;
  if (field === 'ts' || field === 'id') return BigInt(text);
  return Number(text);
}

function holds(r: Row, f: Filter): boolean {
  const field = f.field as keyof Row;
  const x = r[field];
  const v = f.value === undefined ? undefined : operand(field, f.value);
  switch (f.op) {
    case 'eq':
      return x === v;
    case 'ne':
      return x !== v;
    case 'lt':
      return (x as Value) < (v as Value);
    case 'le':
      return (x as Value) <= (v as Value);
    case 'gt':
      return (x as Value) > (v as Value);
    case 'ge':
      return (x as Value) >= (v as Value);
    case 'between': {
      const [lo, hi] = (f.values ?? []).map((t) => operand(field, t));
      return (x as Value) >= lo && (x as Value) <= hi;
    }
    case 'in':
      return (f.values ?? []).some((t) => operand(field, t) === x);
    case 'prefix':
      return String(x).startsWith(f.value ?? '');
    case 'is_null':
      return x === '';
    case 'is_not_null':
      return x !== '';
    default:
      throw new Error(`the reference does not evaluate ${f.op}`);
  }
}

/** The records of `data` that match `subs` (OR of ANDs; none: all), back to back. */
function reference(data: Buffer, subs: readonly SubQuery[]): Buffer {
  const keep: Buffer[] = [];
  for (let at = 0; at < data.length; at += R) {
    const r = row(data, at);
    if (subs.length === 0 || subs.some((s) => s.filters.every((f) => holds(r, f)))) keep.push(data.subarray(at, at + R));
  }
  return Buffer.concat(keep);
}

const BATCHES = [batchOf(31, 900), batchOf(32, 64), batchOf(33, 2000), batchOf(34, 1), batchOf(35, 0)];
const TS0 = 1_700_000_000;
let node: TestNode;
let client: TestClient;
let scc: ControlPeer;

/** Runs `subs` over every batch and checks each batch's records against the reference. */
async function check(subs: SubQuery[], label: string): Promise<number> {
  const { auth, json, results } = client.query(
    BATCHES.map((b) => b.id),
    { subQueries: subs },
  );
  scc.sendQuery(auth, json);
  const ends = await scc.batchEnds(auth.queryId, BATCHES.length);
  assert.ok(
    ends.every((f) => f.kind === 'eob'),
    `${label}: ${JSON.stringify(scc.of(auth.queryId).map((f) => (f.kind === 'error' ? f.message : f.kind)))}`,
  );
  await untilOk(() => results.length === BATCHES.length);
  const got = recordsByBatch(results);
  let total = 0;
  for (const [i, b] of BATCHES.entries()) {
    const want = reference(b.data, subs);
    const have = got.get(b.id.toHex()) ?? Buffer.alloc(0);
    assert.is(have.length / R, want.length / R, `${label}: batch ${i} record count`);
    assert.ok(have.equals(want), `${label}: batch ${i} records`);
    const eob = ends[i];
    assert.ok(eob.kind === 'eob' && eob.recordCount === want.length / R);
    total += want.length / R;
  }
  return total;
}

const filters = suite('Storage Node pushdown filters against a TypeScript reference');
filters.before(async () => {
  node = await startNode();
  await node.ingest(BATCHES);
  client = await TestClient.start();
  scc = await ControlPeer.open(node.commandPort);
});
filters.after(async () => {
  scc.close();
  await client.close();
  await node.stop();
});

filters('a time range and two predicates', async () => {
  const n = await check(
    [
      {
        filters: [
          { field: 'ts', op: 'between', values: [String(TS0 + 31 * 3600 + 100), String(TS0 + 33 * 3600 + 1500)] },
          { field: 'side', op: 'eq', value: '1' },
          { field: 'price', op: 'ge', value: '0' },
        ],
      },
    ],
    'range',
  );
  assert.ok(n > 100, `${n} records matched`);
});

filters('zone maps (segments written with the schema\'s zone fields) skip the blocks a narrow time range rules out', async () => {
  const skipped = await node.counter('hd_sn_query_blocks_skipped_total');
  const read = await node.counter('hd_sn_query_blocks_read_total');
  const from = TS0 + 33 * 3600 + 1000;
  const n = await check([{ filters: [{ field: 'ts', op: 'between', values: [String(from), String(from + 99)] }] }], 'narrow range');
  assert.is(n, 100);
  const nowSkipped = (await node.counter('hd_sn_query_blocks_skipped_total')) - skipped;
  const nowRead = (await node.counter('hd_sn_query_blocks_read_total')) - read;
  // Batch 33 holds 2000 records in 125 blocks of 16; the range touches 7 or 8 of them. The other batches' times lie outside.
  assert.ok(nowRead <= 8, `read ${nowRead} blocks`);
  assert.ok(nowSkipped >= 117, `skipped ${nowSkipped} blocks`);
});

filters('OR-ed branches, in, ne, signed comparisons', async () => {
  const n = await check(
    [
      { filters: [{ field: 'price', op: 'lt', value: '-9000' }] },
      { filters: [{ field: 'sym', op: 'in', values: ['AAPL', 'TSLA'] }, { field: 'qty', op: 'ge', value: '500' }] },
      { filters: [{ field: 'id', op: 'eq', value: String(33 * 1_000_000 + 7) }] },
      { filters: [{ field: 'side', op: 'ne', value: '2' }, { field: 'qty', op: 'lt', value: '3' }] },
    ],
    'branches',
  );
  assert.ok(n > 0);
});

filters('strings: prefix, is_null (an empty symbol is all zeros), ordered comparison', async () => {
  await check([{ filters: [{ field: 'sym', op: 'prefix', value: 'A' }] }], 'prefix');
  const nulls = await check([{ filters: [{ field: 'sym', op: 'is_null' }] }], 'is_null');
  assert.ok(nulls > 0, 'some records have no symbol');
  await check([{ filters: [{ field: 'sym', op: 'gt', value: 'GOOG' }, { field: 'sym', op: 'is_not_null' }] }], 'string order');
});

filters('a filter no record meets: every batch ends with an empty eob', async () => {
  assert.is(await check([{ filters: [{ field: 'qty', op: 'gt', value: '65535' }] }], 'none'), 0);
});

filters('randomised filters over every field (several seeds)', async () => {
  let x = 12345;
  const rnd = (n: number): number => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x % n;
  };
  const pick = <T>(a: readonly T[]): T => a[rnd(a.length)];
  const ops = ['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'between', 'in'] as const;
  const sample = (field: keyof Row): string => {
    const b = pick(BATCHES.filter((y) => y.data.length > 0));
    return String(row(b.data, rnd(b.data.length / R) * R)[field]);
  };
  let matched = 0;
  for (let q = 0; q < 12; q++) {
    const subs: SubQuery[] = [];
    for (let s = 0; s < 1 + rnd(3); s++) {
      const fs: Filter[] = [];
      for (let k = 0; k < 1 + rnd(3); k++) {
        const field = pick(['ts', 'id', 'price', 'qty', 'side', 'sym'] as const);
        const op = pick(ops);
        if (op === 'between') {
          const [a, b] = [sample(field), sample(field)];
          const lo = field === 'sym' ? (a < b ? a : b) : String(operand(field, a) < operand(field, b) ? a : b);
          const hi = lo === a ? b : a;
          fs.push({ field, op, values: [lo, hi] });
        } else if (op === 'in') fs.push({ field, op, values: [sample(field), sample(field), sample(field)] });
        else fs.push({ field, op, value: sample(field) });
      }
      subs.push({ filters: fs });
    }
    matched += await check(subs, `random ${q}: ${JSON.stringify(subs)}`);
  }
  assert.ok(matched > 0, 'the random queries matched something');
});

filters('a value that does not fit its field, or an unknown field, is error 11 naming the filter', async () => {
  const a = client.query([BATCHES[0].id], { subQueries: [{ filters: [{ field: 'qty', op: 'eq', value: '70000' }] }] });
  scc.sendQuery(a.auth, a.json);
  const e1 = await scc.errorOf(a.auth.queryId);
  assert.is(e1.code, 11);
  assert.match(e1.message, /^sub_queries\[0\]\.filters\[0\]\.value: /);
  const b = client.query([BATCHES[0].id], { subQueries: [{ filters: [{ field: 'qty', op: 'eq', value: '1' }] }, { filters: [{ field: 'volume', op: 'eq', value: '1' }] }] });
  scc.sendQuery(b.auth, b.json);
  const e2 = await scc.errorOf(b.auth.queryId);
  assert.is(e2.code, 11);
  assert.match(e2.message, /^sub_queries\[1\]\.filters\[0\]\.field: /);
  assert.is(a.results.length + b.results.length, 0, 'nothing reached the client');
});

filters.run();
