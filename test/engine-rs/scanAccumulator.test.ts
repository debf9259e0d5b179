/**
 * AggregateAccumulator and SegmentScanner.setAggregateFold / foldInto (engine-rs/scan.ts): batches
 * answered from their summary and batches scanned with a filter fold into one accumulator whose
 * take() is exactly the merge of the batches' own v1 partials (merged here with BigInt, groups in
 * key order); the refusals (not done, folded twice, closed, busy, another plan, max_groups).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AggregateAccumulator, AggregatePlan, generateBatchIdNumber, HashChain, ScanError, ScanFilter, Schema, SegmentScanner, SegmentWriter, zoneFieldsOf } from '../../engine-rs/index';
import { mulberry32 } from '../../lib/mulberry32';

const R = 48;
const schema = Schema.parse(
  JSON.stringify({
    id: 'acc',
    record_size: R,
    time_field: 'ts',
    enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 }, default_label: 'other' } },
    fields: [
      { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
      { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
      { name: 'port', offset: 10, size: 2, type: 'uint16' },
      { name: 'amount', offset: 12, size: 4, type: 'int32' },
      { name: 'big', offset: 16, size: 8, type: 'uint64' },
      { name: 'wide', offset: 24, size: 16, type: 'int128' },
      { name: 'i64', offset: 40, size: 8, type: 'int64' },
    ],
  }),
);
const id = generateBatchIdNumber(7n);

interface Row {
  ts: number;
  proto: number;
  port?: number;
}

/** Records with the given ts / proto / port and random measures (u64 above 2^63, negative int128). */
function encode(rows: Row[], seed: number): Buffer {
  const rnd = mulberry32(seed);
  const b = Buffer.alloc(rows.length * R);
  rows.forEach((r, i) => {
    const o = i * R;
    b.writeBigInt64LE(BigInt(r.ts), o);
    b.writeUInt8(r.proto, o + 8);
    b.writeUInt16LE(r.port ?? [22, 80, 443][Math.floor(rnd() * 3)], o + 10);
    b.writeInt32LE(Math.floor(rnd() * 2 ** 32) - 2 ** 31, o + 12);
    b.writeBigUInt64LE(2n ** 64n - 1n - BigInt(Math.floor(rnd() * 2 ** 40)), o + 16);
    const w = (BigInt(Math.floor(rnd() * 2 ** 52)) << 70n) * (rnd() < 0.5 ? -1n : 1n);
    b.writeBigUInt64LE(BigInt.asUintN(64, w), o + 24);
    b.writeBigUInt64LE(BigInt.asUintN(64, w >> 64n), o + 32);
    b.writeBigInt64LE(BigInt(Math.floor(rnd() * 2 ** 53)) - 2n ** 52n, o + 40);
  });
  return b;
}

async function write(dir: string, name: string, data: Buffer): Promise<string> {
  const w = SegmentWriter.create({ dir, name, datasetId: 'acc', batchId: id, recordSize: R, blockSize: 16, algorithm: 'sha256', fields: zoneFieldsOf(schema) });
  if (data.length > 0) await w.append(data);
  const c = new HashChain(id, { algorithm: 'sha256', recordSize: R, blockSize: 16 });
  await c.update(data);
  return (await w.finish(c.finish().closingHash)).path;
}

/** The batch's v1 partial the way a node sends it today (setAggregate). */
async function partialOf(file: string, filter: ScanFilter, plan: AggregatePlan): Promise<string> {
  const s = await SegmentScanner.open(file, filter);
  try {
    const p = s.setAggregate(plan);
    if (p !== undefined) return p;
    for (;;) {
      const st = await s.next(2);
      if (st.done) return st.partial!;
    }
  } finally {
    s.close();
  }
}

interface Group {
  k: string[];
  m: string[];
}

