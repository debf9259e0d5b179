/**
 * The SDK's embedded DuckDB is sandboxed (local/localSql.ts `sandboxConfig`): SQL run in it
 * reads and writes no file but its own spill folder, loads no extension and cannot change a setting;
 * large sorts still spill to that folder and finish.
 */
import { existsSync, mkdtempSync, rmSync, statSync, watch, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { LocalSql } from '../../local/localSql';
import { LocalSqlError } from '../../local/localSqlError';

const SECRET = `HD-LOCAL-SANDBOX-SECRET-${process.pid}-${Date.now()}`;
let dir: string;
let local: LocalSql;
const one = new arrow.Table({ x: arrow.vectorFromArray([1], new arrow.Int32()) });

/** The LocalSqlError `sql` fails with over the one-row table `t`. */
async function failure(sql: string, on: LocalSql = local): Promise<LocalSqlError> {
  try {
    await on.applySql(one, sql, { tableName: 't' });
  } catch (err) {
    assert.instance(err, LocalSqlError, String(err));
    return err as LocalSqlError;
  }
  return assert.unreachable(`should have been refused: ${sql}`) as never;
}

const sandbox = suite('LocalSql: the embedded DuckDB is sandboxed');

sandbox.before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-local-sandbox-'));
  writeFileSync(path.join(dir, 'ca.key.pem'), `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n`);
  writeFileSync(path.join(dir, 'rows.csv'), `a,b\n${SECRET},1\n`);
  local = new LocalSql({ threads: 1 });
});
sandbox.after(async () => {
  await local.close();
  rmSync(dir, { recursive: true, force: true });
});

sandbox('read_text / read_blob / read_csv / a file in FROM are refused, and the secret never comes back', async () => {
  for (const sql of [
    `SELECT content FROM read_text('${dir}/ca.key.pem')`,
    `SELECT content FROM read_blob('${dir}/ca.key.pem')`,
    `SELECT * FROM read_csv('${dir}/rows.csv')`,
    `SELECT * FROM '${dir}/rows.csv'`,
  ]) {
    const err = await failure(sql);
    assert.is(err.code, 'ERR_SQL');
    assert.match(err.message, /Permission Error|disabled by configuration/, sql);
    assert.not.match(err.message, SECRET, sql);
  }
});

sandbox('an existing and a missing path fail with the same message (nothing says whether a file exists)', async () => {
  const there = (await failure(`SELECT content FROM read_text('${dir}/ca.key.pem')`)).message;
  const absent = (await failure(`SELECT content FROM read_text('${dir}/no-such.pem')`)).message;
  // DuckDB names the path it refused (the caller's own text, twice with the statement): only it differs.
  assert.is(there.replaceAll(`${dir}/ca.key.pem`, 'PATH'), absent.replaceAll(`${dir}/no-such.pem`, 'PATH'));
});

sandbox('glob lists nothing; COPY TO and ATTACH create no file; INSTALL and LOAD are refused', async () => {
  assert.not.match((await failure(`SELECT * FROM glob('${dir}/**')`)).message, /ca\.key\.pem/);
  await failure(`COPY (SELECT 'x') TO '${dir}/out.csv'`);
  assert.not.ok(existsSync(path.join(dir, 'out.csv')), 'COPY TO wrote no file');
  await failure(`ATTACH '${dir}/attached.db' AS a`);
  assert.not.ok(existsSync(path.join(dir, 'attached.db')), 'ATTACH created no database file');
  await failure('INSTALL httpfs');
  await failure('LOAD httpfs');
  await failure(`LOAD '${dir}/evil.duckdb_extension'`);
});

