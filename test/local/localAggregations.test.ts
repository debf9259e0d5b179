import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { LocalSql } from '../../local/localSql';
import { LocalAggregations, localAggregationSql, parseLocalAggregations } from '../../local/localAggregations';
import { allTypesBatch, columns, expectArgsError, rng } from './fixtures';

const local = new LocalSql({ threads: 1 });

function flows(seed: number, n: number): { table: arrow.Table; proto: string[]; bytes: number[]; rtt: number[] } {
  const r = rng(seed);
  const proto = Array.from({ length: n }, () => ['tcp', 'udp', 'icmp'][Math.floor(r() * 3)]!);
  const bytes = Array.from({ length: n }, () => Math.floor(r() * 10000));
  const rtt = Array.from({ length: n }, () => Math.round(r() * 1000) / 8);
  const table = new arrow.Table({
    proto: arrow.vectorFromArray(proto, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    bytes: arrow.vectorFromArray(bytes, new arrow.Int32()),
    rtt: arrow.vectorFromArray(rtt, new arrow.Float64()),
  });
  return { table, proto, bytes, rtt };
}

const aggs = suite('LocalAggregations');

aggs('group keys and count/sum/min/max/avg agree with a plain computation, ordered as asked', async () => {
  const { table, proto, bytes, rtt } = flows(5, 3000);
  const a = new LocalAggregations(local);
  a.set(JSON.stringify({
    group_by: ['proto'],
    aggregates: [
      { fn: 'count', as: 'flows' }, { fn: 'sum', column: 'bytes' }, { fn: 'min', column: 'rtt' },
      { fn: 'max', column: 'rtt' }, { fn: 'avg', column: 'bytes', as: 'mean_bytes' },
    ],
    order_by: [{ column: 'flows', desc: true }, 'proto'],
  }));
  const out = columns(await a.apply(table));
  const groups = [...new Set(proto)].map((p) => {
    const rows = proto.map((x, i) => (x === p ? i : -1)).filter((i) => i >= 0);
    return {
      proto: p, flows: rows.length, sum: rows.reduce((s, i) => s + bytes[i]!, 0),
      min: Math.min(...rows.map((i) => rtt[i]!)), max: Math.max(...rows.map((i) => rtt[i]!)),
      mean: rows.reduce((s, i) => s + bytes[i]!, 0) / rows.length,
    };
  }).sort((x, y) => y.flows - x.flows || (x.proto < y.proto ? -1 : 1));
  assert.equal(out.proto, groups.map((g) => g.proto));
  assert.equal(out.flows, groups.map((g) => `${g.flows}n`));
  assert.equal(out.sum_bytes, groups.map((g) => String(g.sum)));
  assert.equal(out.min_rtt, groups.map((g) => g.min));
  assert.equal(out.max_rtt, groups.map((g) => g.max));
  (out.mean_bytes as number[]).forEach((m, i) => assert.ok(Math.abs(m - groups[i]!.mean) < 1e-9));
});

aggs('without group keys: one row; set(null) turns it off; a bad config keeps the old one', async () => {
  const { table, bytes } = flows(6, 500);
  const a = new LocalAggregations(local);
  a.set({ group_by: [], aggregates: [{ fn: 'count' }, { fn: 'max', column: 'bytes' }] });
  assert.equal(columns(await a.apply(table)), { count: ['500n'], max_bytes: [Math.max(...bytes)] });
  assert.throws(() => a.set('{"aggregates":[{"fn":"median","column":"bytes"}]}'), /aggregates\[0\]\.fn/);
  assert.ok(a.config, 'old config kept');
  a.set(null);
  assert.is(a.config, undefined);
  assert.is(await a.apply(table), table);
  a.set('');
  assert.is(a.config, undefined);
});

aggs('works on presentation types: group by enum labels and inet text, sum of uint64', async () => {
  const a = new LocalAggregations(local);
  a.set({ group_by: ['v4'], aggregates: [{ fn: 'sum', column: 'u64', as: 'total' }], order_by: ['v4'] });
  assert.equal(columns(await a.apply(new arrow.Table(allTypesBatch()))), {
    v4: ['0.0.0.0', '192.168.1.2', '255.255.255.255'],
    total: ['0', '18446744073709551615', '9007199254740993'],
  });
});

aggs('malformed configs are refused, naming the key', () => {
  const bad = (config: unknown, key: string, msg: RegExp): void => expectArgsError(() => parseLocalAggregations(config as string), key, msg);
  bad('{x', 'config', /not valid JSON/);
  bad('[]', 'config', /JSON object/);
  bad({ group_by: ['a'], extra: 1 }, 'extra', /unknown key/);
  bad({ group_by: 'a' }, 'group_by', /array/);
  bad({ group_by: [''] }, 'group_by[0]', /non-empty string/);
  bad({}, 'aggregates', /at least one/);
  bad({ aggregates: {} }, 'aggregates', /array/);
  bad({ aggregates: [1] }, 'aggregates[0]', /object/);
  bad({ aggregates: [{ fn: 'sum' }] }, 'aggregates[0].column', /sum needs a column/);
  bad({ aggregates: [{ fn: 'count', colour: 'x' }] }, 'aggregates[0].colour', /unknown key/);
  bad({ aggregates: [{ fn: 'count', as: '' }] }, 'aggregates[0].as', /non-empty/);
  bad({ group_by: ['count'], aggregates: [{ fn: 'count' }] }, 'aggregates', /"count" appears twice/);
  bad({ aggregates: [{ fn: 'count' }], order_by: 'count' }, 'order_by', /array/);
  bad({ aggregates: [{ fn: 'count' }], order_by: ['nope'] }, 'order_by[0]', /not an output column/);
  bad({ aggregates: [{ fn: 'count' }], order_by: [{ column: 'count', desc: 'yes' }] }, 'order_by[0].desc', /true or false/);
  bad({ aggregates: [{ fn: 'count' }], order_by: [3] }, 'order_by[0]', /column name/);
});

aggs('a column the result does not have is named when the config is applied', async () => {
  const a = new LocalAggregations(local);
  a.set({ group_by: ['nope'], aggregates: [{ fn: 'count' }] });
  try {
    await a.apply(flows(1, 10).table);
    assert.unreachable('should throw');
  } catch (err) {
    assert.match((err as Error).message, /^group_by\[0\]: no column "nope"/);
  }
  const sql = localAggregationSql(parseLocalAggregations({ group_by: ['a"b'], aggregates: [{ fn: 'avg', column: 'c' }] })!, new arrow.Schema([
    new arrow.Field('a"b', new arrow.Int32()), new arrow.Field('c', new arrow.Int32()),
  ]));
  assert.is(sql, 'SELECT "a""b", avg("c") AS "avg_c" FROM "result" GROUP BY "a""b"');
});

aggs.after(async () => {
  await local.close();
});
aggs.run();
