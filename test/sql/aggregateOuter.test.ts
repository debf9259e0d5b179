/**
 * The aggregate path's outer statement evaluated by hd_sql itself (sql/aggregateOuterShape.ts,
 * sql/aggregateOuterEval.ts), against DuckDB running the same outer statement over the same merged
 * partials: randomised statements (keys, aggregate calls, aliases, ORDER BY by position, alias, key
 * or call, directions and NULLS, LIMIT / OFFSET) over generated data with uint64 above 2^63,
 * negative values, a scaled numeric, an enum with codes the schema does not define, and empty
 * windows. Both answers must be equal in every column's name, Arrow type and metadata and every
 * value's bits, in the same order where the order is defined. Shapes hd_sql must not evaluate keep
 * DuckDB; statements answered without DuckDB open no transaction.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { mulberry32 } from '../../lib/mulberry32';
import { LocalSqlSession } from '../../local/localSqlSession';
import type { SqlEngine, SqlResult } from '../../sql/sqlEngine';
import { A0, aggBatches, aggFetcher, aggSchema, enginePair } from './aggregateSupport';

const test = suite('aggregate outer statement in hd_sql');

/** One cell exactly: integers with their sign, doubles by their bits, decimals by their words, enums by index and label. */
function cellText(col: arrow.Vector, i: number): string {
  const v: unknown = col.get(i);
  if (v === null) return 'null';
  if (arrow.DataType.isDictionary(col.type)) {
    let at = i;
    for (const d of col.data) {
      if (at < d.length) return `${String((d.values as Int32Array)[d.offset + at])}:${String(v)}`;
      at -= d.length;
    }
  }
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Buffer.from(new Float64Array([v]).buffer).toString('hex');
  if (v instanceof Uint32Array) return [...v].map((w) => w.toString(16)).join(',');
  return JSON.stringify(v);
}

function rowsOf(t: arrow.Table, sorted: boolean): string[] {
  const rows: string[] = [];
  for (let i = 0; i < t.numRows; i++) rows.push(t.schema.fields.map((_, c) => cellText(t.getChildAt(c)!, i)).join('|'));
  return sorted ? rows.sort() : rows;
}

const fieldsOf = (r: SqlResult): string => JSON.stringify(r.table.schema.fields.map((f) => [f.name, String(f.type), f.nullable, [...f.metadata].sort()]));

/** A random statement over aggt, and whether hd_sql should evaluate its outer statement. */
function randomStatement(rnd: () => number, where: string): { sql: string; inHdSql: boolean; ordered: boolean } {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const shuffle = <T>(xs: readonly T[]): T[] => xs.map((x) => [rnd(), x] as const).sort((a, b) => a[0] - b[0]).map(([, x]) => x);
  const keyPool = ['proto', 'flag', 'port', 'small', 'ts - ts % 120'];
  const callPool = ['count(*)', 'sum(big)', 'min(big)', 'max(big)', 'sum(neg)', 'avg(neg)', 'min(neg)', 'sum(amount)', 'avg(amount)', 'min(amount)', 'max(amount)', 'sum(i64)', 'max(i64)', 'avg(small)', 'max(small)', 'avg(u32)', 'sum(u32)', 'count(port)', 'min(ts)', 'max(ts)', 'sum(port)'];
  const keys = shuffle(keyPool).slice(0, Math.floor(rnd() * 4));
  const calls = shuffle(callPool).slice(0, 1 + Math.floor(rnd() * 4));
  type Item = { expr: string; alias?: string; key: boolean };
  const items: Item[] = shuffle([...keys.map((expr) => ({ expr, key: true })), ...calls.map((expr) => ({ expr, key: false }))]).map((it, i) => (it.expr.includes('%') || rnd() < 0.4 ? { ...it, alias: `c${i}` } : it));
  if (items.length === 0) items.push({ expr: 'count(*)', key: false });
  const group = keys.map((k) => {
    const at = items.findIndex((it) => it.expr === k);
    const it = items[at]!;
    return it.alias && rnd() < 0.5 ? it.alias : rnd() < 0.5 ? String(at + 1) : k.includes('%') ? it.alias! : k;
  });
  // ORDER BY: none, every key (total), or calls only (ties possible when there are keys).
  const mode = pick(['none', 'total', 'total', 'calls']);
  const orderTerms: string[] = [];
  const ref = (it: Item): string => {
    const at = items.indexOf(it) + 1;
    const choices = [String(at), ...(it.alias ? [it.alias] : []), ...(it.expr.includes('%') ? [] : [it.expr])];
    return pick(choices);
  };
  const dir = (): string => `${pick(['', ' ASC', ' DESC'])}${pick(['', '', ' NULLS FIRST', ' NULLS LAST'])}`;
  if (mode === 'total') {
    const callsFirst = items.filter((it) => !it.key && rnd() < 0.5);
    for (const it of [...callsFirst, ...shuffle(items.filter((x) => x.key))]) orderTerms.push(ref(it) + dir());
  } else if (mode === 'calls') for (const it of items.filter((x) => !x.key).slice(0, 2)) orderTerms.push(ref(it) + dir());
  const limit = rnd() < 0.4 ? ` LIMIT ${Math.floor(rnd() * 5)}${rnd() < 0.5 ? ` OFFSET ${Math.floor(rnd() * 3)}` : ''}` : '';
  const select = items.map((it) => (it.alias ? `${it.expr} AS ${it.alias}` : it.expr)).join(', ');
  const sql = `SELECT ${select} FROM aggt${where}${group.length > 0 ? ` GROUP BY ${group.join(', ')}` : ''}${orderTerms.length > 0 ? ` ORDER BY ${orderTerms.join(', ')}` : ''}${limit}`;
  const total = keys.length === 0 || mode === 'total';
  return { sql, inHdSql: total || (orderTerms.length === 0 && limit === ''), ordered: total && (orderTerms.length > 0 || keys.length === 0) };
}

