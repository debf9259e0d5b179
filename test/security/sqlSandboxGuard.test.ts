/**
 * The statement guard (sql/statementGuard.ts) through the planner, on trees DuckDB itself parsed:
 * every way of reaching a file, a URL, an extension or the server's settings from a SELECT — nested
 * in subqueries, CTEs, lateral joins, UNION branches, arguments and lambdas, with quoted, upper-case
 * and schema-qualified names — is refused as unsupported_statement (0A000) before anything runs,
 * with the same message whether or not the path exists; the statements drivers and users need
 * still plan and run. Then the guard alone on malformed trees, and the engine's mapping of the
 * sandbox's own refusals.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LocalSqlError } from '../../local/localSqlError';
import type { BigJsonValue } from '../../sql/bigJson';
import { toSqlError } from '../../sql/sqlEngine';
import { SqlError } from '../../sql/sqlError';
import { guardStatement } from '../../sql/statementGuard';
import { memoryEngine, T0 } from '../sql/support';

const SECRET = `HD-GUARD-SECRET-${process.pid}-${Date.now()}`;
const { engine, local, stats } = memoryEngine(30);
let dir: string;
let key: string;

/** The SqlError `sql` fails with when executed (kind, SQLSTATE, message). */
async function refusal(sql: string): Promise<SqlError> {
  try {
    await engine.execute(sql);
  } catch (err) {
    assert.instance(err, SqlError, `${sql}: ${String(err)}`);
    return err as SqlError;
  }
  return assert.unreachable(`should have been refused: ${sql}`) as never;
}

async function refused(sql: string, message?: RegExp): Promise<SqlError> {
  const err = await refusal(sql);
  assert.is(`${err.kind} ${err.codes.sqlstate} ${err.codes.grpc} ${err.codes.http}`, 'unsupported_statement 0A000 12 400', `${sql}: ${err.message}`);
  assert.not.match(err.message, SECRET, sql);
  if (message) assert.match(err.message, message, sql);
  return err;
}

const guard = suite('statement guard: what reads files, URLs or settings is refused at planning');

guard.before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-guard-'));
  key = path.join(dir, 'ca.key.pem');
  writeFileSync(key, `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n`);
  writeFileSync(path.join(dir, 'rows.csv'), `a\n${SECRET}\n`);
});
guard.after(async () => {
  await local.close();
  rmSync(dir, { recursive: true, force: true });
});

guard('every file and network table function, in any spelling', async () => {
  const fns = ['read_text', 'read_blob', 'read_csv', 'read_csv_auto', 'read_json', 'read_json_auto', 'read_json_objects', 'read_ndjson', 'read_ndjson_auto', 'read_ndjson_objects', 'read_parquet', 'parquet_scan', 'parquet_metadata', 'parquet_schema', 'parquet_file_metadata', 'parquet_kv_metadata', 'glob', 'sniff_csv', 'read_duckdb', 'iceberg_scan', 'delta_scan', 'sqlite_scan', 'postgres_scan', 'read_xlsx', 'st_read'];
  for (const fn of fns) await refused(`SELECT * FROM ${fn}('${key}')`, new RegExp(`table function ${fn}\\(\\) is not allowed`));
  await refused(`SELECT content FROM READ_TEXT('${key}')`, /read_text\(\) is not allowed/);
  await refused(`SELECT content FROM "read_text"('${key}')`);
  await refused(`SELECT content FROM "READ_TEXT"('${key}')`);
  await refused(`SELECT content FROM main.read_text('${key}')`, /main\.read_text\(\)/);
  await refused(`SELECT content FROM "main"."read_text"('${key}')`);
  await refused(`SELECT content FROM system.main.read_text('${key}')`);
  await refused(`SELECT content FROM pg_catalog.read_text('${key}')`);
  await refused(`SELECT * FROM read_text(['${key}', '${dir}/rows.csv'])`);
  await refused(`SELECT * FROM read_csv('${dir}/*.csv', header = true)`);
  await refused("SELECT * FROM read_parquet('https://example.com/x.parquet')");
  await refused("SELECT * FROM read_csv('s3://bucket/x.csv')");
});

