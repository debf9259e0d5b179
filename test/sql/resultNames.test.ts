/**
 * Result column names as PostgreSQL derives them (sql/resultNames.ts): the rule over DuckDB's own
 * parse trees (each statement also run, so the names are placed over DuckDB's real result), then
 * through the engine (execute and describe agree), every door (PostgreSQL wire simple and extended,
 * HTTP JSON and Arrow, Flight SQL GetFlightInfo and DoGet), and with the aggregate pushdown on and off.
 */
import * as arrow from 'apache-arrow';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { LocalSql } from '../../local/localSql';
import type { LocalSqlSession } from '../../local/localSqlSession';
import { FlightSqlServer } from '../../sql/flight/flightServer';
import { httpDoor } from '../../sql/httpDoor';
import { PgServer } from '../../sql/pgwire/pgServer';
import { pgNameOf, ResultNaming, resultNamingOf, withNames } from '../../sql/resultNames';
import { A0, aggBatches, aggFetcher, aggSchema, enginePair } from './aggregateSupport';
import { any, fetchCommand } from './flightClient';
import { memoryEngine, T0 } from './support';

const rule = suite('result names: the rule');
const local = new LocalSql({ threads: 1 });
let session: LocalSqlSession;
rule.before(async () => {
  session = await local.openSession();
  await session.query('CREATE TABLE t (x INTEGER, y VARCHAR, ts TIMESTAMP, "Mixed" INTEGER, arr INTEGER[])');
});
rule.after(() => local.close());

/** PostgreSQL's names for `sql`: DuckDB parses it and runs it over the empty table `t`. */
async function pgNames(sql: string): Promise<string[]> {
  const tree = String((await session.query(`SELECT json_serialize_sql('${sql.replace(/'/g, "''")}')::VARCHAR AS t`)).getChildAt(0)?.get(0));
  const duck = (await session.query(sql)).schema.fields.map((f) => f.name);
  return resultNamingOf(tree, sql).namesFor(duck);
}

const CASES: [string, string[]][] = [
  ['SELECT count(*), count(x), sum(x), max(x), min(t.x), avg(x) FROM t', ['count', 'count', 'sum', 'max', 'min', 'avg']],
  ['SELECT COUNT(*) AS N, count(*) AS "N2", x AS "Mixed", "Mixed", MIXED FROM t GROUP BY x, "Mixed"', ['n', 'N2', 'Mixed', 'Mixed', 'mixed']],
  ['SELECT x + 1, 1, \'a\', NULL, x IS NULL, -x, x > 1, y LIKE \'a%\', y ~ \'a\', y SIMILAR TO \'a\', y || \'b\' FROM t', Array(11).fill('?column?')],
  ['SELECT x, t.y, t.arr[1], arr[1:2] FROM t', ['x', 'y', 'arr', 'arr']],
  ["SELECT 1::int, 1::bigint, 'a'::text, 2.5::numeric(5,2), true, x::int, sum(x)::int8, 1::int::text, DATE '2024-01-01', '{1}'::int[], [1]::int[], 1.5::double, TRY_CAST(y AS INT) FROM t GROUP BY x, y", ['int4', 'int8', 'text', 'numeric', 'bool', 'x', 'sum', 'text', 'date', 'int4', 'array', 'float8', 'y']],
  ["SELECT upper(y), coalesce(y, 'a'), nullif(x, 1), greatest(x, 1), extract(year FROM ts), date_part('year', ts), trim(y), substring(y, 1, 2), ARRAY[1], [1, 2], ROW(1, 2), now() FROM t", ['upper', 'coalesce', 'nullif', 'greatest', 'extract', 'date_part', 'btrim', 'substring', 'array', 'array', 'row', 'now']],
  ["SELECT CASE WHEN x > 1 THEN 'a' ELSE y END, CASE WHEN x > 1 THEN 1 END, CASE WHEN x > 1 THEN 1 ELSE 2::int END FROM t", ['y', 'case', 'case']],
  ['SELECT (SELECT max(x) FROM t), EXISTS (SELECT 1), x IN (SELECT x FROM t), row_number() OVER (), count(*) OVER (), sum(x) OVER (ORDER BY x) FROM t', ['max', 'exists', '?column?', 'row_number', 'count', 'sum']],
  ['SELECT count(*), count(*), x, x FROM t GROUP BY x', ['count', 'count', 'x', 'x']],
  ['SELECT * FROM t', ['x', 'y', 'ts', 'Mixed', 'arr']],
  ['SELECT *, count(*) OVER () FROM t', ['x', 'y', 'ts', 'Mixed', 'arr', 'count']],
  ['SELECT * EXCLUDE (ts, arr), 1 + 1 FROM t', ['x', 'y', 'Mixed', '?column?']],
  ['SELECT * FROM (SELECT y, count(*) FROM t GROUP BY y) s', ['y', 'count']],
  ['SELECT s.*, t.x FROM t, (SELECT sum(x) FROM t) s', ['sum', 'x']],
  ['SELECT * FROM (SELECT 1, 2) AS v(a)', ['a', '?column?']],
  ['WITH c AS (SELECT count(*) FROM t), d(n) AS (SELECT max(x) FROM t) SELECT * FROM c, d', ['count', 'n']],
  ['SELECT count(*) FROM t UNION ALL SELECT sum(x) FROM t', ['count']],
  ['VALUES (1, 2)', ['column1', 'column2']],
  ['SELECT * FROM (VALUES (1, 2)) v(a)', ['a', 'column2']],
  ['SELECT a.*, b.*, 1 FROM t a, t b', ['x', 'y', 'ts', 'Mixed', 'arr', 'x', 'y', 'ts', 'Mixed', 'arr', '?column?']],
  ['SELECT COLUMNS(\'^[xy]$\'), count(*) OVER () FROM t', ['x', 'y', 'count']],
  ['SELECT #1, max(x) OVER () FROM t', ['x', 'max']],
  ["SELECT 'é' AS \"Ünï\", upper('é'), sum(x) FROM t", ['Ünï', 'upper', 'sum']],
  ['SELECT unnest([1, 2])', ['unnest']],
];