const W = `ts >= ${A0} AND ts < ${A0 + 600}`;
const WHERES = [` WHERE ${W}`, ` WHERE ${W} AND proto = 'tcp' AND big > 1000`, ' WHERE ts < 0', ` WHERE ts >= ${A0 + 240} AND neg < 0`];

function pairOf(seed: number): { here: SqlEngine; duck: SqlEngine; close: () => Promise<void> } {
  const fetcher = aggFetcher(aggSchema, aggBatches(seed, 8, 120, { hugeI64: seed % 2 === 0 }));
  const a = enginePair(fetcher, { explainPushdown: true });
  const b = enginePair(fetcher, { explainPushdown: true, aggregateOuterInHdSql: false });
  return { here: a.pushed, duck: b.pushed, close: async () => (await a.local.close(), await b.local.close()) };
}

for (const seed of [3, 8, 21]) {
  test(`seed ${seed}: random statements answer as DuckDB's outer statement does, bit for bit`, async () => {
    const rnd = mulberry32(seed);
    const { here, duck, close } = pairOf(seed);
    let inHdSql = 0;
    let total = 0;
    try {
      for (let i = 0; i < 45; i++) {
        const s = randomStatement(rnd, WHERES[i % WHERES.length]!);
        const a = await here.execute(s.sql);
        const b = await duck.execute(s.sql);
        assert.is(fieldsOf(a), fieldsOf(b), `fields of ${s.sql}`);
        assert.equal(rowsOf(a.table, !s.ordered), rowsOf(b.table, !s.ordered), `rows of ${s.sql}`);
        assert.is(a.aggregatePushed, b.aggregatePushed, `same path for ${s.sql}`);
        assert.not.ok(b.outerInHdSql, s.sql);
        total++;
        if (!a.aggregatePushed) continue;
        assert.is(Boolean(a.outerInHdSql), s.inHdSql, `${s.sql}: ${a.notices.join('; ')}`);
        if (a.outerInHdSql) inHdSql++;
      }
    } finally {
      await close();
    }
    assert.ok(inHdSql > total / 3, `${inHdSql} of ${total} evaluated in hd_sql`);
  });
}