guard('nested anywhere: subqueries, CTEs, lateral joins, UNION branches, arguments, lambdas, ORDER BY, HAVING, PIVOT', async () => {
  const rt = `read_text('${key}')`;
  for (const sql of [
    `SELECT (SELECT content FROM ${rt}) AS c`,
    `SELECT * FROM flows WHERE ts >= ${T0} AND proto IN (SELECT content FROM ${rt})`,
    `SELECT * FROM flows WHERE EXISTS (SELECT 1 FROM ${rt})`,
    `WITH k AS (SELECT content FROM ${rt}) SELECT * FROM k`,
    `WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k, ${rt} WHERE n < 2) SELECT * FROM k`,
    `WITH a AS (SELECT 1 AS x), b AS (SELECT * FROM a, LATERAL (SELECT content FROM ${rt})) SELECT * FROM b`,
    `SELECT * FROM flows f, LATERAL (SELECT content FROM ${rt}) r WHERE f.ts >= ${T0}`,
    `SELECT * FROM flows f JOIN ${rt} r ON true WHERE f.ts >= ${T0}`,
    `SELECT * FROM flows f LEFT JOIN LATERAL read_text(f.proto) r ON true WHERE f.ts >= ${T0}`,
    `SELECT 1 AS c UNION ALL SELECT 2 UNION ALL SELECT length(content) FROM ${rt}`,
    `SELECT 1 AS c EXCEPT SELECT length(content) FROM ${rt}`,
    `(SELECT 1 AS c) INTERSECT (SELECT 1 FROM (SELECT * FROM (SELECT * FROM ${rt})))`,
    `FROM (FROM (FROM ${rt}))`,
    `SELECT * FROM range((SELECT count(*) FROM ${rt}))`,
    `SELECT * FROM unnest((SELECT list(content) FROM ${rt}))`,
    `SELECT list_transform([1, 2], x -> (SELECT length(content) FROM ${rt}) + x) AS l`,
    `SELECT CASE WHEN true THEN (SELECT content FROM ${rt}) END AS c`,
    `SELECT proto FROM flows WHERE ts >= ${T0} GROUP BY proto HAVING count(*) > (SELECT length(content) FROM ${rt})`,
    `SELECT proto FROM flows WHERE ts >= ${T0} ORDER BY (SELECT length(content) FROM ${rt})`,
    `SELECT sum(bytes) FILTER (WHERE proto IN (SELECT content FROM ${rt})) FROM flows WHERE ts >= ${T0}`,
    `SELECT row_number() OVER (ORDER BY (SELECT length(content) FROM ${rt})) FROM flows WHERE ts >= ${T0}`,
    `SELECT * FROM (VALUES ((SELECT content FROM ${rt}))) v(c)`,
    `SELECT * FROM (SELECT content FROM ${rt}) PIVOT (sum(1) FOR content IN ('a'))`,
    `SELECT * FROM (SELECT 1) t(a) WHERE a = ANY (SELECT length(content) FROM ${rt})`,
    `SELECT * FROM flows WHERE ts >= ${T0} QUALIFY row_number() OVER () < (SELECT length(content) FROM ${rt})`,
  ]) {
    await refused(sql, /read_text\(\) is not allowed/);
  }
  // The PIVOT statement is not a SELECT to the serializer: refused as such.
  await refused(`PIVOT (SELECT content, 1 AS n FROM ${rt}) ON content USING sum(n)`);
  assert.is(stats.reads, 0, 'no statement got as far as reading a dataset');
});

guard('an existing and a missing path get the same message', async () => {
  for (const fn of ['read_text', 'read_blob', 'read_csv', 'glob']) {
    const there = (await refused(`SELECT * FROM ${fn}('${key}')`)).message;
    const absent = (await refused(`SELECT * FROM ${fn}('${dir}/no-such-file.pem')`)).message;
    assert.is(there, absent, fn);
    assert.not.match(there, dir, 'the path is not repeated back');
  }
  const there = (await refused(`SELECT * FROM '${dir}/rows.csv'`)).message;
  assert.is(there, (await refused(`SELECT * FROM '${dir}/missing.csv'`)).message);
  assert.not.match(there, dir);
});

