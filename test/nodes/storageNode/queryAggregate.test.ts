/**
 * HDQuery `aggregate` on a running Storage Node (docs/query.md, "Aggregates"): each batch answers with
 * one aggregate frame (its partial) and its eob instead of records. Every partial is checked against a
 * straightforward BigInt fold over the batch's records (randomised queries, seed printed), a hidden
 * field contributes only zeros, the node refuses what it cannot compute with error 11 naming the path.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { AggregateKey, AggregateMeasure, AggregatePartial, AggregateSpec } from '../../../query/aggregate';
import { parseHdQuery, serializeHdQuery, type SubQuery } from '../../../query/hdQuery';
import type { QueryResult } from '../../../hdwp/resultListener';
import { batchOf, ControlPeer, R, startNode, TestClient, untilOk, type TestNode } from './queryKit';

const SEED = Number(process.env.HD_TEST_SEED ?? Date.now() % 100000);
console.log(`queryAggregate: seed ${SEED} (HD_TEST_SEED=${SEED} to repeat)`);

/** uint64 ids above 2^63 in one batch, so sums and min/max cross the signed range. */
function wideIds(b: { id: ReturnType<typeof batchOf>['id']; data: Buffer }): typeof b {
  for (let at = 0, i = 0n; at < b.data.length; at += R, i++) b.data.writeBigUInt64LE(2n ** 64n - 1n - i * 977n, at + 8);
  return b;
}
const BATCHES = [batchOf(61, 1500), batchOf(62, 37), wideIds(batchOf(63, 900)), batchOf(64, 1)];

/** A record's fields as the schema reads them (queryKit's SCHEMA). */
interface Rec {
  ts: bigint;
  id: bigint;
  price: bigint;
  qty: bigint;
  side: bigint;
}
function records(data: Buffer, mask?: Buffer): Rec[] {
  const out: Rec[] = [];
  for (let at = 0; at < data.length; at += R) {
    const r = Buffer.from(data.subarray(at, at + R));
    if (mask) for (let i = 0; i < R; i++) r[i] &= mask[i];
    out.push({ ts: r.readBigInt64LE(0), id: r.readBigUInt64LE(8), price: BigInt(r.readInt32LE(16)), qty: BigInt(r.readUInt16LE(20)), side: BigInt(r.readUInt8(22)) });
  }
  return out;
}

/** The partial a batch should give: a plain fold (groups keyed by their key text). */
function reference(recs: Rec[], spec: AggregateSpec, pass: (r: Rec) => boolean): Map<string, string[]> {
  const groups = new Map<string, { n: bigint; v: (bigint | undefined)[] }>();
  for (const r of recs) {
    if (!pass(r)) continue;
    const k = (spec.group_by ?? []).map((g: AggregateKey) => {
      const v = r[g.field as keyof Rec];
      return g.bucket === undefined ? v : v - (v % BigInt(g.bucket));
    });
    const key = k.join('|');
    const g = groups.get(key) ?? { n: 0n, v: spec.measures.map(() => undefined) };
    groups.set(key, g);
    g.n++;
    spec.measures.forEach((m: AggregateMeasure, i) => {
      if (m.fn === 'count') return;
      const x = r[m.field as keyof Rec];
      const cur = g.v[i];
      g.v[i] = cur === undefined ? x : m.fn === 'sum' ? cur + x : m.fn === 'min' ? (x < cur ? x : cur) : x > cur ? x : cur;
    });
  }
  const out = new Map<string, string[]>();
  for (const [k, g] of groups) out.set(k, spec.measures.map((m, i) => (m.fn === 'count' ? g.n : (g.v[i] as bigint)).toString()));
  return out;
}

function asMap(p: AggregatePartial): Map<string, string[]> {
  return new Map(p.groups.map((g) => [g.k.join('|'), [...g.m]]));
}

let node: TestNode;
let client: TestClient;
let scc: ControlPeer;

const agg = suite('Storage Node aggregates');
agg.before(async () => {
  node = await startNode();
  await node.ingest(BATCHES);
  client = await TestClient.start();
  scc = await ControlPeer.open(node.commandPort);
});
agg.after(async () => {
  scc.close();
  await client.close();
  await node.stop();
});

