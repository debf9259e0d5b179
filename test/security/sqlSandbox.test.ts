/**
 * Security issue #14, item 1: the SQL sandbox, attacked through a real hd_sql process
 * (`hd run pipelines/sql.yaml`, all three doors on loopback). A file with secret bytes sits in the
 * test's data dir where `hd up` keeps the CA key (`dms/ca/ca.key.pem`); each attack — reading it
 * (read_text, read_blob, read_csv, a file named as a table), listing the dir (glob), writing
 * (COPY TO, ATTACH), extensions (INSTALL, LOAD), settings (SET, RESET, PRAGMA reaching DuckDB) and
 * what reveals the host (getenv, current_setting, pg_settings) — goes through psql (the real
 * binary, simple protocol), node-postgres (extended protocol), HTTP /v1/query and Flight SQL, and
 * must be refused as 0A000 / HTTP 400 unsupported_statement / gRPC Unimplemented, with the secret
 * never in any answer and the same message for an existing and a missing path.
 *
 * No cluster: no attack reads a dataset, so the SCC target is a port nobody listens on.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { any, dec, enc, fetchCommand, serverStream } from '../sql/flightClient';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';

const ROOT = path.resolve(__dirname, '../..');
const PSQL = '/usr/bin/psql';
const SECRET = `HD-SANDBOX-SECRET-${process.pid}-${Date.now().toString(36)}`;
const run = promisify(execFile);

let dir: string;
let key: string;
let sql: HdProcess;
const ports = { pg: 0, http: 0, flight: 0, ret: 0, scc: 0, sccGrpc: 0 };

/** What one door answered: its error code as the door spells it, and every byte it sent back. */
interface DoorAnswer {
  readonly door: 'psql' | 'pg extended' | 'http' | 'flight' | 'flight prepared';
  /** `0A000` (SQL wire), `400 unsupported_statement 0A000` (HTTP), `12 0A000` (gRPC); `ok` when it answered rows. */
  readonly code: string;
  /** The error message alone (for comparing two refusals). */
  readonly message: string;
  /** Everything that came back, to search for the secret. */
  readonly all: string;
}

async function viaPsql(q: string, ...more: string[]): Promise<DoorAnswer> {
  const args = ['-X', '-A', '-t', '-v', 'VERBOSITY=verbose', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'hd', '-d', 'hd'];
  for (const c of [...more, q]) args.push('-c', c);
  const r = await run(PSQL, args, { env: { ...process.env, PGCONNECT_TIMEOUT: '10', PGSSLMODE: 'disable' }, encoding: 'utf8' }).then(
    (o) => ({ ok: true, stdout: o.stdout, stderr: o.stderr }),
    (e: { stdout?: string; stderr?: string }) => ({ ok: false, stdout: String(e.stdout ?? ''), stderr: String(e.stderr ?? '') }),
  );
  const m = /ERROR:\s+([0-9A-Z]{5}):\s*([^\n]*)/.exec(r.stderr);
  return { door: 'psql', code: r.ok ? 'ok' : (m?.[1] ?? `psql failed: ${r.stderr}`), message: m?.[2] ?? '', all: r.stdout + r.stderr };
}

async function viaPgExtended(q: string): Promise<DoorAnswer> {
  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'hd', database: 'hd' });
  await c.connect();
  try {
    // `values` makes node-postgres use Parse / Bind / Describe / Execute.
    const r = await c.query({ text: q, values: [], rowMode: 'array' });
    return { door: 'pg extended', code: 'ok', message: '', all: JSON.stringify(r.rows) };
  } catch (err) {
    const e = err as { code?: string; message: string };
    return { door: 'pg extended', code: e.code ?? `no SQLSTATE: ${e.message}`, message: e.message, all: e.message };
  } finally {
    await c.end();
  }
}