sandbox('the settings are locked: SET and PRAGMA cannot turn external access back on', async () => {
  for (const sql of ['SET enable_external_access = true', "SET memory_limit = '64GB'", 'SET lock_configuration = false', "PRAGMA memory_limit = '64GB'", 'RESET enable_external_access']) {
    assert.match((await failure(sql)).message, /locked|Cannot change/, sql);
  }
  const got = await local.applySql(one, "SELECT current_setting('enable_external_access') AS ext, current_setting('lock_configuration') AS locked, current_setting('autoload_known_extensions') AS autoload, current_setting('autoinstall_known_extensions') AS autoinstall, current_setting('allow_community_extensions') AS community, current_setting('allow_unsigned_extensions') AS unsigned", { tableName: 't' });
  assert.equal(got.toArray().map((r) => ({ ...r })), [{ ext: false, locked: true, autoload: false, autoinstall: false, community: false, unsigned: false }]);
});

sandbox('the spill folder is private (0700, unguessable, not a fixed /tmp name) and holds the extension directory', async () => {
  const got = await local.applySql(one, "SELECT current_setting('temp_directory') AS temp, current_setting('extension_directory') AS ext", { tableName: 't' });
  const row = got.toArray()[0] as { temp: string; ext: string };
  assert.is(row.temp, local.tempDirectory);
  assert.ok(row.temp.startsWith(path.join(os.tmpdir(), 'hd-duckdb-')), row.temp);
  assert.is(statSync(row.temp).mode & 0o777, 0o700);
  assert.is(row.ext, path.join(row.temp, 'extensions'));
});

sandbox('what the engine itself does still works: registering rows, json_serialize_sql / json_deserialize_sql, range', async () => {
  const got = await local.applySql(one, "SELECT x, json_deserialize_sql(json_serialize_sql('SELECT 42 AS y')) AS back, (SELECT count(*) FROM range(10)) AS n FROM t", { tableName: 't' });
  assert.equal(got.toArray().map((r) => ({ ...r })), [{ x: 1, back: 'SELECT 42 AS y', n: 10n }]);
});

const spill = suite('LocalSql: spilling to the private temp folder under the sandbox');

spill('a sort larger than memory_limit spills into the temp folder and completes', async () => {
  const temp = path.join(mkdtempSync(path.join(os.tmpdir(), 'hd-local-spill-')), 'spill');
  const small = new LocalSql({ threads: 1, memoryLimit: '32MB', tempDirectory: temp });
  try {
    const session = await small.openSession();
    try {
      assert.is(statSync(temp).mode & 0o777, 0o700, 'a named temp folder is created private');
      const written = new Set<string>();
      const watcher = watch(temp, (_event, name) => {
        if (name) written.add(String(name));
      });
      try {
        // ~3M rows of ~30-byte strings sorted: several times the 32 MB limit.
        const t = await session.query("SELECT count(*) AS n, min(pad) AS lo, max(pad) AS hi FROM (SELECT pad FROM (SELECT i::VARCHAR || repeat('x', 24) AS pad FROM range(3000000) r(i)) ORDER BY pad DESC OFFSET 1)");
        const row = t.toArray()[0] as { n: bigint; lo: string; hi: string };
        assert.is(row.n, 2999999n);
        // Text order: '9x…' is the largest (dropped by OFFSET 1), then '99x…'; '0x…' the smallest.
        assert.is(row.hi, `99${'x'.repeat(24)}`);
        assert.is(row.lo, `0${'x'.repeat(24)}`);
        await new Promise((r) => setTimeout(r, 50)); // inotify events arrive after the query
      } finally {
        watcher.close();
      }
      assert.ok([...written].some((n) => /^duckdb_temp/.test(n)), `spill files were written in the temp folder: ${[...written].join(', ') || 'none'}`);
    } finally {
      await session.close();
    }
  } finally {
    await small.close();
    assert.ok(existsSync(temp), 'a temp folder the caller named is kept');
    rmSync(path.dirname(temp), { recursive: true, force: true });
  }
});

spill('the folder LocalSql made itself is removed on close', async () => {
  const mine = new LocalSql({ threads: 1 });
  await mine.applySql(one, 'SELECT 1', { tableName: 't' });
  const temp = mine.tempDirectory as string;
  assert.ok(existsSync(temp));
  await mine.close();
  assert.not.ok(existsSync(temp));
});

sandbox.run();
spill.run();
