/**
 * psql's meta-commands against hd_sql's PostgreSQL catalog (sql/pgcatalog/): `\l`, `\dn`, `\dt`,
 * `\d <dataset>`, `\d+` (descriptions from the schema), `\df` (HD's functions), `\x`, each
 * checked against the text psql prints. psql sends its own catalog queries (pg_class joins,
 * `OPERATOR(pg_catalog.~)`, `COLLATE pg_catalog.default`, `::regclass`, pg_get_userbyid...), so
 * this is the catalog as a real client reads it. None of them reads from the Storage Nodes.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { Catalog } from '../../sql/catalog';
import { PgServer } from '../../sql/pgwire/pgServer';
import { memoryEngine, T0 } from './support';

const run = promisify(execFile);
const PSQL = '/usr/bin/psql';

/** The flows schema with descriptions (the dataset's and two columns'). */
const described = (() => {
  const doc = JSON.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8')) as { description?: string; fields: { name: string; description?: string }[] };
  doc.description = 'one row per network flow';
  for (const f of doc.fields) if (f.name === 'bytes') f.description = 'bytes sent';
  for (const f of doc.fields) if (f.name === 'src_ip') f.description = 'where it came from';
  return Schema.parse(doc);
})();

const { engine, local, stats } = memoryEngine(300);
engine.setCatalog(new Catalog([described]));
const server = new PgServer(engine, { host: '127.0.0.1', port: 0 });
let port = 0;
const meta = suite('psql meta-commands over the PostgreSQL catalog');

meta.before(async () => {
  port = (await server.listen()).port;
});
meta.after(async () => {
  await server.close();
  await local.close();
});

/** psql's output of `commands` (each a -c), as a user sees it (aligned, no pager, no psqlrc). */
async function psql(...commands: string[]): Promise<string> {
  const args = ['-X', '-P', 'pager=off', '-h', '127.0.0.1', '-p', String(port), '-U', 'tester', '-d', 'hd', '-v', 'ON_ERROR_STOP=1'];
  for (const c of commands) args.push('-c', c);
  try {
    const r = await run(PSQL, args, { env: { ...process.env, PGCONNECT_TIMEOUT: '10', PGTZ: 'UTC' }, encoding: 'utf8' });
    return r.stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`psql ${commands.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}`);
  }
}

const skip = (): boolean => {
  if (existsSync(PSQL)) return false;
  console.warn(`SKIPPED: ${PSQL} is not installed; the psql meta-command checks did not run`);
  return true;
};

const lines = (...l: string[]): string => `${l.join('\n')}\n`;

meta('\\l lists the one database, \\dn the public schema', async () => {
  if (skip()) return;
  assert.fixture(
    await psql('\\l'),
    lines(
      '                                      List of databases',
      ' Name | Owner | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges ',
      '------+-------+----------+---------+-------+------------+-----------------+-------------------',
      ' hd   | hd    | UTF8     | C       | C     |            | libc            | ',
      '(1 row)',
      '',
    ),
  );
  assert.fixture(await psql('\\dn'), lines('List of schemas', '  Name  | Owner ', '--------+-------', ' public | hd', '(1 row)', ''));
});

meta('\\dt lists the datasets, \\dt+ with their descriptions', async () => {
  if (skip()) return;
  assert.fixture(await psql('\\dt'), lines('       List of relations', ' Schema | Name  | Type  | Owner ', '--------+-------+-------+-------', ' public | flows | table | hd', '(1 row)', ''));
  assert.match(await psql('\\dt+ flows'), / public \| flows \| table \| hd {4}\| permanent {3}\| +\| +\| one row per network flow/);
});

meta('\\d <dataset> shows its columns with the types of the type mapping; \\d+ their descriptions', async () => {
  if (skip()) return;
  const expected = lines(
    '                  Table "public.flows"',
    '   Column    |  Type   | Collation | Nullable | Default ',
    '-------------+---------+-----------+----------+---------',
    ' ts          | bigint  |           |          | ',
    ' src_ip      | inet    |           |          | ',
    ' dst_ip      | inet    |           |          | ',
    ' src_port    | integer |           |          | ',
    ' dst_port    | integer |           |          | ',
    ' proto       | text    |           |          | ',
    ' packets     | numeric |           |          | ',
    ' bytes       | numeric |           |          | ',
    ' duration_ms | bigint  |           |          | ',
    '',
  );
  assert.fixture(await psql('\\d flows'), expected);
  // Unquoted, any case names the same table (psql folds it, as PostgreSQL does).
  assert.fixture(await psql('\\d FLOWS'), expected);
  const plus = await psql('\\d+ flows');
  assert.match(plus, / src_ip +\| inet +\| +\| +\| +\| extended \| +\| +\| where it came from/);
  assert.match(plus, / bytes +\| numeric +\| +\| +\| +\| extended \| +\| +\| bytes sent/);
  // A name that is no relation: psql's own message.
  const missing = await run(PSQL, ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'tester', '-d', 'hd', '-c', '\\d nope'], { encoding: 'utf8' }).then(
    (r) => r.stderr,
    (e: { stderr?: string }) => String(e.stderr),
  );
  assert.match(missing, /Did not find any relation named "nope"/);
});

meta('\\df lists the functions HD adds, with argument and result types', async () => {
  if (skip()) return;
  assert.fixture(
    await psql('\\df fen_piece*'),
    lines(
      '                                List of functions',
      ' Schema |      Name       | Result data type |    Argument data types     | Type ',
      '--------+-----------------+------------------+----------------------------+------',
      ' public | fen_piece       | text             | position text, square text | func',
      ' public | fen_piece_count | integer          | position text              | func',
      ' public | fen_piece_count | integer          | position text, piece text  | func',
      '(3 rows)',
      '',
    ),
  );
  assert.match(await psql('\\df'), /\(11 rows\)/);
});

meta('\\x shows a query expanded, and no catalog command read from the Storage Nodes', async () => {
  if (skip()) return;
  const readsBefore = stats.reads;
  await psql('\\l', '\\dn', '\\dt', '\\d flows', '\\df', '\\d pg_class');
  assert.is(stats.reads, readsBefore, 'catalog commands dispatched no read');
  assert.fixture(
    await psql('\\x', `SELECT ts, proto, bytes FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 2} ORDER BY ts`),
    lines('Expanded display is on.', '-[ RECORD 1 ]-----', `ts    | ${T0}`, 'proto | tcp', 'bytes | 0', '-[ RECORD 2 ]-----', `ts    | ${T0 + 1}`, 'proto | udp', 'bytes | 10', ''),
  );
  assert.is(stats.reads, readsBefore + 1);
});

meta.run();
