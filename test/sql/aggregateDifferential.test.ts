/**
 * Randomised differential tests of aggregate pushdown: for generated datasets and many statement
 * shapes, the answer through partial aggregates (computed per batch from the raw records, merged by
 * hd_sql) equals the record path's exactly — column names, types and every value.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { A0, aggBatches, aggFetcher, aggSchema, enginePair } from './aggregateSupport';
import type { SqlEngine, SqlResult } from '../../sql/sqlEngine';

const W = `ts >= ${A0} AND ts < ${A0 + 600}`;
const WHERES = ['', ` WHERE ${W}`, ` WHERE ${W} AND proto = 'tcp'`, ` WHERE ${W} AND port IN (80, 443) AND neg > -1000000000`, ` WHERE ts > ${A0 + 100} AND flag = true`, ` WHERE ${W} AND ratio > 0.5`, ` WHERE ts < 0`];

/** Shapes: `{W}` is replaced by each WHERE; `split: false` marks shapes that must keep the record path. */
const SHAPES: { sql: string; split?: boolean }[] = [
  { sql: 'SELECT count(*) FROM aggt{W}' },
  { sql: 'SELECT count(*) AS n, sum(port), min(ts), max(ts), count(big) FROM aggt{W}' },
  { sql: 'SELECT proto, count(*) FROM aggt{W} GROUP BY proto ORDER BY proto' },
  { sql: 'SELECT proto, sum(big), min(big), max(big) FROM aggt{W} GROUP BY proto ORDER BY 1' },
  { sql: 'SELECT flag, port, count(*), avg(port) FROM aggt{W} GROUP BY flag, port ORDER BY flag, port' },
  { sql: 'SELECT ts - ts % 120 AS b, count(*), sum(amount), avg(amount), min(amount), max(amount) FROM aggt{W} GROUP BY b ORDER BY b' },
  { sql: 'SELECT proto, sum(neg), avg(neg), avg(small), sum(i64), avg(u32), sum(small) FROM aggt{W} GROUP BY 1 HAVING count(*) > 3 ORDER BY 1 DESC' },
  { sql: 'SELECT proto, count(*) AS n FROM aggt{W} GROUP BY proto ORDER BY n DESC, proto LIMIT 2' },
  { sql: 'SELECT sum(big) - sum(port) AS d, count(port), avg(i64) FROM aggt{W}' },
  { sql: 'SELECT port FROM aggt{W} GROUP BY port ORDER BY port' },
  { sql: 'SELECT t.proto, max(t.i64) - min(t.i64) AS spread FROM aggt t{W} GROUP BY t.proto ORDER BY spread, 1' },
  { sql: 'SELECT proto, count(*) FROM aggt{W} GROUP BY proto HAVING sum(port) > 100000000000' },
  { sql: 'SELECT min(amount), max(amount), sum(amount), avg(amount), avg(small) FROM aggt{W}' },
  { sql: 'SELECT upper(CAST(proto AS VARCHAR)) AS p, count(*) * 2 AS twice, round(avg(port), 3) FROM aggt{W} GROUP BY proto ORDER BY p' },
  { sql: 'SELECT ts - ts % 60, proto, flag, small, count(*) FROM aggt{W} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4 LIMIT 50' },
  { sql: 'SELECT count(DISTINCT port) FROM aggt{W}', split: false },
  { sql: 'SELECT median(port) FROM aggt{W}', split: false },
  { sql: 'SELECT sum(ratio) FROM aggt{W}', split: false },
  { sql: 'SELECT proto, string_agg(DISTINCT CAST(port AS VARCHAR), \',\' ORDER BY CAST(port AS VARCHAR)) FROM aggt{W} GROUP BY proto ORDER BY proto', split: false },
  { sql: 'SELECT ts - ts % 60 AS m, count(*) FROM aggt{W} GROUP BY ALL ORDER BY 1', split: false },
];

/** Rows as text (bigint and doubles exactly), sorted when the statement has no ORDER BY. */
function rowsOf(t: arrow.Table, sorted: boolean): string[] {
  const rows: string[] = [];
  for (let i = 0; i < t.numRows; i++) {
    const vals = t.schema.fields.map((_, c) => {
      const v = t.getChildAt(c)?.get(i);
      if (typeof v === 'bigint') return `${v}n`;
      if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
      if (v !== null && typeof v === 'object' && 'toString' in v) return String(v); // decimals
      return JSON.stringify(v);
    });
    rows.push(vals.join('|'));
  }
  return sorted ? rows.sort() : rows;
}

function same(sql: string, a: SqlResult, b: SqlResult): void {
  const cols = (r: SqlResult): string => r.table.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');
  assert.is(cols(a), cols(b), `columns of ${sql}`);
  const sorted = !/ORDER BY/i.test(sql);
  assert.equal(rowsOf(a.table, sorted), rowsOf(b.table, sorted), `rows of ${sql}`);
  const real = (r: SqlResult): string[] => r.notices.filter((n) => !/: pushed down: |: aggregate /.test(n));
  assert.equal(real(a), real(b), `notices of ${sql}`);
}

async function compare(pushed: SqlEngine, records: SqlEngine, sql: string): Promise<SqlResult> {
  const a = await pushed.execute(sql);
  const b = await records.execute(sql);
  same(sql, a, b);
  return a;
}