guard('a file or URL named as a table (replacement scans) is refused, however it gets past the planner', async () => {
  await refused(`SELECT * FROM '${dir}/rows.csv'`, /looks like a file path or URL/);
  await refused(`FROM '${dir}/rows.csv'`);
  await refused('SELECT * FROM "rows.csv"');
  await refused("SELECT * FROM 'https://example.com/x.parquet'");
  await refused(`SELECT * FROM pg_catalog."${dir}/rows.csv"`);
  await refused('SELECT * FROM "pg_x.csv"');
  await refused(`SELECT * FROM main."${dir}/rows.csv"`);
  // A CTE's name is visible only in its own scope: the same name outside it would be a file.
  await refused(`SELECT * FROM (WITH "${dir}/rows.csv" AS (SELECT 1) SELECT 1) a, "${dir}/rows.csv"`);
});

guard('hidden SQL text, raw pointers, logging, pragmas, secrets and settings as table functions', async () => {
  for (const sql of [
    `SELECT * FROM query('SELECT content FROM read_text(''${key}'')')`,
    "SELECT * FROM query_table('flows')",
    `SELECT * FROM query_table('${dir}/rows.csv')`,
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
    'SELECT * FROM arrow_scan(0, 0, 0)',
    "SELECT * FROM enable_logging(storage = 'file')",
    'SELECT * FROM duckdb_logs()',
    'SELECT * FROM duckdb_settings()',
    'SELECT * FROM duckdb_extensions()',
    'SELECT * FROM duckdb_secrets()',
    'SELECT * FROM duckdb_temporary_files()',
    'SELECT * FROM duckdb_databases()',
    'SELECT * FROM duckdb_memory()',
    "SELECT * FROM which_secret('s3://x/y', 's3')",
    'SELECT * FROM pragma_version()',
    'SELECT * FROM pragma_platform()',
    'SELECT * FROM pragma_database_size()',
    "SELECT * FROM pragma_table_info('flows')",
    'SELECT * FROM checkpoint()',
    "SELECT * FROM histogram('flows', proto)",
    "SELECT * FROM sql_auto_complete('SEL')",
  ]) {
    await refused(sql, /is not allowed/);
  }
});

guard('functions and views that reveal the server: current_setting, getenv, pg_settings', async () => {
  for (const sql of [
    "SELECT current_setting('temp_directory')",
    "SELECT pg_catalog.current_setting('extension_directory')",
    "SELECT CURRENT_SETTING('home_directory')",
    "SELECT getenv('HOME')",
    "SELECT upper(getenv('PATH'))",
    `SELECT * FROM flows WHERE ts >= ${T0} AND proto = current_setting('allowed_directories')`,
    "SELECT json_execute_serialized_sql('x')",
    "SELECT set_config('a', 'b', false)",
  ]) {
    await refused(sql, /is not allowed/);
  }
  for (const sql of ['SELECT * FROM pg_settings', 'SELECT name, setting FROM pg_catalog.pg_settings', 'SELECT * FROM system.pg_catalog.pg_settings', 'SELECT * FROM "PG_SETTINGS"', 'SELECT * FROM duckdb_settings']) {
    await refused(sql, /is not served/);
  }
});