/** Merges v1 partials exactly (BigInt), groups in key order: the text take() must equal. */
function mergePartials(partials: string[], fns: string[]): string {
  const groups = new Map<string, Group>();
  for (const p of partials) {
    const parsed = JSON.parse(p) as { v: number; groups: Group[] };
    assert.is(parsed.v, 1);
    for (const g of parsed.groups) {
      const key = g.k.join('|');
      const cur = groups.get(key);
      if (!cur) {
        groups.set(key, { k: g.k, m: [...g.m] });
        continue;
      }
      cur.m = cur.m.map((a, i) => {
        const [x, y] = [BigInt(a), BigInt(g.m[i])];
        const f = fns[i];
        return String(f === 'min' ? (y < x ? y : x) : f === 'max' ? (y > x ? y : x) : x + y);
      });
    }
  }
  const cmp = (a: Group, b: Group): number => {
    for (let i = 0; i < a.k.length; i++) {
      const [x, y] = [BigInt(a.k[i]), BigInt(b.k[i])];
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  };
  return JSON.stringify([...groups.values()].sort(cmp));
}

/** Folds one batch (its summary, or scanned to the end) into acc; whether its summary answered. */
async function fold(file: string, filter: ScanFilter, plan: AggregatePlan, acc: AggregateAccumulator): Promise<boolean> {
  const s = await SegmentScanner.open(file, filter);
  try {
    const summary = s.setAggregateFold(plan);
    if (!summary) {
      assert.throws(() => s.foldInto(acc), (e: unknown) => e instanceof ScanError && e.code === 'ERR_SCAN_NOT_DONE');
      for (;;) {
        const st = await s.next(2);
        assert.is(st.partial, undefined);
        if (st.done) break;
      }
    }
    assert.ok(s.foldInto(acc));
    assert.throws(() => s.foldInto(acc), (e: unknown) => e instanceof ScanError && e.code === 'ERR_SCAN_FOLDED');
    return summary;
  } finally {
    s.close();
  }
}

const code = (c: string) => (e: unknown) => e instanceof ScanError && e.code === c;

const acc = suite('AggregateAccumulator');
let dir = '';
acc.before.each(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-acc-test-'));
});
acc.after.each(() => {
  rmSync(dir, { recursive: true, force: true });
});

acc('summary-answered and filtered-scan batches fold into the exact merge of their partials', async () => {
  const rnd = mulberry32(1234);
  // Batch i holds ts 1000 i .. 1000 i + 999 (batch 6 is empty): with ts >= 3500 batches 0..2 match
  // nothing, batch 3 partly (scanned), batches 4.. wholly (the zones prove it: summary).
  const files: string[] = [];
  for (let i = 0; i < 9; i++) {
    const n = i === 6 ? 0 : 1 + Math.floor(rnd() * 1200);
    const rows = Array.from({ length: n }, (_, j) => ({ ts: 1000 * i + Math.floor((j * 999) / Math.max(1, n - 1)), proto: [1, 6, 17, 0, 200, 6][Math.floor(rnd() * 6)] }));
    files.push(await write(dir, `b${i}.hdseg`, encode(rows, i + 1)));
  }
  const cases: [string, string, string[], number][] = [
    // What a batch summary answers: counts and sums by the enumeration.
    [
      JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'big' }, { fn: 'sum', field: 'amount' }, { fn: 'sum', field: 'i64' }] }),
      '[{"filters":[{"field":"ts","op":"ge","value":"3500"}]}]',
      ['count', 'sum', 'sum', 'sum'],
      4,
    ],
    [JSON.stringify({ version: 1, measures: [{ fn: 'count' }, { fn: 'min', field: 'amount' }, { fn: 'max', field: 'big' }, { fn: 'sum', field: 'big' }] }), '[]', ['count', 'min', 'max', 'sum'], 9],
    // Scanned everywhere: two keys, a 128-bit sum, min / max.
    [
      JSON.stringify({ version: 1, group_by: [{ field: 'proto' }, { field: 'port' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'wide' }, { fn: 'min', field: 'i64' }, { fn: 'max', field: 'big' }] }),
      '[{"filters":[{"field":"ts","op":"ge","value":"3500"}]},{"filters":[{"field":"port","op":"eq","value":"22"}]}]',
      ['count', 'sum', 'min', 'max'],
      0,
    ],
  ];
  for (const [json, subs, fns, summaries] of cases) {
    const plan = AggregatePlan.compile(schema, json);
    const filter = ScanFilter.compile(schema, subs);
    const partials: string[] = [];
    for (const f of files) partials.push(await partialOf(f, filter, plan));
    const a = AggregateAccumulator.create(plan);
    assert.ok(a.empty);
    assert.is(a.groups, 0);
    let answered = 0;
    for (const f of files) if (await fold(f, filter, plan, a)) answered++;
    assert.is(answered, summaries, json);
    assert.not.ok(a.empty);
    const want = mergePartials(partials, fns);
    assert.is(a.groups, (JSON.parse(want) as unknown[]).length);
    assert.ok(a.groups > 0);
    assert.is(a.take(), want, json);
    // take() reset it.
    assert.ok(a.empty);
    assert.is(a.groups, 0);
    assert.is(a.take(), '[]');
    // One batch folded alone takes exactly the groups of its own partial.
    await fold(files[7], filter, plan, a);
    assert.is(`{"v":1,"groups":${a.take()}}`, partials[7]);
  }
});

