/**
 * hd_sql's PostgreSQL wire door with drivers from outside the project, over SCRAM-SHA-256: psycopg 3
 * (PyPI) and pgjdbc (Maven Central, run with the machine's java), installed by
 * scripts/pg-clients.sh; plus psql with a password. Each runs the same queries (test/sql/clients/)
 * and must answer exactly what node-postgres answers; each sees 28P01 for a wrong password and
 * 42P01 for an unknown table. (The SCRAM conversation byte by byte: test/sql/pgScram.test.ts.)
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { PgServer } from '../../sql/pgwire/pgServer';
import { memoryEngine, T0 } from './support';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const PSQL = '/usr/bin/psql';
const PASSWORD = 'c0rrect horse';

/** The canonical form every client prints: integers and decimals as strings, timestamps ISO UTC. */
type Canon = null | boolean | string | Canon[];
interface Table {
  columns: string[];
  rows: Canon[][];
}
interface Failure {
  sqlstate: string | null;
  message: string;
}
interface ClientOutput {
  driver: string;
  results: Record<string, Table>;
  errors: Record<string, Failure>;
}

function canon(v: unknown): Canon {
  if (v === null || v === undefined || typeof v === 'boolean') return (v ?? null) as Canon;
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(canon);
  return String(v);
}

/** The shared queries (test/sql/clients/ run the same) through node-postgres, in canonical form. */
async function nodePgOutput(port: number): Promise<ClientOutput> {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'tester', database: 'hd', password: PASSWORD });
  await c.connect();
  const table = (r: pg.QueryResult<unknown[]>): Table => ({ columns: r.fields.map((f) => f.name), rows: r.rows.map((row) => row.map(canon)) });
  try {
    const results: Record<string, Table> = {};
    results.simple = table(await c.query({ text: `SELECT proto, count(*) AS n, sum(bytes) AS total FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 30} GROUP BY proto ORDER BY proto`, rowMode: 'array' }));
    results.prepared = table(
      await c.query({
        name: 'prepared',
        text: 'SELECT ts, proto, src_ip, dst_port, to_timestamp(ts) AS at FROM flows WHERE ts >= $1 AND proto = $2 AND (dst_port = 53) = $3 AND to_timestamp(ts) < $4::TIMESTAMPTZ ORDER BY ts',
        values: [T0, 'icmp', true, new Date((T0 + 12) * 1000)],
        rowMode: 'array',
      }),
    );
    results.nulls = table(await c.query({ text: "SELECT CAST(NULL AS INTEGER) AS a, $1::VARCHAR AS b, $2::INTEGER AS c, 'x' AS d", values: [null, null], rowMode: 'array' }));
    results.types = table(
      await c.query({
        text: "SELECT [1, 2]::INTEGER[] AS ints, ['x', 'y z', NULL]::VARCHAR[] AS texts, 2.50::DECIMAL(5,2) AS d, true AS b, 0.5::DOUBLE AS f, 12345678901::BIGINT AS big, 7::SMALLINT AS small, 'é ü' AS utf",
        rowMode: 'array',
      }),
    );
    // Session questions drivers and BI tools ask (answered by the door, not DuckDB), extended protocol.
    results.version = table(await c.query({ text: 'SELECT version()', values: [], rowMode: 'array' }));
    await c.query({ text: "SET application_name = 'hd clients'", values: [] });
    results.show = table(await c.query({ text: 'SHOW application_name', values: [], rowMode: 'array' }));
    results.showIsolation = table(await c.query({ text: 'SHOW TRANSACTION ISOLATION LEVEL', values: [], rowMode: 'array' }));
    const unknownTable = await c.query('SELECT * FROM nope').then(
      () => ({ sqlstate: 'none', message: 'no error' }),
      (e: { code?: string; message: string }) => ({ sqlstate: e.code ?? null, message: e.message }),
    );
    results.afterError = table(await c.query({ text: 'SELECT 1 AS one', rowMode: 'array' }));
    return { driver: 'node-postgres', results, errors: { unknownTable } };
  } finally {
    await c.end();
  }
}

const clients = suite('pgwire door with psycopg 3, pgjdbc and psql over SCRAM-SHA-256');
const { engine, local } = memoryEngine(300);
const server = new PgServer(engine, { host: '127.0.0.1', port: 0, password: PASSWORD });
let port = 0;
let python = '';
let jar = '';
let expected: ClientOutput;