test('shapes hd_sql does not evaluate keep DuckDB, with the same answer', async () => {
  const { here, duck, close } = pairOf(5);
  try {
    for (const sql of [
      `SELECT proto, count(*) FROM aggt WHERE ${W} GROUP BY proto HAVING count(*) > 10 ORDER BY proto`,
      `SELECT proto, count(*) * 2 AS twice FROM aggt WHERE ${W} GROUP BY proto ORDER BY proto`,
      `SELECT DISTINCT flag FROM aggt WHERE ${W} GROUP BY flag, proto`,
      `SELECT proto, count(*) AS n FROM aggt WHERE ${W} GROUP BY proto LIMIT 2`,
      `SELECT port, count(*) AS n FROM aggt WHERE ${W} GROUP BY port ORDER BY n DESC`,
      `SELECT port, count(*) AS n FROM aggt WHERE ${W} GROUP BY port ORDER BY -port`,
      `SELECT port, count(*) AS n FROM aggt WHERE ${W} GROUP BY port ORDER BY n * 2, port`,
      `SELECT port, count(*) AS n FROM aggt WHERE ${W} GROUP BY port ORDER BY port LIMIT 10%`,
    ]) {
      const a = await here.execute(sql);
      const b = await duck.execute(sql);
      assert.ok(a.aggregatePushed, sql);
      assert.not.ok(a.outerInHdSql, sql);
      assert.ok(a.notices.some((n) => /outer statement run in DuckDB \(/.test(n)), a.notices.join('; '));
      assert.is(fieldsOf(a), fieldsOf(b), sql);
      assert.equal(rowsOf(a.table, true), rowsOf(b.table, true), sql);
    }
  } finally {
    await close();
  }
});

test('empty input: a global aggregate has its one row of count 0 and nulls; a grouped one has none', async () => {
  const { here, duck, close } = pairOf(6);
  try {
    const g = await here.execute('SELECT count(*), sum(big), avg(amount), min(neg), sum(amount) FROM aggt WHERE ts < 0');
    assert.ok(g.outerInHdSql);
    assert.is(rowsOf(g.table, false).join(), '0n|null|null|null|null');
    assert.is(fieldsOf(g), fieldsOf(await duck.execute('SELECT count(*), sum(big), avg(amount), min(neg), sum(amount) FROM aggt WHERE ts < 0')));
    const k = await here.execute('SELECT proto, count(*) FROM aggt WHERE ts < 0 GROUP BY proto ORDER BY proto');
    assert.ok(k.outerInHdSql);
    assert.is(k.table.numRows, 0);
    assert.is(fieldsOf(k), fieldsOf(await duck.execute('SELECT proto, count(*) FROM aggt WHERE ts < 0 GROUP BY proto ORDER BY proto')));
  } finally {
    await close();
  }
});

test('HD_SQL_MAX_ROWS cuts an answer evaluated in hd_sql as it cuts DuckDB\'s, with the notice', async () => {
  const fetcher = aggFetcher(aggSchema, aggBatches(4, 4, 100));
  const a = enginePair(fetcher, { maxRows: 2 });
  const b = enginePair(fetcher, { maxRows: 2, aggregateOuterInHdSql: false });
  try {
    const sql = `SELECT port, count(*) AS n FROM aggt WHERE ${W} GROUP BY port ORDER BY port DESC`;
    const x = await a.pushed.execute(sql);
    const y = await b.pushed.execute(sql);
    assert.ok(x.outerInHdSql);
    assert.is(x.table.numRows, 2);
    assert.equal(rowsOf(x.table, false), rowsOf(y.table, false));
    assert.equal(x.notices, y.notices);
    assert.ok(x.notices.some((n) => /HD_SQL_MAX_ROWS/.test(n)));
  } finally {
    await a.local.close();
    await b.local.close();
  }
});

test('the pushdown notice says the outer statement was evaluated in hd_sql; such a statement runs no BEGIN', async () => {
  const { here, close } = pairOf(9);
  const begin = LocalSqlSession.prototype.begin;
  let begins = 0;
  LocalSqlSession.prototype.begin = function (this: LocalSqlSession) {
    begins++;
    return begin.call(this);
  };
  try {
    const sql = `SELECT proto, count(*) AS n, sum(big) AS b FROM aggt WHERE ${W} GROUP BY proto ORDER BY n DESC, proto`;
    await here.execute(sql); // the first run of a plan reads the statement's schema over the empty table
    begins = 0;
    const r = await here.execute(sql);
    assert.ok(r.outerInHdSql);
    assert.ok(r.notices.some((n) => /aggregate pushed to the Storage Nodes: count\(\*\), sum\(big\) grouped by proto; .*outer statement evaluated in hd_sql \(DuckDB not run\)/.test(n)), r.notices.join('; '));
    assert.is(begins, 0, 'no transaction for a statement that loads nothing');
    const d = await here.execute(`SELECT proto, count(*) FROM aggt WHERE ${W} GROUP BY proto HAVING count(*) > 1`);
    assert.not.ok(d.outerInHdSql);
    assert.is(begins, 1, 'the merged groups loaded into DuckDB are loaded in a transaction');
    await here.execute(`SELECT count(DISTINCT port) FROM aggt WHERE ${W}`); // the record path loads rows
    assert.is(begins, 2);
  } finally {
    LocalSqlSession.prototype.begin = begin;
    await close();
  }
});

test.run();
