/**
 * The session layer of the PostgreSQL wire door as units — the parameters (SessionSettings, what a
 * SET may change), SHOW and version(), the SET / RESET syntax, the session statements and the
 * transaction block, the statement splitter — and over the wire with node-postgres.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { PgSessionError } from '../../sql/pgwire/pgErrors';
import { checkedValue, initialParameters, REPORTED_PARAMETERS, startupValues } from '../../sql/pgwire/sessionParameters';
import { sessionAnswer, SessionSettings } from '../../sql/pgwire/sessionQueries';
import { runSessionStatement, SESSION_STATEMENT, type SessionContext } from '../../sql/pgwire/sessionStatements';
import { parseSet } from '../../sql/pgwire/setStatement';
import { splitStatements } from '../../sql/pgwire/statementSplit';
import { TransactionBlock } from '../../sql/pgwire/transactionBlock';
import { serveDoor } from './pgRawSession';
import { T0 } from './support';

const rows = (t: { toArray(): unknown[] } | undefined): unknown[] => (t ? t.toArray().map((r) => ({ ...(r as object) })) : []);
const sqlstate = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return e instanceof PgSessionError ? e.sqlstate : `not a PgSessionError: ${String(e)}`;
  }
  return undefined;
};
function context(user = 'tester'): SessionContext & { settings: SessionSettings; tx: TransactionBlock } {
  const settings = new SessionSettings(initialParameters(user));
  return { settings, tx: new TransactionBlock(settings), user, hasStatement: (n) => n === 'known' };
}

const unit = suite('pgwire session layer');

unit('SHOW: known parameters by their canonical names, any case; SHOW ALL; unknown → 42704; SHOW TABLES left to the engine; version()', () => {
  const s = new SessionSettings(initialParameters('u'));
  assert.equal(rows(sessionAnswer('show datestyle;', s)), [{ DateStyle: 'ISO, MDY' }]);
  assert.equal(rows(sessionAnswer('SHOW server_version_num', s)), [{ server_version_num: '160000' }]);
  assert.equal(rows(sessionAnswer('SHOW TRANSACTION  ISOLATION LEVEL', s)), [{ transaction_isolation: 'read committed' }]);
  assert.equal(rows(sessionAnswer('SHOW TIME ZONE', s)), [{ TimeZone: 'UTC' }]);
  assert.equal(rows(sessionAnswer('SHOW session authorization', s)), [{ session_authorization: 'u' }]);
  for (const name of ['standard_conforming_strings', 'integer_datetimes', 'client_encoding', 'max_identifier_length', 'is_superuser', 'IntervalStyle', 'transaction_read_only', 'search_path']) assert.is(rows(sessionAnswer(`SHOW ${name}`, s)).length, 1, name);
  const all = rows(sessionAnswer('SHOW ALL', s)) as { name: string }[];
  assert.ok(all.some((r) => r.name === 'DateStyle') && all.length > 40);
  assert.is(sessionAnswer('SHOW TABLES', s), undefined);
  assert.is(sqlstate(() => sessionAnswer('SHOW no_such_setting', s)), '42704');
  assert.is(sessionAnswer('SELECT 1', s), undefined);
  assert.match(String(rows(sessionAnswer(' select pg_catalog.version ( ) ; ', s))[0]?.['version' as never]), /^PostgreSQL 16\.0 \(hd_sql\)/);
});

unit('SessionSettings: SET, SET LOCAL until the block ends, RESET to the starting value, snapshots', () => {
  const s = new SessionSettings({ application_name: 'start', DateStyle: 'ISO, MDY' });
  s.set('application_name', 'a');
  const snap = s.snapshot();
  s.set('APPLICATION_NAME', 'local', true);
  assert.is(s.get('application_name'), 'local');
  s.endTransaction();
  assert.is(s.get('application_name'), 'a');
  s.set('datestyle', 'ISO, DMY');
  s.restore(snap);
  assert.is(s.get('DateStyle'), 'ISO, MDY');
  s.reset('application_name');
  assert.is(s.get('application_name'), 'start');
  s.set('x.y', '1');
  s.resetAll();
  assert.is(s.get('x.y'), undefined);
});

unit('parameters: values normalised, what hd_sql cannot honour 22023, read-only 55P02, unknown 42704; startup values applied leniently', () => {
  assert.equal(checkedValue('datestyle', 'iso, dmy', undefined), { key: 'datestyle', value: 'ISO, DMY' });
  assert.equal(checkedValue('TimeZone', 'Etc/UTC', undefined), { key: 'timezone', value: 'UTC' });
  assert.equal(checkedValue('client_encoding', 'unicode', undefined), { key: 'client_encoding', value: 'UTF8' });
  assert.equal(checkedValue('transaction_read_only', 'false', undefined), { key: 'transaction_read_only', value: 'off' });
  assert.equal(checkedValue('application_name', null, 'psql'), { key: 'application_name', value: 'psql' });
  assert.equal(checkedValue('myapp.tenant', '7', undefined), { key: 'myapp.tenant', value: '7' });
  assert.is(sqlstate(() => checkedValue('TimeZone', 'Europe/Paris', undefined)), '22023');
  assert.is(sqlstate(() => checkedValue('IntervalStyle', 'iso_8601', undefined)), '22023');
  assert.is(sqlstate(() => checkedValue('standard_conforming_strings', 'off', undefined)), '22023');
  assert.is(sqlstate(() => checkedValue('statement_timeout', 'soon', undefined)), '22023');
  assert.is(sqlstate(() => checkedValue('enable_seqscan', 'maybe', undefined)), '22023');
  assert.is(sqlstate(() => checkedValue('integer_datetimes', 'off', undefined)), '55P02');
  assert.is(sqlstate(() => checkedValue('memory_limit', '1GB', undefined)), '42704');
  assert.equal(startupValues({ user: 'u', database: 'd', TimeZone: 'America/New_York', extra_float_digits: '3', nonsense: 'x', options: '-c DateStyle=ISO,\\ DMY --search_path=a' }), [
    ['extra_float_digits', '3'],
    ['datestyle', 'ISO, DMY'],
    ['search_path', 'a'],
  ]);
  assert.ok(['server_version', 'DateStyle', 'TimeZone', 'IntervalStyle', 'application_name', 'is_superuser', 'session_authorization'].every((n) => REPORTED_PARAMETERS.includes(n)));
});

unit('SET / RESET syntax: every form read into parameters; bad syntax 42601', () => {
  assert.equal(parseSet("SET application_name = 'it''s me'"), { kind: 'set', local: false, assignments: [{ name: 'application_name', value: "it's me" }] });
  assert.equal(parseSet('set session extra_float_digits to 3;'), { kind: 'set', local: false, assignments: [{ name: 'extra_float_digits', value: '3' }] });
  assert.equal(parseSet('SET LOCAL search_path TO Public, "$user"'), { kind: 'set', local: true, assignments: [{ name: 'search_path', value: 'public, "$user"' }] });
  assert.equal(parseSet('SET DateStyle TO DEFAULT'), { kind: 'set', local: false, assignments: [{ name: 'DateStyle', value: null }] });
  assert.equal(parseSet("SET TIME ZONE 'UTC'"), { kind: 'set', local: false, assignments: [{ name: 'TimeZone', value: 'UTC' }] });
  assert.equal(parseSet('SET TIME ZONE LOCAL'), { kind: 'set', local: false, assignments: [{ name: 'TimeZone', value: null }] });
  assert.equal(parseSet("SET NAMES 'UTF8'"), { kind: 'set', local: false, assignments: [{ name: 'client_encoding', value: 'UTF8' }] });
  assert.equal(parseSet("SET SCHEMA 'public'"), { kind: 'set', local: false, assignments: [{ name: 'search_path', value: 'public' }] });
  assert.equal(parseSet('SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE'), {
    kind: 'set', local: false, assignments: [{ name: 'default_transaction_isolation', value: 'serializable' }, { name: 'default_transaction_read_only', value: 'off' }],
  });
  assert.equal(parseSet('SET TRANSACTION READ ONLY NOT DEFERRABLE'), { kind: 'set', local: true, assignments: [{ name: 'transaction_read_only', value: 'on' }, { name: 'transaction_deferrable', value: 'off' }] });
  assert.equal(parseSet("SET statement_timeout = E'5\\s'"), { kind: 'set', local: false, assignments: [{ name: 'statement_timeout', value: '5s' }] });
  assert.equal(parseSet('SET CONSTRAINTS ALL DEFERRED'), { kind: 'constraints' });
  assert.equal(parseSet('RESET ALL'), { kind: 'reset', name: null });
  assert.equal(parseSet('reset time zone'), { kind: 'reset', name: 'TimeZone' });
  for (const bad of ['SET', 'SET x', "SET x = 'open", 'SET x = a b', 'SET TRANSACTION ISOLATION LEVEL SOMETIMES', 'RESET a b']) assert.is(sqlstate(() => parseSet(bad)), '42601', bad);
});

unit('session statements and the transaction block: tags, warnings, states, refusals', () => {
  const c = context();
  const run = (sql: string): string => {
    const o = runSessionStatement(sql, c);
    return [o.tag, ...o.notices.map((n) => `${n.severity} ${n.code}`), c.tx.status].join(' / ');
  };
  assert.is(run('BEGIN'), 'BEGIN / T');
  assert.is(run('begin work'), 'BEGIN / WARNING 25001 / T');
  assert.is(run("SET application_name = 'in block'"), 'SET / T');
  c.tx.fail();
  assert.is(sqlstate(() => run('SAVEPOINT a')), '25P02');
  assert.is(run('COMMIT'), 'ROLLBACK / I');
  assert.is(c.settings.get('application_name'), '', 'the failed block\'s SET was rolled back');
  assert.is(run('COMMIT'), 'COMMIT / WARNING 25P01 / I');
  assert.is(run('ROLLBACK WORK'), 'ROLLBACK / WARNING 25P01 / I');
  assert.is(run('START TRANSACTION READ ONLY'), 'START TRANSACTION / T');
  assert.is(run('COMMIT AND CHAIN'), 'COMMIT / T');
  assert.is(run('SET LOCAL extra_float_digits = 0'), 'SET / T');
  assert.is(run('END TRANSACTION'), 'COMMIT / I');
  assert.is(c.settings.get('extra_float_digits'), '1', 'SET LOCAL lapsed');
  assert.is(sqlstate(() => run('ROLLBACK AND CHAIN')), '25P01');
  assert.is(sqlstate(() => run('ROLLBACK TO SAVEPOINT a')), '25P01');
  assert.is(run('DISCARD PLANS'), 'DISCARD PLANS / I');
  assert.is(run('DISCARD ALL'), 'DISCARD ALL / I');
  assert.is(run('DEALLOCATE PREPARE known'), 'DEALLOCATE / I');
  assert.is(run('DEALLOCATE ALL'), 'DEALLOCATE ALL / I');
  assert.is(run('CLOSE ALL'), 'CLOSE CURSOR ALL / I');
  assert.is(run('UNLISTEN *'), 'UNLISTEN / I');
  assert.is(run('SET ROLE tester'), 'SET / I');
  assert.is(sqlstate(() => run('SET ROLE admin')), '42501');
  assert.is(sqlstate(() => run('DISCARD EVERYTHING')), '42601');
  assert.ok(SESSION_STATEMENT.test('  commit') && SESSION_STATEMENT.test('ABORT') && SESSION_STATEMENT.test('release x'));
  assert.not.ok(SESSION_STATEMENT.test("COMMIT PREPARED 'x'") || SESSION_STATEMENT.test('SELECT 1') || SESSION_STATEMENT.test('SETTINGS') || SESSION_STATEMENT.test('SHOW x'));
});

unit('statements split at top-level semicolons only', () => {
  assert.equal(splitStatements("BEGIN; SELECT ';' AS a, \"x;y\", E'\\';', $$;$$, $t$ ; $t$ -- ;\n; /* ; /* ; */ */ COMMIT;"), ['BEGIN', "SELECT ';' AS a, \"x;y\", E'\\';', $$;$$, $t$ ; $t$ -- ;", '/* ; /* ; */ */ COMMIT']);
  assert.equal(splitStatements(' ; -- only a comment\n;'), []);
  assert.equal(splitStatements('SELECT $1::INT'), ['SELECT $1::INT']);
  assert.equal(splitStatements("SELECT 'it''s; fine'"), ["SELECT 'it''s; fine'"]);
});