rule('each select item is named as PostgreSQL names it (aliases, columns, functions, casts, CASE, subqueries, stars, CTEs, UNION, VALUES)', async () => {
  for (const [sql, want] of CASES) assert.equal(await pgNames(sql), want, sql);
});

rule('placing names: from both ends around stars of unknown width; a width the select list cannot have keeps DuckDB\'s names', () => {
  const n = new ResultNaming([{ name: 'a' }, { keep: 'many' }, { name: 'b' }, { keep: 'many' }, { name: 'c' }]);
  assert.equal(n.namesFor(['1', '2', '3', '4', '5', '6']), ['a', '2', '3', '4', '5', 'c']);
  assert.equal(n.namesFor(['1']), ['1']);
  assert.equal(new ResultNaming([{ name: 'a' }, { keep: 'one' }]).namesFor(['x', 'y']), ['a', 'y']);
  assert.equal(new ResultNaming([{ name: 'a' }, { name: 'b' }]).namesFor(['x']), ['x']);
  assert.equal(ResultNaming.KEEP.namesFor(['count_star()']), ['count_star()']);
});

rule('trees it cannot read keep every name: an error tree, several statements, not JSON', () => {
  assert.equal(resultNamingOf('{"error":true,"error_message":"x"}', 'SELEC 1'), ResultNaming.KEEP);
  assert.equal(resultNamingOf('{"error":false,"statements":[{"node":{}},{"node":{}}]}', 'SELECT 1; SELECT 2'), ResultNaming.KEEP);
  assert.equal(resultNamingOf('not json', 'SELECT 1'), ResultNaming.KEEP);
});

rule('renaming keeps the data, types and metadata (enum dictionaries too); a repeated name is suffixed in Arrow and kept for the wire', () => {
  const t = new arrow.Table({ a: arrow.vectorFromArray(['x', 'y', 'x'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())), b: arrow.vectorFromArray([1, 2, 3], new arrow.Int32()), c: arrow.vectorFromArray(['p', 'q', 'r'], new arrow.Utf8()) });
  const r = withNames(t, ['count', 'count', 'count_1']);
  assert.equal(r.schema.fields.map((f) => `${f.name}:${String(f.type)}`), ['count:Dictionary<Int32, Utf8>', 'count_2:Int32', 'count_1:Utf8']);
  assert.equal(r.schema.fields.map(pgNameOf), ['count', 'count', 'count_1']);
  assert.equal([r.getChildAt(0)?.get(2), r.getChildAt(1)?.get(2), r.getChildAt(2)?.get(2)], ['x', 3, 'r']);
  const back = arrow.tableFromIPC(arrow.tableToIPC(r.slice(1), 'stream'));
  assert.equal(back.schema.fields.map(pgNameOf), ['count', 'count', 'count_1']);
  assert.equal(back.toArray().map((x) => x.count_2), [2, 3]);
  assert.is(withNames(t, ['a', 'b', 'c']), t);
  assert.equal(withNames(r, ['a', 'b', 'c']).schema.fields.map((f) => `${f.name}:${pgNameOf(f)}`), ['a:a', 'b:b', 'c:c']);
});

const doors = suite('result names: engine and every door');
const { engine, local: doorLocal } = memoryEngine(30);
const pgServer = new PgServer(engine, { host: '127.0.0.1', port: 0 });
const http = httpDoor(engine);
const flight = new FlightSqlServer(engine, { host: '127.0.0.1', port: 0, log: () => undefined });
let pgPort = 0;
let httpBase = '';
let flightAddress = '';
doors.before(async () => {
  pgPort = (await pgServer.listen()).port;
  httpBase = await http.listen({ host: '127.0.0.1', port: 0 });
  flightAddress = `127.0.0.1:${(await flight.listen()).port}`;
});
doors.after(async () => {
  await pgServer.close();
  await http.close();
  await flight.close();
  await doorLocal.close();
});

