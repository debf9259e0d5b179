/**
 * Which statement shapes split into pushed aggregates (sql/aggregatePushdown.ts), and the spec and
 * outer statement they give; the exact merge arithmetic (sql/aggregateMerge.ts).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LocalSql } from '../../local/localSql';
import { avgOf, AggregateMerger, roundedQuotient } from '../../sql/aggregateMerge';
import type { AggregatePlan } from '../../sql/aggregatePushdown';
import { Catalog } from '../../sql/catalog';
import { planStatement } from '../../sql/planner';
import { aggSchema } from './aggregateSupport';

const local = new LocalSql({ threads: 1 });
let names: Set<string>;

async function plan(sql: string): Promise<{ aggregate?: AggregatePlan; noAggregate?: string }> {
  const session = await local.openSession();
  try {
    if (!names) {
      const t = await session.query(`SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type IN ('aggregate', 'macro', 'table_macro')`);
      names = new Set(Array.from({ length: t.numRows }, (_, i) => String(t.getChildAt(0)?.get(i))));
    }
    const tree = String((await session.query(`SELECT json_serialize_sql('${sql.replace(/'/g, "''")}')::VARCHAR`)).getChildAt(0)?.get(0));
    return planStatement(tree, new Catalog([aggSchema]), { now: 1_700_003_600, lookbackSec: 3600, aggregateFunctions: names });
  } finally {
    await session.close();
  }
}

const splits = suite('aggregatePlanOf: shapes that split');

for (const sql of [
  'SELECT count(*) FROM aggt',
  'SELECT count(*) FROM aggt WHERE ts >= 1700000000 AND proto = \'tcp\'',
  'SELECT proto, sum(big), min(amount), max(i64), avg(port) FROM aggt GROUP BY proto',
  'SELECT ts - ts % 3600 AS h, count(*) FROM aggt GROUP BY h ORDER BY h LIMIT 3',
  'SELECT flag, port, count(port) FROM aggt GROUP BY 1, 2 HAVING count(*) > 2',
  'SELECT a.proto, sum(a.neg) / count(*) AS r FROM aggt a WHERE a.port IN (80, 443) GROUP BY a.proto',
  'SELECT port FROM aggt GROUP BY port',
]) {
  splits(sql, async () => {
    const p = await plan(sql);
    assert.ok(p.aggregate, p.noAggregate);
  });
}

splits('the spec: count(*) first, each measure once, avg as sum + count, buckets', async () => {
  const p = await plan('SELECT ts - ts % 60 AS m, proto, avg(amount), sum(amount), count(*), min(ts) FROM aggt GROUP BY m, proto');
  assert.equal(p.aggregate?.spec, {
    version: 1,
    group_by: [{ field: 'ts', bucket: 60 }, { field: 'proto' }],
    measures: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }, { fn: 'min', field: 'ts' }],
    max_groups: 65536,
  });
  assert.equal(p.aggregate?.outputs.map((o) => o.sqlType), ['DOUBLE', 'DECIMAL(38,2)', 'BIGINT', 'BIGINT']);
  assert.equal(p.aggregate?.renamedItems, [2, 3, 4, 5]);
  assert.not.match(p.aggregate?.outerTree ?? '', /where_clause":\{/);
});

const stays = suite('aggregatePlanOf: shapes that keep the record path');

for (const [sql, why] of [
  ['SELECT count(*) FROM aggt WHERE ratio > 0.5', /WHERE has 1 conjunct/],
  ['SELECT count(*) FROM aggt WHERE ts > 5 AND port + 1 = 81', /WHERE has 1 conjunct/],
  ['SELECT count(*) FROM aggt WHERE proto = \'other\'', /WHERE/], // the default label stands for many codes: not pushed
  ['SELECT count(*) FROM aggt WHERE port = 80 OR port = 443', /WHERE/],
  ['SELECT count(DISTINCT port) FROM aggt', /DISTINCT/],
  ['SELECT median(port) FROM aggt', /median/],
  ['SELECT sum(ratio) FROM aggt', /ratio/],
  ['SELECT sum(port + 1) FROM aggt', /expression/],
  ['SELECT avg(big) FROM aggt', /avg\(big\)/],
  ['SELECT sum(proto) FROM aggt', /enum/],
  ['SELECT ratio, count(*) FROM aggt GROUP BY ratio', /GROUP BY key/],
  ['SELECT port % 10, count(*) FROM aggt GROUP BY port % 10', /GROUP BY key/],
  ['SELECT proto, count(*) FROM aggt GROUP BY ROLLUP(proto)', /ROLLUP/],
  ['SELECT proto, count(*) FROM aggt GROUP BY ALL', /GROUP BY ALL/],
  ['SELECT proto, count(*) OVER () FROM aggt', /window/],
  ['SELECT count(*) FROM aggt a JOIN aggt b ON a.port = b.port', /one reference/],
  ['SELECT count(*) FROM (SELECT * FROM aggt)', /FROM/],
  ['WITH x AS (SELECT * FROM aggt) SELECT count(*) FROM x', /WITH|dataset/],
  ['SELECT count(*) FROM aggt UNION ALL SELECT count(*) FROM aggt', /set operation|dataset/],
  ['SELECT count(*) FROM aggt WHERE port IN (SELECT 80)', /subquery|WHERE/],
  ['SELECT port, count(*) FILTER (WHERE flag) FROM aggt GROUP BY port', /FILTER/],
  ['SELECT port, neg, count(*) FROM aggt GROUP BY port', /neg is read outside an aggregate/],
  ['SELECT * FROM aggt', /star|no aggregate/],
  ['SELECT ts - ts % 60 AS m, ts, count(*) FROM aggt GROUP BY m, ts', /two GROUP BY keys/],
] as const) {
  stays(sql, async () => {
    const p = await plan(sql);
    assert.not.ok(p.aggregate, `${sql} split`);
    assert.match(p.noAggregate ?? '', why);
  });
}

const merge = suite('aggregate merge: exact arithmetic');

merge('roundedQuotient: 64-bit then 53-bit rounding; plain division where it is exact', () => {
  assert.is(roundedQuotient(10n, 4n, 64), 2.5);
  assert.is(roundedQuotient(-7n, 2n, 64), -3.5);
  assert.is(roundedQuotient(1n, 3n, 64), 1 / 3);
  assert.is(roundedQuotient(2n ** 63n + 1n, 1n, 64), 2 ** 63);
  for (let i = 1n; i < 2000n; i += 37n) assert.is(roundedQuotient(i * 1_000_003n, 7n + i, 53), Number(i * 1_000_003n) / Number(7n + i));
});

merge('avgOf: null over no rows; refuses what it cannot reproduce', () => {
  assert.is(avgOf(undefined, 0n, { avgPath: 'longDouble' }), null);
  assert.is(avgOf(12345n, 10n, { avgPath: 'longDouble', scale: 2 }), 12.345);
  assert.throws(() => avgOf(2n ** 70n, 3n, { avgPath: 'longDouble' }), /cannot reproduce/);
});

merge('merger: sums across batches past 2^64, min/max, undefined enum codes in the default label group, bad partials refused', async () => {
  const p = await plan('SELECT proto, sum(big), min(i64), max(i64) FROM aggt GROUP BY proto');
  const m = new AggregateMerger(p.aggregate!, aggSchema);
  const top = (2n ** 64n - 1n).toString();
  m.add({ v: 1, groups: [{ k: ['6'], m: ['1', top, '-5', '7'] }, { k: ['200'], m: ['2', '3', '0', '0'] }] });
  m.add({ v: 1, groups: [{ k: ['6'], m: ['1', top, '-9', '3'] }, { k: ['0'], m: ['1', '4', '-1', '9'] }] });
  assert.is(m.size, 2); // tcp, other (codes 200 and 0)
  const t = m.table();
  const rows = Array.from({ length: t.numRows }, (_, i) => t.schema.fields.map((_, c) => String(t.getChildAt(c)?.get(i))).join('|'));
  assert.equal(rows.sort(), ['other|7|-1|9', `tcp|${(2n ** 65n - 2n).toString()}|-9|7`]);
  assert.throws(() => m.add({ v: 1, groups: [{ k: ['6'], m: ['1', '2.5', '0', '0'] }] }), /not a decimal integer/);
  assert.throws(() => m.add({ v: 1, groups: [{ k: ['300'], m: ['1', '1', '0', '0'] }] }), /out of the range/);
  assert.throws(() => m.add({ v: 1, groups: [{ k: ['6'], m: ['1'] }] }), /expected 1 and 4/);
});

merge.after(async () => {
  await local.close();
});

splits.run();
stays.run();
merge.run();