async function viaHttp(q: string): Promise<DoorAnswer> {
  const res = await fetch(`http://127.0.0.1:${ports.http}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: q }) });
  const text = await res.text();
  if (res.ok) return { door: 'http', code: 'ok', message: '', all: text };
  const e = (JSON.parse(text) as { error?: { code?: string; sqlstate?: string; message?: string } }).error;
  return { door: 'http', code: `${res.status} ${e?.code} ${e?.sqlstate}`, message: e?.message ?? '', all: text };
}

function grpcAnswer(door: DoorAnswer['door'], err: { code: number; details: string } | undefined, rows: string): DoorAnswer {
  if (!err) return { door, code: 'ok', message: '', all: rows };
  return { door, code: `${err.code} ${/SQLSTATE (\w{5})/.exec(err.details)?.[1] ?? 'none'}`, message: err.details, all: err.details };
}

async function viaFlight(q: string): Promise<DoorAnswer> {
  const r = await fetchCommand(`127.0.0.1:${ports.flight}`, any('CommandStatementQuery', { query: q }));
  return grpcAnswer('flight', r.err, r.table ? JSON.stringify(r.table.toArray(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) : '');
}

async function viaFlightPrepared(q: string): Promise<DoorAnswer> {
  const action = enc('arrow.flight.protocol.Action', { type: 'CreatePreparedStatement', body: any('ActionCreatePreparedStatementRequest', { query: q }) });
  const r = await serverStream(`127.0.0.1:${ports.flight}`, 'DoAction', action);
  return grpcAnswer('flight prepared', r.err, r.messages.map((m) => JSON.stringify(dec('arrow.flight.protocol.Result', m))).join());
}

const REFUSED: Readonly<Record<DoorAnswer['door'], string>> = {
  psql: '0A000',
  'pg extended': '0A000',
  http: '400 unsupported_statement 0A000',
  flight: '12 0A000',
  'flight prepared': '12 0A000',
};

/**
 * Sends `q` through every door; each must refuse it as unsupported_statement and no answer may
 * hold the secret (or `mustNotShow`). Returns the answers by door.
 */
async function refusedEverywhere(q: string, mustNotShow: readonly string[] = []): Promise<Map<DoorAnswer['door'], DoorAnswer>> {
  const answers = [await viaPsql(q), await viaPgExtended(q), await viaHttp(q), await viaFlight(q), await viaFlightPrepared(q)];
  for (const a of answers) {
    assert.is(a.code, REFUSED[a.door], `${a.door}: ${q}\n${a.all}`);
    for (const s of [SECRET, ...mustNotShow]) assert.not.ok(a.all.includes(s), `${a.door} revealed ${JSON.stringify(s)} for ${q}: ${a.all}`);
  }
  return new Map(answers.map((a) => [a.door, a]));
}

const sandbox = suite('SQL sandbox: attacks through a real hd_sql process, on every door');

sandbox.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sandbox-'));
  mkdirSync(path.join(dir, 'dms', 'ca'), { recursive: true });
  key = path.join(dir, 'dms', 'ca', 'ca.key.pem');
  writeFileSync(key, `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n`, { mode: 0o600 });
  writeFileSync(path.join(dir, 'secrets.csv'), `name,value\nkey,${SECRET}\n`);
  mkdirSync(path.join(dir, 'schemas'));
  copyFileSync(path.join(ROOT, 'pipelines/examples/data/flows.schema.json'), path.join(dir, 'schemas', 'flows.json'));
  mkdirSync(path.join(dir, 'tmp'));
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  sql = startHd(['run', 'pipelines/sql.yaml', '--quiet'], {
    HD_SQL_SCC_TARGETS: `127.0.0.1:${ports.scc}:${ports.sccGrpc}`,
    HD_SQL_SCHEMA_DIR: path.join(dir, 'schemas'),
    PLATFORM_DATA_RETURN_HOST: '127.0.0.1',
    PLATFORM_DATA_RETURN_PORT: String(ports.ret),
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pg}`,
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${ports.http}`,
    HD_SQL_FLIGHTSQL_ADDRESS: `127.0.0.1:${ports.flight}`,
    OBSERVABILITY_PORT: '-1',
    HD_SQL_THREADS: '1',
    // The engine's private spill folder goes under here, where the test can look at it.
    TMPDIR: path.join(dir, 'tmp'),
  });
  for (const p of [ports.pg, ports.http, ports.flight]) await waitForPort('127.0.0.1', p, sql, 120_000);
});
sandbox.after(async () => {
  await sql?.stop();
  rmSync(dir, { recursive: true, force: true });
});

sandbox('the doors answer ordinary SQL (so the refusals below are refusals, not a dead server)', async () => {
  for (const a of [await viaPsql('SELECT count(*) FROM range(3)'), await viaPgExtended('SELECT count(*) FROM range(3)'), await viaHttp('SELECT count(*) AS n FROM range(3)'), await viaFlight('SELECT count(*) AS n FROM range(3)')]) {
    assert.is(a.code, 'ok', `${a.door}: ${a.all}`);
    assert.match(a.all, /3/, a.door);
  }
  // The engine's spill folder: private, made for this process, not a fixed name under /tmp.
  const spill = readdirSync(path.join(dir, 'tmp')).filter((n) => n.startsWith('hd-duckdb-'));
  assert.is(spill.length, 1, `one private spill folder: ${spill.join(', ')}`);
  assert.is(statSync(path.join(dir, 'tmp', spill[0] as string)).mode & 0o777, 0o700);
});

sandbox('read_text of the CA key is refused on every door (the reported attack)', async () => {
  await refusedEverywhere(`SELECT content FROM read_text('${key}')`);
  await refusedEverywhere(`SELECT content FROM main.read_text('${key}')`);
  await refusedEverywhere(`SELECT * FROM "READ_TEXT"('${key}')`);
  await refusedEverywhere(`WITH k AS (SELECT content FROM read_text('${key}')) SELECT * FROM k`);
  await refusedEverywhere(`SELECT 1 AS x UNION ALL SELECT length(content) FROM read_text('${key}')`);
});

sandbox('an existing and a missing path get the same answer, on every door', async () => {
  for (const fn of ['read_text', 'read_blob', 'read_csv']) {
    const there = await refusedEverywhere(`SELECT * FROM ${fn}('${key}')`);
    const absent = await refusedEverywhere(`SELECT * FROM ${fn}('${dir}/dms/ca/no-such.pem')`);
    for (const [door, a] of there) assert.is(a.message, absent.get(door)?.message, `${door}: ${fn}`);
  }
  const there = await refusedEverywhere(`SELECT * FROM '${dir}/secrets.csv'`);
  const absent = await refusedEverywhere(`SELECT * FROM '${dir}/missing.csv'`);
  for (const [door, a] of there) assert.is(a.message, absent.get(door)?.message, door);
});

sandbox('glob lists nothing of the data dir', async () => {
  await refusedEverywhere(`SELECT * FROM glob('${dir}/**')`, ['ca.key.pem', 'secrets.csv']);
  await refusedEverywhere("SELECT * FROM glob('/**')", ['ca.key.pem']);
});

sandbox('read_blob, read_csv, read_csv_auto, read_json and a file named as a table are refused', async () => {
  await refusedEverywhere(`SELECT content FROM read_blob('${key}')`);
  await refusedEverywhere(`SELECT * FROM read_csv('${dir}/secrets.csv')`);
  await refusedEverywhere(`SELECT * FROM read_csv_auto('${dir}/*.csv')`);
  await refusedEverywhere(`SELECT * FROM read_json('${key}')`);
  await refusedEverywhere(`SELECT * FROM '${dir}/secrets.csv'`);
  await refusedEverywhere(`SELECT * FROM query('SELECT content FROM read_text(''${key}'')')`);
});

sandbox('COPY TO a file and ATTACH create nothing; COPY TO STDOUT of a file read is refused too', async () => {
  await refusedEverywhere(`COPY (SELECT 'x' AS a) TO '${dir}/out.csv'`);
  await refusedEverywhere(`COPY (SELECT content FROM read_text('${key}')) TO '${dir}/out2.csv'`);
  assert.not.ok(existsSync(path.join(dir, 'out.csv')), 'COPY TO wrote no file');
  assert.not.ok(existsSync(path.join(dir, 'out2.csv')), 'COPY TO wrote no file');
  const stdout = await viaPsql(`COPY (SELECT content FROM read_text('${key}')) TO STDOUT`);
  assert.is(stdout.code, '0A000', stdout.all);
  assert.not.ok(stdout.all.includes(SECRET));
  await refusedEverywhere(`ATTACH '${dir}/attached.db' AS a`);
  assert.not.ok(existsSync(path.join(dir, 'attached.db')), 'ATTACH created no database file');
  await refusedEverywhere('DETACH a');
});

sandbox('INSTALL and LOAD are refused', async () => {
  await refusedEverywhere('INSTALL httpfs');
  await refusedEverywhere('LOAD httpfs');
  await refusedEverywhere(`LOAD '${dir}/evil.duckdb_extension'`);
  await refusedEverywhere('CREATE SECRET s (TYPE s3, KEY_ID \'a\', SECRET \'b\')');
});

sandbox('SET / RESET / PRAGMA never reach DuckDB: refused on HTTP and Flight SQL; the wire answers SET itself and changes nothing', async () => {
  for (const q of ['SET enable_external_access = true', "SET memory_limit = '64GB'", 'RESET lock_configuration']) {
    assert.is((await viaHttp(q)).code, REFUSED.http, q);
    assert.is((await viaFlight(q)).code, REFUSED.flight, q);
  }
  await refusedEverywhere("PRAGMA memory_limit = '64GB'");
  await refusedEverywhere('PRAGMA database_list');
  await refusedEverywhere('CALL pragma_version()');
  // A driver's SET (pgjdbc's extra_float_digits, application_name) is answered by the wire door...
  const set = await viaPsql('SHOW extra_float_digits', 'SET extra_float_digits = 3');
  assert.is(set.code, 'ok', set.all);
  assert.match(set.all, /^SET\n3$/m);
  // ... while a SET of a DuckDB setting is refused there (42704: no such PostgreSQL parameter) and turns nothing on.
  for (const s of ['SET enable_external_access = true', 'SET lock_configuration = false']) {
    const refused = await viaPsql('SELECT 1', s);
    assert.is(refused.code, '42704', refused.all);
  }
  const after = await viaPsql(`SELECT content FROM read_text('${key}')`);
  assert.is(after.code, '0A000', after.all);
  assert.not.ok(after.all.includes(SECRET));
});

sandbox('getenv, current_setting, pg_settings and duckdb_settings reveal nothing of the host', async () => {
  const paths = [path.join(dir, 'tmp'), os.homedir()];
  await refusedEverywhere("SELECT getenv('HOME')", paths);
  await refusedEverywhere("SELECT current_setting('temp_directory')", paths);
  await refusedEverywhere("SELECT pg_catalog.current_setting('extension_directory')", paths);
  await refusedEverywhere('SELECT name, setting FROM pg_settings', paths);
  await refusedEverywhere('SELECT * FROM pg_catalog.pg_settings', paths);
  await refusedEverywhere('SELECT * FROM duckdb_settings()', paths);
  await refusedEverywhere('SELECT * FROM duckdb_extensions()', paths);
  await refusedEverywhere('SELECT * FROM duckdb_temporary_files()', paths);
});

sandbox('several statements in one text are refused whole', async () => {
  const r = await viaPsql(`SELECT 1; SELECT content FROM read_text('${key}')`);
  assert.is(r.code, '0A000', r.all);
  assert.not.ok(r.all.includes(SECRET));
  assert.is((await viaHttp(`SELECT 1; SELECT content FROM read_text('${key}')`)).code, REFUSED.http);
});

sandbox.run();