const W = `ts >= ${T0} AND ts < ${T0 + 30}`;
const STATEMENT = `SELECT count(*), sum(bytes), max(ts), avg(bytes), 1 + 1, 2::int, count(*) AS n, min(f.proto) FROM flows f WHERE ${W}`;
const NAMES = ['count', 'sum', 'max', 'avg', '?column?', 'int4', 'n', 'min'];

doors('execute and describe give the same PostgreSQL names', async () => {
  assert.equal((await engine.execute(STATEMENT)).table.schema.fields.map((f) => f.name), NAMES);
  assert.equal((await engine.describe(STATEMENT, 0)).fields.map((f) => f.name), NAMES);
  assert.equal((await engine.describe(`SELECT proto, count(*) FROM flows WHERE ts >= $1 GROUP BY proto`, 1)).fields.map((f) => f.name), ['proto', 'count']);
});

doors('PostgreSQL wire: simple and extended protocol (Describe), duplicate names included', async () => {
  const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'tester', database: 'hd' });
  await c.connect();
  try {
    const simple = await c.query({ text: STATEMENT, rowMode: 'array' });
    assert.equal(simple.fields.map((f) => f.name), NAMES);
    assert.equal(simple.rows[0]?.slice(0, 2), ['30', '4350']);
    const extended = await c.query({ name: 'names', text: `SELECT count(*), count(*), proto FROM flows WHERE ts >= $1 AND ts < $2 GROUP BY proto ORDER BY proto`, values: [T0, T0 + 30], rowMode: 'array' });
    assert.equal(extended.fields.map((f) => f.name), ['count', 'count', 'proto']);
    assert.equal(extended.rows[0], ['10', '10', 'icmp']);
  } finally {
    await c.end();
  }
});

doors('repeated names of different types: exact on the wire, suffixed in Arrow results', async () => {
  const sql = `SELECT 1 + 1, 'a' || 'b', count(*), count(*)::VARCHAR FROM flows WHERE ${W}`;
  const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'tester', database: 'hd' });
  await c.connect();
  try {
    const r = await c.query({ text: sql, rowMode: 'array' });
    assert.equal(r.fields.map((f) => `${f.name}:${f.dataTypeID}`), ['?column?:23', '?column?:25', 'count:20', 'count:25']);
    assert.equal(r.rows, [[2, 'ab', '30', '30']]);
  } finally {
    await c.end();
  }
  assert.equal((await engine.execute(sql)).table.schema.fields.map((f) => f.name), ['?column?', '?column?_1', 'count', 'count_1']);
});

doors('HTTP door: JSON columns and Arrow IPC fields', async () => {
  const post = (accept?: string): Promise<Response> => fetch(`${httpBase}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...(accept ? { accept } : {}) }, body: JSON.stringify({ sql: STATEMENT }) });
  const j = (await (await post()).json()) as { columns: { name: string }[] };
  assert.equal(j.columns.map((x) => x.name), NAMES);
  const t = arrow.tableFromIPC(new Uint8Array(await (await post('application/vnd.apache.arrow.stream')).arrayBuffer()));
  assert.equal(t.schema.fields.map((f) => f.name), NAMES);
});

doors('Flight SQL: GetFlightInfo\'s schema and DoGet\'s batches', async () => {
  const r = await fetchCommand(flightAddress, any('CommandStatementQuery', { query: STATEMENT }));
  assert.equal(r.err, undefined);
  assert.equal(r.schema?.fields.map((f) => f.name), NAMES);
  assert.equal(r.table?.schema.fields.map((f) => f.name), NAMES);
});

const pushdown = suite('result names: the same with the aggregate pushdown on and off');

pushdown('statements that split name their columns as the record path does', async () => {
  const { pushed, records, local: aggLocal } = enginePair(aggFetcher(aggSchema, aggBatches(3, 4, 50)));
  const w = `ts >= ${A0} AND ts < ${A0 + 240}`;
  const cases: [string, string[]][] = [
    [`SELECT count(*), sum(port), min(ts), max(i64), avg(small), count(*) AS n FROM aggt WHERE ${w}`, ['count', 'sum', 'min', 'max', 'avg', 'n']],
    [`SELECT proto, count(*), sum(port) FROM aggt WHERE ${w} GROUP BY proto ORDER BY proto`, ['proto', 'count', 'sum']],
    [`SELECT ts - ts % 120, count(*) FROM aggt WHERE ${w} GROUP BY 1 ORDER BY 1`, ['?column?', 'count']],
  ];
  try {
    for (const [sql, want] of cases) {
      const a = await pushed.execute(sql);
      const b = await records.execute(sql);
      assert.ok(a.aggregatePushed, `pushed: ${sql}`);
      assert.not.ok(b.aggregatePushed, `record path: ${sql}`);
      assert.equal(a.table.schema.fields.map((f) => f.name), want, sql);
      assert.equal(b.table.schema.fields.map((f) => f.name), want, sql);
      const rows = (t: arrow.Table): string[] => t.toArray().map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
      assert.equal(rows(a.table), rows(b.table), sql);
    }
  } finally {
    await aggLocal.close();
  }
});

rule.run();
doors.run();
pushdown.run();
