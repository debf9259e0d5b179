/**
 * The PostgreSQL catalog (sql/pgcatalog/) through drivers from outside the project, all over one
 * engine: pgjdbc's DatabaseMetaData calls a GUI tool makes on connecting and opening a table
 * (test/sql/clients/PgJdbcClient.java `metadata`), psycopg 3 and node-postgres reading pg_catalog and
 * information_schema, and ADBC Flight SQL's GetObjects / GetTableSchema — the same datasets with the
 * same columns and types everywhere. Catalog calls read nothing from the Storage Nodes.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { Catalog } from '../../sql/catalog';
import { FlightSqlServer } from '../../sql/flight/flightServer';
import { PgServer } from '../../sql/pgwire/pgServer';
import { flowsSchema, memoryEngine } from './support';
import { Schema } from '../../engine-rs/schema';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

/** A second dataset with the types the first lacks: numeric(p,s), double, arrays, an enum array. */
const events = Schema.parse({
  id: 'events',
  name: 'App events',
  record_size: 40,
  time_field: 'ts',
  enums: { level: { values: { info: 1, warn: 2 }, default_label: 'other' } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'price', offset: 8, size: 8, type: 'numeric', precision: 12, scale: 2 },
    { name: 'ratio', offset: 16, size: 8, type: 'double' },
    { name: 'samples', offset: 24, size: 8, type: 'bytes', array: { element: 'uint16', count: 4 } },
    { name: 'levels', offset: 32, size: 2, type: 'bytes', array: { element: 'uint8', count: 2, enum: 'level' } },
    { name: 'big', offset: 34, size: 1, type: 'int8' },
  ],
});

const { engine, local, stats } = memoryEngine(300);
engine.setCatalog(new Catalog([flowsSchema, events]));
const pgServer = new PgServer(engine, { host: '127.0.0.1', port: 0 });
const flight = new FlightSqlServer(engine, { host: '127.0.0.1', port: 0, log: () => undefined });
let pgPort = 0;
let flightPort = 0;
let python = '';
let jar = '';
let flightPython = '';

const clients = suite('the PostgreSQL catalog through pgjdbc, psycopg, node-postgres and ADBC Flight SQL');

clients.before(async () => {
  await run('bash', [path.join(ROOT, 'scripts/pg-clients.sh'), 'install'], { cwd: ROOT, timeout: 480_000, maxBuffer: 16 << 20 });
  [python, jar] = (await run('bash', [path.join(ROOT, 'scripts/pg-clients.sh'), 'paths'], { cwd: ROOT })).stdout.trim().split('\n') as [string, string];
  await run('bash', [path.join(ROOT, 'scripts/flightsql-client.sh'), 'install'], { cwd: ROOT, timeout: 480_000, maxBuffer: 16 << 20 });
  flightPython = (await run('bash', [path.join(ROOT, 'scripts/flightsql-client.sh'), 'python'], { cwd: ROOT })).stdout.trim();
  pgPort = (await pgServer.listen()).port;
  flightPort = (await flight.listen()).port;
});
clients.after(async () => {
  await pgServer.close();
  await flight.close();
  await local.close();
});

/** The datasets' columns as the catalog says: [table, column, format_type, typname]. */
const COLUMNS_SQL = `SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type, t.typname
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
  WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum`;
const INFO_SQL = 'SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY table_name, ordinal_position';

let catalogColumns: string[][] = [];

clients('node-postgres: pg_catalog and information_schema describe the datasets with the types of the type mapping', async () => {
  const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'tester', database: 'hd' });
  await c.connect();
  try {
    const before = stats.reads;
    catalogColumns = (await c.query({ text: COLUMNS_SQL, rowMode: 'array' })).rows as string[][];
    assert.equal(
      catalogColumns.filter((r) => r[0] === 'events'),
      [
        ['events', 'ts', 'bigint', 'int8'],
        ['events', 'price', 'numeric(12,2)', 'numeric'],
        ['events', 'ratio', 'double precision', 'float8'],
        ['events', 'samples', 'integer[]', '_int4'],
        ['events', 'levels', 'text[]', '_text'],
        ['events', 'big', 'smallint', 'int2'],
      ],
    );
    const info = (await c.query({ text: INFO_SQL, rowMode: 'array' })).rows as string[][];
    // information_schema says the same types (data_type is the type mapping's text).
    assert.equal(info, catalogColumns.map((r) => [r[0], r[1], r[2]]));
    // A prepared catalog statement with a parameter (what drivers' type caches send), and ::regclass.
    const t = await c.query({ text: 'SELECT typname FROM pg_catalog.pg_type WHERE oid = $1', values: [1231] });
    assert.equal(t.rows, [{ typname: '_numeric' }]);
    const r = await c.query("SELECT 'events'::regclass::oid = (SELECT oid FROM pg_class WHERE relname = 'events') AS same, obj_description('flows'::regclass, 'pg_class') AS d");
    assert.equal(r.rows, [{ same: true, d: 'Network flows' }]);
    assert.is(stats.reads, before, 'catalog statements dispatched no read');
  } finally {
    await c.end();
  }
});