/** Runs one aggregate query over every batch; resolves with each batch's result. */
async function ask(spec: AggregateSpec, extra: { subQueries?: SubQuery[]; fieldMask?: Buffer } = {}): Promise<Map<string, QueryResult & { kind: 'batch' }>> {
  const { auth, json, results } = client.query(
    BATCHES.map((b) => b.id),
    { aggregate: spec, ...extra },
  );
  scc.sendQuery(auth, json);
  const ends = await scc.batchEnds(auth.queryId, BATCHES.length);
  assert.ok(ends.every((f) => f.kind === 'eob'), JSON.stringify(scc.of(auth.queryId).map((f) => (f.kind === 'error' ? f.message : f.kind))));
  await untilOk(() => results.length === BATCHES.length);
  const out = new Map<string, QueryResult & { kind: 'batch' }>();
  for (const r of results) if (r.kind === 'batch') out.set(r.batchId.toHex(), r);
  return out;
}

agg('randomised queries: every partial equals a plain fold over the batch records', async () => {
  let x = SEED * 2654435761 || 1;
  const rnd = (n: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  const KEYS: AggregateKey[] = [{ field: 'side' }, { field: 'qty' }, { field: 'ts', bucket: 600 }, { field: 'price' }];
  const MEASURES: AggregateMeasure[] = [
    { fn: 'count' },
    { fn: 'sum', field: 'id' },
    { fn: 'sum', field: 'price' },
    { fn: 'min', field: 'price' },
    { fn: 'max', field: 'id' },
    { fn: 'min', field: 'ts' },
    { fn: 'max', field: 'qty' },
    { fn: 'count', field: 'qty' },
  ];
  for (let round = 0; round < 8; round++) {
    const keys = KEYS.filter(() => rnd(3) === 0).slice(0, 2);
    const measures = MEASURES.filter(() => rnd(2) === 0);
    if (measures.length === 0) measures.push({ fn: 'count' });
    const spec: AggregateSpec = { version: 1, ...(keys.length ? { group_by: keys } : {}), measures };
    const lo = rnd(20000) - 10000;
    const side = 1 + rnd(2);
    const filtered = rnd(2) === 0;
    const subQueries: SubQuery[] = filtered ? [{ filters: [{ field: 'price', op: 'ge', value: String(lo) }] }, { filters: [{ field: 'side', op: 'eq', value: String(side) }] }] : [];
    const pass = (r: Rec): boolean => !filtered || r.price >= BigInt(lo) || r.side === BigInt(side);
    const got = await ask(spec, { subQueries });
    for (const b of BATCHES) {
      const r = got.get(b.id.toHex());
      const what = `round ${round} (${JSON.stringify(spec)}, filtered ${filtered} lo ${lo} side ${side}), batch ${b.id.toHex().slice(-4)}`;
      assert.ok(r?.aggregate, `${what}: a partial came`);
      assert.is(r.count, 0, `${what}: no records`);
      const want = reference(records(b.data), spec, pass);
      assert.equal(asMap(r.aggregate), want, what);
      const matched = [...want.values()].length === 0 ? 0 : records(b.data).filter(pass).length;
      assert.is(r.declaredCount, matched, `${what}: eob counts the matches`);
    }
  }
});

agg('a hidden field contributes only zeros; filters still read its stored value', async () => {
  const mask = Buffer.alloc(R, 0xff);
  mask.fill(0, 16, 20); // price
  mask.fill(0, 22, 23); // side
  const spec: AggregateSpec = { version: 1, group_by: [{ field: 'side' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'price' }, { fn: 'min', field: 'price' }, { fn: 'max', field: 'price' }, { fn: 'sum', field: 'qty' }] };
  const subQueries: SubQuery[] = [{ filters: [{ field: 'price', op: 'ge', value: '0' }] }];
  const got = await ask(spec, { subQueries, fieldMask: mask });
  for (const b of BATCHES) {
    const stored = records(b.data).filter((r) => r.price >= 0n);
    const p = got.get(b.id.toHex())?.aggregate;
    assert.ok(p);
    if (stored.length === 0) {
      assert.equal(p.groups, []);
      continue;
    }
    const qty = stored.reduce((s, r) => s + r.qty, 0n);
    assert.equal(p.groups, [{ k: ['0'], m: [String(stored.length), '0', '0', '0', String(qty)] }]);
  }
});

agg('what the node cannot compute is refused with error 11 naming the path', async () => {
  const cases: [AggregateSpec, string][] = [
    [{ version: 1, measures: [{ fn: 'count' }, { fn: 'sum', field: 'sym' }] }, 'aggregate.measures[1].field'],
    [{ version: 1, measures: [{ fn: 'sum', field: 'nope' }] }, 'aggregate.measures[0].field'],
    [{ version: 1, group_by: [{ field: 'sym' }], measures: [{ fn: 'count' }] }, 'aggregate.group_by[0].field'],
  ];
  for (const [spec, path] of cases) {
    const { auth, json } = client.query([BATCHES[0].id], { aggregate: spec });
    scc.sendQuery(auth, json);
    const e = await scc.errorOf(auth.queryId);
    assert.is(e.code, 11);
    assert.ok(e.message.startsWith(`${path}:`), e.message);
  }
  // More groups in a batch than max_groups: the query stops with error 11.
  const { auth, json } = client.query([BATCHES[0].id], { aggregate: { version: 1, group_by: [{ field: 'id' }], measures: [{ fn: 'count' }], max_groups: 10 } });
  scc.sendQuery(auth, json);
  const e = await scc.errorOf(auth.queryId);
  assert.is(e.code, 11);
  assert.match(e.message, /aggregate\.max_groups/);
});

agg('a whole-batch aggregate is answered from the segment summary: no record is scanned', async () => {
  const spec: AggregateSpec = { version: 1, group_by: [{ field: 'side' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'id' }, { fn: 'sum', field: 'price' }] };
  const before = await node.counter('hd_sn_query_records_scanned_total');
  const got = await ask(spec);
  const global = await ask({ version: 1, measures: [{ fn: 'count' }, { fn: 'sum', field: 'qty' }, { fn: 'min', field: 'price' }, { fn: 'max', field: 'id' }, { fn: 'min', field: 'ts' }] });
  assert.is(await node.counter('hd_sn_query_records_scanned_total'), before, 'records scanned did not move');
  for (const b of BATCHES) {
    assert.equal(asMap(got.get(b.id.toHex())?.aggregate as AggregatePartial), reference(records(b.data), spec, () => true));
    const g = global.get(b.id.toHex())?.aggregate as AggregatePartial;
    const rs = records(b.data);
    const min = (xs: bigint[]): bigint => xs.reduce((a, x) => (x < a ? x : a));
    const max = (xs: bigint[]): bigint => xs.reduce((a, x) => (x > a ? x : a));
    assert.equal(g.groups, [{ k: [], m: [String(rs.length), String(rs.reduce((s, r) => s + r.qty, 0n)), String(min(rs.map((r) => r.price))), String(max(rs.map((r) => r.id))), String(min(rs.map((r) => r.ts)))] }]);
    assert.is(global.get(b.id.toHex())?.declaredCount, rs.length);
  }
  // With a filter the batch is scanned.
  await ask(spec, { subQueries: [{ filters: [{ field: 'side', op: 'eq', value: '1' }] }] });
  assert.ok((await node.counter('hd_sn_query_records_scanned_total')) > before, 'a filtered aggregate scans');
});

agg('the HDQuery refuses limit with aggregate, and checks the shape on every reader', () => {
  const base = { queryId: 1, dataset: 'x', batchIds: [], subQueries: [], targets: [], verifyHash: false, queryQos: 1, returnAddress: { host: 'h', port: 1 }, token: Buffer.alloc(16, 1) };
  const aggregate: AggregateSpec = { version: 1, measures: [{ fn: 'count' }] };
  const json = serializeHdQuery({ ...base, aggregate });
  assert.equal(parseHdQuery(json).aggregate, aggregate);
  assert.throws(() => serializeHdQuery({ ...base, aggregate, limit: 3 }), /limit/);
  assert.throws(() => parseHdQuery(json.replace('"version":1', '"version":2')), /aggregate\.version/);
  assert.throws(() => parseHdQuery(json.replace('"fn":"count"', '"fn":"avg"')), /aggregate\.measures\[0\]\.fn/);
});

agg.run();
