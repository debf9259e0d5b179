/**
 * A dashboard's next statement — the same text with new WHERE integers (sql/parseTrees.ts,
 * sql/planKeyed.ts) — through the engine: it is planned afresh (its own window and filters, said in
 * the pushdown notices) but asks DuckDB nothing the previous one already asked (no parse, no
 * statement over the empty table), and answers exactly what an engine without the shape caches
 * answers, on the aggregate path, row passthrough and the record path. A string literal, or a
 * literal of the select list, is part of the key: a new one asks DuckDB again (and gets its errors).
 * warmUpPlans prepares the first statement of each dataset.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LocalSqlSession } from '../../local/localSqlSession';
import { SqlEngine, type SqlResult } from '../../sql/sqlEngine';
import { A0, aggBatches, aggFetcher, aggSchema, enginePair } from './aggregateSupport';
import { memoryEngine, T0 } from './support';
import { Catalog } from '../../sql/catalog';

const test = suite('statements of a known shape');

/** The DuckDB statements `fn` runs in any session (parses and deserializations counted apart). */
async function duckdbCalls<T>(fn: () => Promise<T>): Promise<{ out: T; parses: number; statements: string[] }> {
  const query = LocalSqlSession.prototype.query;
  let parses = 0;
  const statements: string[] = [];
  LocalSqlSession.prototype.query = function (this: LocalSqlSession, sql, opts) {
    if (sql.includes('json_serialize_sql')) parses++;
    else statements.push(sql);
    return query.call(this, sql, opts);
  };
  try {
    return { out: await fn(), parses, statements };
  } finally {
    LocalSqlSession.prototype.query = query;
  }
}

/** Every column's name and type and every value, as text. */
function answerOf(r: SqlResult): string {
  const t = r.table;
  const rows: string[] = [];
  for (let i = 0; i < t.numRows; i++) rows.push(t.schema.fields.map((_, c) => String(t.getChildAt(c)?.get(i))).join('|'));
  return `${t.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(',')}\n${rows.join('\n')}`;
}

test('aggregate path: new time bounds reuse the parse and the result schema, answers and notices as without the caches', async () => {
  const fetcher = aggFetcher(aggSchema, aggBatches(3, 6, 50));
  const on = enginePair(fetcher, { explainPushdown: true });
  const off = enginePair(fetcher, { explainPushdown: true, shapeTrees: false });
  const q = (k: number): string => `SELECT proto, count(*) AS n, sum(big) AS b FROM aggt WHERE ts >= ${A0 + k} AND ts < ${A0 + 200 + k} AND port < ${60000 + k} GROUP BY proto ORDER BY proto`;
  try {
    await on.pushed.execute(q(0));
    for (let k = 1; k <= 5; k++) {
      const got = await duckdbCalls(() => on.pushed.execute(q(k)));
      const want = await off.pushed.execute(q(k));
      assert.is(answerOf(got.out), answerOf(want));
      const timeless = (ns: readonly string[]): string[] => ns.map((n) => n.replace(/ in \d+ ms/, ''));
      assert.equal(timeless(got.out.notices), timeless(want.notices));
      assert.ok(got.out.notices.some((n) => n.includes(`window ${A0 + k}..${A0 + 199 + k}`)), got.out.notices.join('\n'));
      assert.is(got.parses, 0, `statement ${k} parsed by DuckDB`);
      assert.equal(got.statements, [], `statement ${k} ran ${got.statements.join('; ')}`);
    }
    assert.is(on.pushed.parseTrees.counts.shape, 5);
    assert.is(on.pushed.parseTrees.counts.duckdb, 1);
  } finally {
    await on.local.close();
    await off.local.close();
  }
});

test('row passthrough and the record path: new bounds and ports answer as without the caches', async () => {
  const on = memoryEngine(300);
  const off = memoryEngine(300, { shapeTrees: false });
  const pass = (k: number): string => `SELECT ts, proto, bytes FROM flows WHERE ts >= ${T0 + k} AND ts < ${T0 + 40 + k} AND dst_port = ${[443, 80, 53][k % 3]}`;
  const records = (k: number): string => `SELECT proto, max(bytes) + 1 AS m FROM flows WHERE ts >= ${T0 + k} AND ts < ${T0 + 90 + k} GROUP BY proto ORDER BY proto`;
  try {
    for (const q of [pass, records]) {
      await on.engine.execute(q(0));
      for (let k = 1; k <= 4; k++) {
        const got = await duckdbCalls(() => on.engine.execute(q(k)));
        assert.is(answerOf(got.out), answerOf(await off.engine.execute(q(k))));
        assert.is(got.parses, 0);
        // Passthrough runs nothing in DuckDB; the record path runs the statement itself only.
        assert.equal(got.statements, q === pass ? [] : [q(k)]);
      }
    }
  } finally {
    await on.local.close();
    await off.local.close();
  }
});

test('a new string literal or select-list literal asks DuckDB again, and gets its answer or error', async () => {
  const on = memoryEngine(300);
  const off = memoryEngine(300, { shapeTrees: false });
  try {
    const text = (port: string): string => `SELECT ts, bytes FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 30} AND dst_port = ${port}`;
    await on.engine.execute(text("'443'"));
    const error = async (e: SqlEngine, sql: string): Promise<string> => e.execute(sql).then(() => 'no error', (err: Error) => err.message);
    assert.is(await error(on.engine, text("'abc'")), await error(off.engine, text("'abc'")));
    assert.is.not(await error(on.engine, text("'abc'")), 'no error');
    // The select list's literal names and types the column: each value is its own schema.
    for (const lit of ['1', '2', '1.5', '2.25']) {
      const sql = `SELECT bytes + ${lit} FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 5}`;
      assert.is(answerOf(await on.engine.execute(sql)), answerOf(await off.engine.execute(sql)));
    }
  } finally {
    await on.local.close();
    await off.local.close();
  }
});

test('warmUpPlans: the first statement of a dataset is parsed and typed before it arrives', async () => {
  const fetcher = aggFetcher(aggSchema, aggBatches(4, 3, 20));
  const { pushed, local } = enginePair(fetcher);
  try {
    await pushed.warmUp();
    const ms = await pushed.warmUpPlans();
    assert.ok(ms >= 0);
    const got = await duckdbCalls(() => pushed.execute(`SELECT count(*) FROM aggt WHERE ts >= ${A0} AND ts < ${A0 + 120}`));
    assert.is(got.parses, 0);
    assert.equal(got.statements, []);
    assert.is(Number(got.out.table.getChildAt(0)?.get(0)), 40);
  } finally {
    await local.close();
  }
});

test('warmUpPlans never rejects, even with the engine closed under it', async () => {
  const { engine, local } = memoryEngine(10);
  await local.close();
  assert.ok((await engine.warmUpPlans()) >= 0);
  const e = new SqlEngine(new Catalog([]), local, { fetch: async () => ({ batchErrors: [], missingBatches: 0 }) }, { lookbackSec: 60, timeoutMs: 1000, maxRows: 0, qos: 1 });
  assert.ok((await e.warmUpPlans()) >= 0);
});

test.run();