clients('pgjdbc: every DatabaseMetaData call a GUI tool makes answers without error; catalog calls read nothing', async () => {
  const before = stats.reads;
  const { stdout } = await run('java', ['-cp', jar, path.join(__dirname, 'clients/PgJdbcClient.java'), '127.0.0.1', String(pgPort), 'tester', 'unused', 'metadata'], { timeout: 180_000, maxBuffer: 16 << 20 });
  const out = JSON.parse(stdout) as { driver: string; metadata: Record<string, { columns: string[]; rows: unknown[][] }>; errors: Record<string, unknown> };
  assert.equal(out.errors, {});
  const m = out.metadata;
  const col = (call: string, name: string): unknown[] => {
    const i = m[call]!.columns.indexOf(name);
    return m[call]!.rows.map((r) => r[i]);
  };
  assert.equal(m.getCatalogs!.rows, [['hd']]);
  assert.equal(col('getSchemas', 'TABLE_SCHEM'), ['information_schema', 'pg_catalog', 'public']);
  assert.equal(col('getTables', 'TABLE_NAME'), ['events', 'flows']);
  assert.equal(col('getTables', 'TABLE_TYPE'), ['TABLE', 'TABLE']);
  assert.equal(col('getTables', 'REMARKS'), ['App events', 'Network flows']);
  assert.ok(col('getTablesAll', 'TABLE_NAME').includes('pg_class'));
  // getColumns says what pg_catalog says: the same columns, each of the same type.
  assert.equal(col('getColumns', 'COLUMN_NAME'), catalogColumns.filter((r) => r[0] === 'flows').map((r) => r[1]));
  assert.equal(col('getColumns', 'TYPE_NAME'), catalogColumns.filter((r) => r[0] === 'flows').map((r) => r[3]));
  assert.equal(col('getColumns', 'DATA_TYPE'), ['-5', '1111', '1111', '4', '4', '12', '2', '2', '-5']);
  for (const empty of ['getPrimaryKeys', 'getIndexInfo', 'getImportedKeys', 'getExportedKeys', 'getProcedures', 'getBestRowIdentifier']) assert.equal(m[empty]!.rows, [], empty);
  assert.ok(col('getTypeInfo', 'TYPE_NAME').includes('numeric') && col('getTypeInfo', 'TYPE_NAME').includes('inet'));
  assert.ok(col('getFunctions', 'FUNCTION_NAME').includes('fen_turn'));
  assert.equal(col('getFunctionColumns', 'COLUMN_NAME'), ['returnValue', 'position', 'square']);
  // Read only: SELECT, nothing else.
  assert.equal([...new Set(col('getTablePrivileges', 'PRIVILEGE'))], ['SELECT']);
  assert.equal(m.openTable!.rows, [['10']]);
  // The one read is the table the tool opened; the metadata calls dispatched none.
  assert.is(stats.reads, before + 1);
});

clients('psycopg 3 sees the same datasets and columns', async () => {
  const script = `import json, sys, psycopg\nwith psycopg.connect(host="127.0.0.1", port=${pgPort}, user="tester", dbname="hd") as c:\n    print(json.dumps([list(r) for r in c.execute(sys.argv[1]).fetchall()]))`;
  const { stdout } = await run(python, ['-c', script, COLUMNS_SQL], { timeout: 60_000 });
  assert.equal(JSON.parse(stdout), catalogColumns);
});

/** Runs the Flight SQL client's steps against the in-process Flight door. */
function flightSteps(steps: unknown[]): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const c = spawn(flightPython, [path.join(ROOT, 'test/sql/clients/flightsql_client.py'), `grpc://127.0.0.1:${flightPort}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.once('error', reject);
    c.once('exit', (code: number | null) => (code === 0 ? resolve(JSON.parse(out) as unknown[]) : reject(new Error(`flightsql_client.py exited ${code}: ${err}`))));
    c.stdin.end(JSON.stringify(steps));
  });
}

clients('ADBC Flight SQL: GetObjects and GetTableSchema list the same tables and columns, typed as the catalog types them', async () => {
  const before = stats.reads;
  const [objects, schema] = (await flightSteps([{ op: 'objects' }, { op: 'table_schema', table: 'events' }])) as [{ catalog_name: string; catalog_db_schemas: { db_schema_name: string; db_schema_tables: { table_name: string; table_type: string; table_columns: { column_name: string; xdbc_type_name: string | null }[] }[] }[] }[], string[][]];
  assert.equal(objects.map((c) => c.catalog_name), ['hd']);
  const tables = objects[0]!.catalog_db_schemas.flatMap((s) => s.db_schema_tables.map((t) => ({ schema: s.db_schema_name, ...t })));
  assert.equal(tables.map((t) => `${t.schema}.${t.table_name}:${t.table_type}`).sort(), ['public.events:TABLE', 'public.flows:TABLE']);
  const flightColumns = tables.flatMap((t) => t.table_columns.map((c) => [t.table_name, c.column_name, c.xdbc_type_name]));
  const sorted = (rows: unknown[][]): unknown[][] => [...rows].sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  assert.equal(sorted(flightColumns), sorted(catalogColumns.map((r) => [r[0], r[1], r[2]])));
  assert.equal(schema.map((f) => f[0]), ['ts', 'price', 'ratio', 'samples', 'levels', 'big']);
  assert.is(stats.reads, before, 'GetObjects and GetTableSchema dispatched no read');
});

clients.run();