guard('every statement but SELECT: COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL, EXPORT, CREATE SECRET...', async () => {
  for (const sql of [
    `COPY (SELECT 1) TO '${dir}/out.csv'`,
    `COPY flows TO '${dir}/out.parquet' (FORMAT parquet)`,
    `COPY flows FROM '${dir}/rows.csv'`,
    `ATTACH '${dir}/x.db' AS x`,
    `ATTACH 'postgres:dbname=x' AS p (TYPE postgres)`,
    'DETACH x',
    'INSTALL httpfs',
    "INSTALL httpfs FROM 'http://example.com'",
    'FORCE INSTALL httpfs',
    'LOAD httpfs',
    `LOAD '${dir}/evil.duckdb_extension'`,
    'SET enable_external_access = true',
    "SET memory_limit = '1GB'",
    "SET GLOBAL temp_directory = '/'",
    "SET VARIABLE v = 'x'",
    'RESET memory_limit',
    "PRAGMA memory_limit = '1GB'",
    'PRAGMA database_list',
    'CALL pragma_version()',
    "CALL enable_logging()",
    `EXPORT DATABASE '${dir}/export'`,
    `IMPORT DATABASE '${dir}/export'`,
    "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    'DROP SECRET s',
    'CHECKPOINT',
    'USE memory',
    'EXPLAIN SELECT 1',
    'EXPLAIN ANALYZE SELECT 1',
    "CREATE MACRO m() AS TABLE SELECT * FROM read_text('/etc/hostname')",
    'CREATE TABLE t AS SELECT 1',
    'VACUUM',
    'SELECT 1; SET memory_limit = \'1GB\'',
    `SELECT 1; SELECT content FROM read_text('${key}')`,
    'DESCRIBE SELECT 1',
    `SUMMARIZE SELECT content FROM read_text('${key}')`,
  ]) {
    await refused(sql);
  }
  assert.not.ok((await import('node:fs')).existsSync(path.join(dir, 'out.csv')));
});

guard('what users and drivers need still runs: range, generate_series, unnest, json_each, catalogs, strings and names that only mention a function', async () => {
  const rows = async (sql: string): Promise<unknown[]> => (await engine.execute(sql)).table.toArray().map((r) => ({ ...r }));
  assert.equal(await rows('SELECT count(*) AS n FROM range(5)'), [{ n: 5n }]);
  assert.equal(await rows('SELECT count(*) AS n FROM generate_series(1, 4)'), [{ n: 4n }]);
  assert.equal(await rows('SELECT * FROM unnest([1, 2]) u(x) ORDER BY x'), [{ x: 1 }, { x: 2 }]);
  assert.equal(await rows(`SELECT key FROM json_each('{"a": 1}')`), [{ key: 'a' }]);
  assert.equal(await rows("SELECT 'read_text(''/etc/passwd'')' AS read_text /* FROM read_text('/x') */"), [{ read_text: "read_text('/etc/passwd')" }]);
  assert.equal(await rows(`SELECT count(*) AS n FROM flows f WHERE f.ts >= ${T0} AND f.proto <> 'read_text'`), [{ n: 30n }]);
  assert.equal(await rows('WITH read_text AS (SELECT 1 AS x) SELECT x FROM read_text'), [{ x: 1 }]);
  assert.ok((await rows('SELECT nspname FROM pg_catalog.pg_namespace')).length > 0);
  assert.ok((await rows('SELECT count(*) AS n FROM pg_type')).length === 1);
  assert.equal(await rows("SELECT table_name FROM information_schema.tables WHERE table_name = 'flows'"), [{ table_name: 'flows' }]);
  assert.equal(await rows('SHOW TABLES'), [{ name: 'flows' }]);
  assert.equal(await rows('SELECT json_deserialize_sql(json_serialize_sql(\'SELECT 1\')) AS s'), [{ s: 'SELECT 1' }]);
  assert.equal(await rows("SELECT fen_turn('rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1') AS t"), [{ t: 'b' }]);
  assert.ok((await rows("SELECT function_name FROM duckdb_functions() WHERE function_name = 'fen_turn'")).length > 0);
});

guard('malformed statements: syntax errors stay 42601 and run nothing', async () => {
  for (const sql of [`SELECT * FROM read_text('${key}'`, `SELECT * FROM read_text(${key})`, "SELECT '", 'SELECT * FROM read_text(', `SELECT content FROM read_text('${key}') WHERE`, `SELECT content FROM read_text('${key}')) x`]) {
    const err = await refusal(sql);
    assert.ok(err.kind === 'invalid_statement' || err.kind === 'unsupported_statement', `${sql}: ${err.kind} ${err.message}`);
    assert.not.match(err.message, SECRET);
  }
  assert.is((await refusal('')).kind, 'invalid_statement');
  // DuckDB stops reading at a NUL byte: the parse (a quoted copy of the text) fails, so nothing after it ever runs.
  for (const sql of [`SELECT content FROM read_text('${key}')\u0000 trailing`, `SELECT 1\u0000; SELECT content FROM read_text('${key}')`]) {
    const err = await refusal(sql);
    assert.is(err.kind, 'invalid_statement', err.message);
    assert.not.match(err.message, SECRET);
  }
});