const differential = suite('aggregate pushdown: differential');

for (const seed of [1, 7, 42]) {
  differential(`seed ${seed}: every shape and WHERE gives the record path's answer`, async () => {
    const fetcher = aggFetcher(aggSchema, aggBatches(seed, 10, 150, { hugeI64: seed === 42 }), { badBatches: seed === 7 ? [3] : [] });
    const { pushed, records, local } = enginePair(fetcher, { explainPushdown: true });
    let splits = 0;
    let total = 0;
    try {
      for (const shape of SHAPES) {
        for (const w of WHERES) {
          const sql = shape.sql.replace('{W}', w);
          const r = await compare(pushed, records, sql);
          total++;
          const mustNot = shape.split === false || w.includes('ratio');
          if (mustNot) assert.not.ok(r.aggregatePushed, `must not split: ${sql}`);
          else if (!r.aggregatePushed && !(seed === 42 && /avg\((i64|amount)\)/.test(sql))) assert.unreachable(`should split: ${sql} (${r.notices.join('; ')})`);
          if (r.aggregatePushed) splits++;
          if (seed === 7 && w !== ' WHERE ts < 0') assert.ok(r.notices.some((n) => /1 batch\(es\) failed delivery/.test(n)), `bad batch notice for ${sql}`);
        }
      }
    } finally {
      await local.close();
    }
    assert.ok(splits > total / 2, `${splits} of ${total} statements split`);
    console.log(`  seed ${seed}: ${splits} of ${total} statements pushed their aggregates, all answers equal to the record path's`);
  });
}

differential('a refused aggregate, or partials that do not fit, fall back to the record path', async () => {
  for (const opts of [{ refuseAggregate: true }, { garbage: true }]) {
    const fetcher = aggFetcher(aggSchema, aggBatches(3, 4, 50), opts);
    const { pushed, records, local } = enginePair(fetcher, { explainPushdown: true });
    try {
      const sql = `SELECT proto, count(*), sum(big) FROM aggt WHERE ${W} GROUP BY proto ORDER BY proto`;
      const r = await compare(pushed, records, sql);
      assert.not.ok(r.aggregatePushed);
      assert.ok(r.notices.some((n) => /fell back to the record path/.test(n)), r.notices.join('; '));
      assert.is(fetcher.stats.aggregates, 1);
    } finally {
      await local.close();
    }
  }
});

differential('HD_SQL_STRICT: a bad batch fails the pushed statement as it fails the record path; explain notices alone never do', async () => {
  const fetcher = aggFetcher(aggSchema, aggBatches(5, 4, 50), { badBatches: [1] });
  const { pushed, records, local } = enginePair(fetcher, { strict: true, explainPushdown: true });
  try {
    const sql = `SELECT count(*) FROM aggt WHERE ${W}`;
    for (const e of [pushed, records]) {
      try {
        await e.execute(sql);
        assert.unreachable('strict must refuse');
      } catch (err) {
        assert.match(String(err), /HD_SQL_STRICT/);
      }
    }
    const ok = aggFetcher(aggSchema, aggBatches(5, 4, 50));
    const pair = enginePair(ok, { strict: true, explainPushdown: true });
    const r = await pair.pushed.execute(sql);
    assert.ok(r.aggregatePushed);
    assert.ok(r.notices.some((n) => /aggregate pushed to the Storage Nodes: count\(\*\)/.test(n)), r.notices.join('; '));
    await pair.local.close();
  } finally {
    await local.close();
  }
});

differential('the spec sent: keys, measures, buckets, avg as sum + count', async () => {
  const fetcher = aggFetcher(aggSchema, aggBatches(9, 2, 20));
  const { pushed, local } = enginePair(fetcher);
  try {
    await pushed.execute(`SELECT ts - ts % 300 AS b, proto, avg(amount), max(big), count(*) FROM aggt WHERE ${W} GROUP BY b, proto`);
    assert.equal(fetcher.stats.specs[0], {
      version: 1,
      group_by: [{ field: 'ts', bucket: 300 }, { field: 'proto' }],
      measures: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }, { fn: 'max', field: 'big' }],
      max_groups: 65536,
    });
  } finally {
    await local.close();
  }
});

differential('timings (log only): count(*) and a GROUP BY, pushed and record path', async () => {
  const fetcher = aggFetcher(aggSchema, aggBatches(11, 50, 2000));
  const { pushed, records, local } = enginePair(fetcher);
  try {
    for (const sql of [`SELECT count(*) FROM aggt WHERE ${A0} <= ts`, `SELECT proto, count(*), sum(big), avg(port) FROM aggt WHERE ts >= ${A0} GROUP BY proto ORDER BY proto`]) {
      await compare(pushed, records, sql); // warm
      const t0 = performance.now();
      const a = await pushed.execute(sql);
      const t1 = performance.now();
      await records.execute(sql);
      const t2 = performance.now();
      assert.ok(a.aggregatePushed);
      console.log(`  100k records, ${sql}: pushed ${(t1 - t0).toFixed(1)} ms (partials computed in-process by the test), record path ${(t2 - t1).toFixed(1)} ms`);
    }
  } finally {
    await local.close();
  }
});

differential.run();