acc('foldInto refuses a scan that is not done, not folding, closed, busy, or of another plan', async () => {
  const rows = Array.from({ length: 200 }, (_, j) => ({ ts: j, proto: j % 3 === 0 ? 6 : 17 }));
  const file = await write(dir, 'r.hdseg', encode(rows, 9));
  const plan = AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }] }));
  const other = AggregatePlan.compile(schema, JSON.stringify({ version: 1, measures: [{ fn: 'count' }] }));
  const partly = ScanFilter.compile(schema, '[{"filters":[{"field":"ts","op":"ge","value":"50"}]}]');
  const a = AggregateAccumulator.create(plan);

  let s = await SegmentScanner.open(file, partly);
  s.setAggregate(plan);
  await s.next(1000);
  assert.throws(() => s.foldInto(a), code('ERR_SCAN_NOT_DONE'));
  s.close();
  assert.throws(() => s.foldInto(a), code('ERR_SCAN_CLOSED'));

  s = await SegmentScanner.open(file, partly);
  assert.is(s.setAggregateFold(plan), false);
  const step = s.next(1);
  assert.throws(() => s.foldInto(a), code('ERR_SCAN_BUSY'));
  assert.is((await step).done, false);
  while (!(await s.next(1)).done);
  assert.throws(() => s.foldInto(AggregateAccumulator.create(other)), code('ERR_SCAN_PLAN'));
  assert.ok(a.empty);
  assert.ok(s.foldInto(a));
  assert.throws(() => s.foldInto(a), code('ERR_SCAN_FOLDED'));
  s.close();
  assert.is(a.take(), `[{"k":["6"],"m":["50"]},{"k":["17"],"m":["100"]}]`);

  // An empty batch is answered: the accumulator is no longer empty, yet holds no group.
  const empty = await write(dir, 'e.hdseg', Buffer.alloc(0));
  s = await SegmentScanner.open(empty, ScanFilter.compile(schema, '[]'));
  assert.ok(s.setAggregateFold(plan));
  assert.ok(s.foldInto(a));
  s.close();
  assert.not.ok(a.empty);
  assert.is(a.groups, 0);
  assert.is(a.take(), '[]');
  assert.ok(a.empty);
});

acc('max_groups: a fold that would pass it returns false and leaves the accumulator as it was', async () => {
  const plan = AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'port' }], max_groups: 3 }));
  const all = ScanFilter.compile(schema, '[]');
  const batch = async (name: string, protos: number[]) => write(dir, name, encode(protos.map((proto, j) => ({ ts: j, proto, port: 10 + j })), 3));
  const x = await batch('x.hdseg', [1, 6, 6]);
  const y = await batch('y.hdseg', [17, 200]);
  const z = await batch('z.hdseg', [6]);
  const tooMany = await batch('w.hdseg', [1, 6, 17, 200]);
  const a = AggregateAccumulator.create(plan);
  const open = async (f: string, verifyHash = false) => {
    const s = await SegmentScanner.open(f, all, { verifyHash });
    // verifyHash reads every block: the scanned path.
    if (!s.setAggregateFold(plan)) while (!(await s.next()).done);
    return s;
  };
  const sx = await open(x);
  assert.ok(sx.foldInto(a));
  const sy = await open(y, true);
  assert.is(sy.foldInto(a), false);
  assert.is(a.groups, 2);
  assert.is(a.take(), '[{"k":["1"],"m":["1","10"]},{"k":["6"],"m":["2","23"]}]');
  // Into the emptied accumulator it fits; the same scanner folds now.
  assert.ok(sy.foldInto(a));
  const sz = await open(z);
  assert.ok(sz.foldInto(a));
  assert.is(a.groups, 3);
  assert.is(a.take(), '[{"k":["6"],"m":["1","10"]},{"k":["17"],"m":["1","10"]},{"k":["200"],"m":["1","11"]}]');
  for (const s of [sx, sy, sz]) s.close();
  // A batch with more groups than max_groups: its summary folds nowhere, its scan's last step rejects.
  const sw = await open(tooMany);
  assert.throws(() => sw.foldInto(a), code('ERR_SCAN_TOO_MANY_GROUPS'));
  sw.close();
  const scanned = await SegmentScanner.open(tooMany, all, { verifyHash: true });
  assert.is(scanned.setAggregateFold(plan), false);
  try {
    await scanned.next();
    assert.unreachable('the last step rejects');
  } catch (e) {
    assert.ok(code('ERR_SCAN_TOO_MANY_GROUPS')(e), String(e));
  }
  scanned.close();
  assert.ok(a.empty);
});

acc.run();