const wire = suite('pgwire session over the wire (node-postgres)');
const server = serveDoor(wire, 10);

wire('the startup application_name is reported and SHOWn; SET changes it; errors carry PostgreSQL\'s SQLSTATEs; a transaction block with node-postgres', async () => {
  const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'tester', database: 'hd', application_name: 'from-startup' });
  await c.connect();
  const code = (p: Promise<unknown>): Promise<string | undefined> => p.then(() => undefined, (e: { code?: string }) => e.code);
  try {
    assert.equal((await c.query('SHOW application_name')).rows, [{ application_name: 'from-startup' }]);
    await c.query("SET application_name = 'later'");
    assert.equal((await c.query({ text: 'SHOW application_name', values: [] })).rows, [{ application_name: 'later' }]);
    assert.equal((await c.query('SHOW transaction_read_only')).rows, [{ transaction_read_only: 'on' }]);
    assert.is(await code(c.query('SHOW no_such_setting')), '42704');
    assert.is(await code(c.query("SET TimeZone = 'Asia/Tokyo'")), '22023');
    assert.is(await code(c.query('SET memory_limit = 1')), '42704');
    assert.equal((await c.query('SHOW TABLES')).rows.length, 1);
    const begin = await c.query('BEGIN');
    assert.is(begin.command, 'BEGIN');
    const counted = await c.query({ text: `SELECT count(*) AS n FROM flows WHERE ts >= $1`, values: [T0] });
    assert.equal(counted.rows, [{ n: '10' }]);
    assert.is(await code(c.query('SELECT * FROM nope')), '42P01');
    assert.is(await code(c.query('SELECT 1')), '25P02');
    assert.is((await c.query('ROLLBACK')).command, 'ROLLBACK');
    assert.equal((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  } finally {
    await c.end();
  }
});

unit.run();
wire.run();