clients.before(async () => {
  // Installs (once, cached under .hd/test-deps/) psycopg[binary] 3 from PyPI and the pgjdbc jar from Maven Central.
  try {
    await run('bash', [path.join(ROOT, 'scripts/pg-clients.sh'), 'install'], { cwd: ROOT, timeout: 480_000, maxBuffer: 16 << 20 });
  } catch (err) {
    throw new Error(`scripts/pg-clients.sh install failed (needs python3 with venv, java 11+ and mvn, and PyPI / Maven Central): ${String((err as { stderr?: string }).stderr ?? err)}`);
  }
  [python, jar] = (await run('bash', [path.join(ROOT, 'scripts/pg-clients.sh'), 'paths'], { cwd: ROOT })).stdout.trim().split('\n') as [string, string];
  port = (await server.listen()).port;
  expected = await nodePgOutput(port);
});
clients.after(async () => {
  await server.close();
  await local.close();
});

function checkClient(out: ClientOutput): void {
  // Every query answers exactly what node-postgres answered: columns, values, order, NULLs.
  assert.equal(Object.keys(out.results).sort(), Object.keys(expected.results).sort());
  for (const [name, want] of Object.entries(expected.results)) assert.equal(out.results[name], want, `${out.driver}: query ${name}`);
  assert.is(out.errors.unknownTable?.sqlstate, '42P01', `${out.driver}: unknown table`);
  assert.match(out.errors.unknownTable?.message ?? '', /unknown table "nope"/);
}

clients('node-postgres answers the shared queries (the reference the other drivers are held to)', () => {
  assert.equal(expected.results.simple?.rows, [
    ['icmp', '10', '1550'],
    ['tcp', '10', '1350'],
    ['udp', '10', '1450'],
  ]);
  assert.equal(expected.results.prepared?.rows.map((r) => r[0]), [T0 + 2, T0 + 5, T0 + 8, T0 + 11].map(String));
  assert.equal(expected.results.prepared?.rows[0]?.[4], new Date((T0 + 2) * 1000).toISOString());
  assert.equal(expected.results.nulls?.rows, [[null, null, null, 'x']]);
  assert.equal(expected.results.types?.rows, [[['1', '2'], ['x', 'y z', null], '2.50', true, '0.5', '12345678901', '7', 'é ü']]);
  assert.is(expected.errors.unknownTable?.sqlstate, '42P01');
  assert.match(String(expected.results.version?.rows[0]?.[0]), /^PostgreSQL 16\.0 /);
  assert.equal(expected.results.show, { columns: ['application_name'], rows: [['hd clients']] });
  assert.equal(expected.results.showIsolation, { columns: ['transaction_isolation'], rows: [['read committed']] });
});

clients('psycopg 3 (libpq): SCRAM login, simple and server-side-bound queries, text and binary results equal node-postgres; 28P01 and 42P01', async () => {
  const { stdout } = await run(python, [path.join(__dirname, 'clients/psycopg_client.py'), '127.0.0.1', String(port), 'tester', PASSWORD], { timeout: 120_000 });
  const out = JSON.parse(stdout) as ClientOutput;
  assert.match(out.driver, /^psycopg 3\./);
  checkClient(out);
  // libpq keeps no SQLSTATE for a failed connection attempt, so psycopg's is None; the message is the server's 28P01 text.
  assert.is(out.errors.wrongPassword?.sqlstate, null);
  assert.match(out.errors.wrongPassword?.message ?? '', /FATAL: {2}password authentication failed for user "tester"/);
});

clients('pgjdbc: SCRAM login, simple protocol, prepared statements past prepareThreshold (binary results) equal node-postgres; 28P01 and 42P01', async () => {
  const { stdout } = await run('java', ['-Duser.timezone=America/New_York', '-cp', jar, path.join(__dirname, 'clients/PgJdbcClient.java'), '127.0.0.1', String(port), 'tester', PASSWORD], { timeout: 180_000 });
  const out = JSON.parse(stdout) as ClientOutput;
  assert.match(out.driver, /^pgjdbc 42\./);
  assert.match(out.driver, /server 16\.0/);
  checkClient(out);
  assert.is(out.errors.wrongPassword?.sqlstate, '28P01');
  assert.match(out.errors.wrongPassword?.message ?? '', /password authentication failed for user "tester"/);
});

clients('psql (libpq): SCRAM login with PGPASSWORD; a wrong one is refused', async () => {
  if (!existsSync(PSQL)) {
    console.warn(`SKIPPED: ${PSQL} is not installed; the psql password checks did not run`);
    return;
  }
  const psql = (password: string): Promise<{ code: number; stdout: string; stderr: string }> =>
    run(PSQL, ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(port), '-U', 'tester', '-d', 'hd', '-c', `SELECT count(*) FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 9}`], {
      env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: '10', PGCHANNELBINDING: 'prefer' },
      encoding: 'utf8',
    }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, stdout: String(e.stdout), stderr: String(e.stderr) }),
    );
  const ok = await psql(PASSWORD);
  assert.is(ok.stdout.trim(), '9', ok.stderr);
  const bad = await psql('nope');
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /password authentication failed for user "tester"/);
  assert.match(bad.stderr, /HD_SQL_PGWIRE_PASSWORD_FILE/);
});

clients.run();