const unit = suite('statement guard alone: malformed and hand-made trees');
const none = (): boolean => false;
const kindOf = (tree: BigJsonValue): string => {
  try {
    guardStatement(tree, none);
    return 'allowed';
  } catch (err) {
    return err instanceof SqlError ? err.kind : `threw ${String(err)}`;
  }
};
const fn = (name: string, schema = ''): Record<string, BigJsonValue> => ({ class: 'FUNCTION', type: 'FUNCTION', function_name: name, schema, children: [] });

unit('table functions: allowed by name only; a reference without a plain call is refused', () => {
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: fn('range') }), 'allowed');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: fn('RANGE', 'main') }), 'allowed');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: fn('read_text') }), 'unsupported_statement');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: fn('Read_Text', 'main') }), 'unsupported_statement');
  assert.is(kindOf({ type: 'TABLE_FUNCTION' }), 'unsupported_statement');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: null }), 'unsupported_statement');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: { class: 'CONSTANT', value: 1 } }), 'unsupported_statement');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: { class: 'FUNCTION', function_name: 7 } }), 'unsupported_statement');
  assert.is(kindOf({ type: 'TABLE_FUNCTION', function: fn('some_future_reader') }), 'unsupported_statement');
});

unit('denied functions and relations anywhere in the tree, arrays and odd values included', () => {
  assert.is(kindOf([[1, 'x', null, true, [fn('current_setting')]]]), 'unsupported_statement');
  assert.is(kindOf({ a: { b: { c: [{ d: fn('GETENV') }] } } }), 'unsupported_statement');
  assert.is(kindOf({ type: 'BASE_TABLE', table_name: 'PG_Settings', schema_name: 'pg_catalog' }), 'unsupported_statement');
  assert.is(kindOf({ type: 'BASE_TABLE', table_name: '/etc/passwd.csv' }), 'unsupported_statement');
  assert.is(kindOf({ type: 'BASE_TABLE', table_name: 'flows' }), 'allowed');
  assert.is(kindOf({ type: 'BASE_TABLE', table_name: 7 }), 'allowed');
  assert.is(kindOf(null), 'allowed');
  assert.is(kindOf('read_text'), 'allowed');
  assert.is(kindOf({ function_name: 'read_text' }), 'allowed', 'a name that is not a function call is only data');
  // A dataset whose name looks like a file is still a dataset.
  assert.not.throws(() => guardStatement({ type: 'BASE_TABLE', table_name: 'flows.v2' }, (n) => n === 'flows.v2'));
});

unit('a very deep tree is judged without overflowing the stack', () => {
  let deep: BigJsonValue = { type: 'TABLE_FUNCTION', function: fn('read_text') };
  for (let i = 0; i < 200_000; i++) deep = { child: deep };
  assert.is(kindOf(deep), 'unsupported_statement');
});

unit('the sandbox\'s own refusals map to unsupported_statement without DuckDB\'s path', () => {
  const e = toSqlError(new LocalSqlError('ERR_SQL', 'Permission Error: Cannot access file "/srv/hd/dms/ca/ca.key.pem" - file system operations are disabled by configuration'));
  assert.is(e.kind, 'unsupported_statement');
  assert.not.match(e.message, '/srv/hd');
  assert.is(toSqlError(new LocalSqlError('ERR_SQL', 'Invalid Input Error: Cannot change configuration option "memory_limit" - the configuration has been locked')).kind, 'unsupported_statement');
  assert.is(toSqlError(new LocalSqlError('ERR_SQL', 'Binder Error: column x not found')).kind, 'query_failed');
});

guard.run();
unit.run();
