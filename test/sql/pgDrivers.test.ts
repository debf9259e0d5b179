/**
 * Protocol details with real drivers (installed by scripts/pg-clients.sh): pgjdbc reading two
 * cursors in turn with setFetchSize and autocommit off (PortalSuspended, portals kept across Sync
 * inside the transaction), its ResultSetMetaData, an error inside a transaction; psycopg 3 in its
 * default transaction mode (statuses, savepoints, SETs rolled back) and in autocommit, its
 * cursor.description; psql's column headers and a transaction with ON_ERROR_ROLLBACK (savepoints).
 * Result names are PostgreSQL's in every one.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PgServer } from '../../sql/pgwire/pgServer';
import { memoryEngine, T0 } from './support';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const PSQL = '/usr/bin/psql';
const PASSWORD = 'c0rrect horse';

interface Table {
  columns: string[];
  rows: unknown[][];
}
interface Failure {
  sqlstate: string | null;
  message: string;
}

const drivers = suite('pgwire protocol details with pgjdbc, psycopg 3 and psql');
const { engine, local } = memoryEngine(300);
const server = new PgServer(engine, { host: '127.0.0.1', port: 0, password: PASSWORD });
let port = 0;
let python = '';
let jar = '';

drivers.before(async () => {
  try {
    await run('bash', [path.join(ROOT, 'scripts/pg-clients.sh'), 'install'], { cwd: ROOT, timeout: 480_000, maxBuffer: 16 << 20 });
  } catch (err) {
    throw new Error(`scripts/pg-clients.sh install failed (needs python3 with venv, java 11+ and mvn, and PyPI / Maven Central): ${String((err as { stderr?: string }).stderr ?? err)}`);
  }
  [python, jar] = (await run('bash', [path.join(ROOT, 'scripts/pg-clients.sh'), 'paths'], { cwd: ROOT })).stdout.trim().split('\n') as [string, string];
  port = (await server.listen()).port;
});
drivers.after(async () => {
  await server.close();
  await local.close();
});

const NAMES = ['count', 'sum', '?column?', 'int4', 'n'];
const WINDOW = Array.from({ length: 30 }, (_, i) => T0 + i);

drivers('pgjdbc: setFetchSize with autocommit off reads two cursors in turn, every row once and in order; ResultSetMetaData; 25P02 until rollback', async () => {
  const { stdout } = await run('java', ['-cp', jar, path.join(__dirname, 'clients/PgJdbcClient.java'), '127.0.0.1', String(port), 'tester', PASSWORD, 'protocol'], { timeout: 180_000 });
  const out = JSON.parse(stdout) as { results: Record<string, unknown>; errors: Record<string, Failure> };
  const r = out.results;
  assert.equal(r.fetchA, WINDOW.map(String));
  assert.equal(r.fetchB, [...WINDOW].reverse().map((ts) => `${ts}:${['tcp', 'udp', 'icmp'][(ts - T0) % 3]}`));
  // pgjdbc held one fetch (7 rows), not the whole result: it read through the portal in pieces.
  assert.is(r.heldAfterFirstRow, '7');
  const md = (r.metadata as Record<string, string>[]).map((c) => `${c.label} ${c.type} ${c.typeName} ${c.precision},${c.scale} ${c.className}`);
  assert.equal(md, [
    'c -5 int8 19,0 java.lang.Long',
    's 2 numeric 0,0 java.math.BigDecimal',
    'd 2 numeric 5,2 java.math.BigDecimal',
    'ints 2003 _int4 10,0 java.sql.Array',
    'small 5 int2 5,0 java.lang.Integer',
    'i4 4 int4 10,0 java.lang.Integer',
    'r 7 float4 8,8 java.lang.Float',
    'f8 8 float8 17,17 java.lang.Double',
    'b -7 bool 1,0 java.lang.Boolean',
    't 12 text 2147483647,0 java.lang.String',
    'ip 12 text 2147483647,0 java.lang.String',
    'at 93 timestamptz 35,6 java.sql.Timestamp',
    'ts 93 timestamp 29,6 java.sql.Timestamp',
    'day 91 date 13,0 java.sql.Date',
    'bin -2 bytea 2147483647,0 [B',
    'h 2 numeric 0,0 java.math.BigDecimal',
  ]);
  assert.equal((r.names as Table).columns, NAMES);
  assert.equal((r.names as Table).rows, [['30', '4350', '2', '2', '30']]);
  assert.is(out.errors.inTransaction?.sqlstate, '42P01');
  assert.is(out.errors.afterError?.sqlstate, '25P02');
  assert.equal(r.afterRollback, { columns: ['one'], rows: [['1']] });
  assert.equal((r.prepared as Table).columns, ['proto', 'count']);
  assert.equal((r.prepared as Table).rows, [['tcp', '10']]);
});

drivers('psycopg 3: default transaction mode (INTRANS, INERROR, IDLE), savepoints, a SET rolled back; autocommit; description; reported parameters', async () => {
  const { stdout } = await run(python, [path.join(__dirname, 'clients/psycopg_client.py'), '127.0.0.1', String(port), 'tester', PASSWORD, 'protocol'], { timeout: 120_000 });
  const out = JSON.parse(stdout) as { results: Record<string, unknown>; errors: Record<string, Failure> };
  const r = out.results;
  assert.equal(r.statuses, ['IDLE', 'INTRANS', 'INERROR', 'IDLE', 'IDLE']);
  assert.equal(r.names, { columns: NAMES, rows: [['30', '4350', '2', '2', '30']] });
  assert.equal(r.autocommitNames, r.names);
  assert.is(r.autocommitStatus, 'IDLE');
  assert.is(out.errors.inTransaction?.sqlstate, '42P01');
  assert.is(out.errors.afterError?.sqlstate, '25P02');
  assert.equal([r.inBlock, r.savepointRolledBack, r.afterSavepoint], [{ columns: ['one'], rows: [['1']] }, true, { columns: ['two'], rows: [['2']] }]);
  assert.equal(r.applicationNameAfterRollback, { columns: ['application_name'], rows: [['']] });
  // [name, type OID, internal size, precision, scale]
  assert.equal(r.description, [
    ['c', 20, 8, null, null], ['s', 1700, null, null, null], ['d', 1700, null, 5, 2], ['ints', 1007, null, null, null], ['small', 21, 2, null, null], ['i4', 23, 4, null, null],
    ['r', 700, 4, null, null], ['f8', 701, 8, null, null], ['b', 16, 1, null, null], ['t', 25, null, null, null], ['ip', 25, null, null, null], ['at', 1184, 8, null, null],
    ['ts', 1114, 8, null, null], ['day', 1082, 4, null, null], ['bin', 17, null, null, null], ['h', 1700, null, null, null],
  ]);
  assert.equal(r.reported, { server_version: '16.0 (hd_sql)', DateStyle: 'ISO, MDY', TimeZone: 'UTC', integer_datetimes: 'on', standard_conforming_strings: 'on', client_encoding: 'UTF8', IntervalStyle: 'postgres' });
});

drivers('psql: PostgreSQL\'s column headers; a transaction with ON_ERROR_ROLLBACK (a savepoint per statement) goes on past an error', async () => {
  if (!existsSync(PSQL)) {
    console.warn(`SKIPPED: ${PSQL} is not installed; the psql checks did not run`);
    return;
  }
  const env = { ...process.env, PGPASSWORD: PASSWORD, PGCONNECT_TIMEOUT: '10' };
  const psql = async (args: string[], input?: string): Promise<string> => {
    const p = run(PSQL, ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'tester', '-d', 'hd', ...args], { env, encoding: 'utf8' });
    if (input !== undefined) p.child.stdin?.end(input);
    return (await p).stdout;
  };
  const aligned = await psql(['-c', `SELECT count(*), sum(bytes), 1 + 1, 2::int, count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 30}`]);
  assert.match(aligned, /^ count \| sum  \| \?column\? \| int4 \| n {2}\n/);
  const script = ['\\set ON_ERROR_ROLLBACK on', 'BEGIN;', 'SELECT 1 AS one;', 'SELECT * FROM nope;', 'SELECT 2 AS two;', 'COMMIT;', 'SELECT 3 AS three;'].join('\n');
  const out = await psql(['-A', '-t', '-n', '-f', '-'], script);
  assert.equal(out.trim().split('\n'), ['BEGIN', '1', '2', 'COMMIT', '3']);
});

drivers.run();
