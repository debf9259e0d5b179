/**
 * hd_sql's Arrow Flight SQL door as a real process (`hd run pipelines/sql.yaml`) in front of a real
 * SCC and Storage Nodes, asked by a Flight SQL client from outside the project — ADBC's Flight SQL
 * driver (PyPI, installed by scripts/flightsql-client.sh, driven by test/sql/clients/flightsql_client.py):
 * statement queries answer the same rows as the HTTP door, a prepared statement binds parameters,
 * the catalog (get_objects, table schema, table types, SqlInfo) describes the datasets, and errors
 * carry the reference's gRPC status. Malformed requests (garbage Any, tickets, descriptors, actions,
 * DoPut streams) are sent with @grpc/grpc-js, the messages encoded by protobufjs from
 * sql/flight/*.proto (an encoder independent of the door's own).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startCluster, type Cluster } from '../support/cluster';
import { flowsFixture, flowsSchemaJson, ingestFlows } from './flowsFixture';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import * as fc from './flightClient';
import { any, anyOf, cmdDescriptor, dec, enc, ticket, type Status } from './flightClient';

const ROOT = path.resolve(__dirname, '../..');
const schemaJson = flowsSchemaJson;
const FIXTURE = flowsFixture(3, 300);
const { t0: T0, batches: BATCHES, all } = FIXTURE;
const WINDOW = FIXTURE.window;


const fs = suite('hd_sql Arrow Flight SQL door: ADBC Flight SQL driver against a real cluster');
let cluster: Cluster;
let sql: HdProcess;
let dir: string;
let python = '';
const ports = { flight: 0, http: 0, ret: 0 };
const run = promisify(execFile);

/** Runs the ADBC client with `steps`; answers one JSON value per step. */
function adbc(steps: unknown[]): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const c = spawn(python, [path.join(ROOT, 'test/sql/clients/flightsql_client.py'), `grpc://127.0.0.1:${ports.flight}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.once('error', reject);
    c.once('exit', (code: number | null) => (code === 0 ? resolve(JSON.parse(out) as unknown[]) : reject(new Error(`flightsql_client.py exited ${code}: ${err}\n${sql.output()}`))));
    c.stdin.end(JSON.stringify(steps));
  });
}

async function httpRows(q: string): Promise<unknown[][]> {
  const r = await fetch(`http://127.0.0.1:${ports.http}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: q }) });
  assert.is(r.status, 200, await r.clone().text());
  return ((await r.json()) as { rows: unknown[][] }).rows;
}

fs.before(async () => {
  await run('bash', [path.join(ROOT, 'scripts/flightsql-client.sh'), 'install'], { cwd: ROOT });
  python = path.join(ROOT, '.hd/test-deps/flightsql/bin/python');
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-flightsql-'));
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', 'flows.json'), schemaJson);
  cluster = await startCluster({ recordSize: 64, schemas: [schemaJson] });
  await ingestFlows(cluster, FIXTURE);
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  sql = startHd(['run', 'pipelines/sql.yaml', '--quiet'], {
    HD_SQL_SCC_TARGETS: `${cluster.host}:${cluster.scc.productionPort}:${cluster.scc.queryGrpcPort}`,
    HD_SQL_SCHEMA_DIR: path.join(dir, 'schemas'),
    PLATFORM_DATA_RETURN_HOST: '127.0.0.1',
    PLATFORM_DATA_RETURN_PORT: String(ports.ret),
    HD_SQL_PGWIRE_ENABLED: 'false',
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${ports.http}`,
    HD_SQL_FLIGHTSQL_ADDRESS: `127.0.0.1:${ports.flight}`,
    OBSERVABILITY_PORT: '-1',
    HD_SQL_THREADS: '1',
  });
  await waitForPort('127.0.0.1', ports.flight, sql, 60_000);
});
fs.after(async () => {
  await sql?.stop();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

fs('start-up says where the Flight SQL door listens and how to connect', async () => {
  // The line follows the door's bind: it may reach this process's pipe a moment after the port opened.
  const line = `Arrow Flight SQL on 127.0.0.1:${ports.flight} — grpc://127.0.0.1:${ports.flight}`;
  for (let k = 0; k < 100 && !sql.output().includes(line); k++) await new Promise((r) => setTimeout(r, 50));
  assert.match(sql.output(), line);
  assert.not.match(sql.output(), /not implemented yet/);
});

fs('statement queries (GetFlightInfo + DoGet) answer the same rows as the HTTP door', async () => {
  const queries = [
    `SELECT ts, dst_port, proto, bytes FROM flows WHERE ${WINDOW} AND proto = 'icmp' AND bytes < 200 ORDER BY ts, bytes`,
    `SELECT proto, count(*) AS n, sum(bytes) AS b FROM flows WHERE ${WINDOW} GROUP BY proto ORDER BY proto`,
    `SELECT ts, bytes FROM "Network flows" WHERE ${WINDOW} ORDER BY ts, bytes`,
    'SHOW TABLES',
    `SELECT ts FROM flows WHERE ${WINDOW} AND bytes < 0`,
    "SELECT [1, 2] AS a, 'x' AS b, NULL AS c",
  ];
  const got = (await adbc(queries.map((q) => ({ op: 'query', sql: q })))) as { rows?: unknown[][]; columns?: string[][]; error?: unknown }[];
  for (const [i, q] of queries.entries()) {
    assert.equal(got[i]?.error, undefined, JSON.stringify(got[i]));
    assert.equal(got[i]?.rows, await httpRows(q), q);
  }
  // The whole window: every ingested record, across several record batches.
  assert.is(got[2]?.rows?.length, all.length);
  const icmp = all.filter((f) => f.proto === 'icmp' && f.bytes < 200).sort((a, b) => a.ts - b.ts || a.bytes - b.bytes);
  assert.equal(got[0]?.rows, icmp.map((f) => [f.ts, f.dst_port, 'icmp', f.bytes]));
  assert.equal(got[0]?.columns?.map((c) => c[0]), ['ts', 'dst_port', 'proto', 'bytes']);
});

fs('a prepared statement binds parameters through DoPut and runs once per binding', async () => {
  const q = 'SELECT count(*) AS n, sum(bytes)::BIGINT AS b FROM flows WHERE ts >= $1 AND ts < $2 AND dst_port = $3';
  const bindings = [
    [T0, T0 + 60, 443],
    [T0, T0 + BATCHES * 60, 22],
  ];
  const [r, qmarks] = (await adbc([
    { op: 'prepared', sql: q, params: bindings },
    { op: 'prepared', sql: q.replace(/\$\d/g, '?'), params: bindings },
  ])) as { runs?: { rows: unknown[][] }[]; error?: unknown }[];
  assert.equal(r?.error, undefined, JSON.stringify(r));
  assert.equal(qmarks?.runs, r?.runs, JSON.stringify(qmarks));
  assert.equal(
    r?.runs?.map((x) => x.rows),
    bindings.map(([from, to, port]) => {
      const fs = all.filter((f) => f.ts >= (from as number) && f.ts < (to as number) && f.dst_port === port);
      return [[fs.length, fs.reduce((s, f) => s + f.bytes, 0)]];
    }),
  );
});

fs('catalog: get_objects, table schema, table types and SqlInfo describe the datasets', async () => {
  const [objects, schema, types, info, resultSchema] = (await adbc([{ op: 'objects' }, { op: 'table_schema', table: 'flows' }, { op: 'table_types' }, { op: 'info' }, { op: 'schema', sql: 'SELECT ts, proto, count(*) AS n FROM flows GROUP BY ALL' }])) as [
    { catalog_name: string; catalog_db_schemas: { db_schema_name: string; db_schema_tables: { table_name: string; table_type: string; table_columns: { column_name: string; ordinal_position: number }[] }[] }[] }[],
    string[][],
    string[],
    Record<string, unknown>,
    string[][],
  ];
  const fields = (JSON.parse(schemaJson) as { fields: { name: string }[] }).fields.map((f) => f.name);
  assert.is(objects.length, 1, JSON.stringify(objects));
  assert.is(objects[0]?.catalog_name, 'hd');
  const s = objects[0]?.catalog_db_schemas[0];
  assert.is(s?.db_schema_name, 'public');
  assert.equal(s?.db_schema_tables.map((t) => [t.table_name, t.table_type]), [['flows', 'TABLE']]);
  assert.equal(s?.db_schema_tables[0]?.table_columns.map((c) => c.column_name), fields);
  assert.equal(s?.db_schema_tables[0]?.table_columns.map((c) => c.ordinal_position), fields.map((_, i) => i + 1));
  // The table schema is the one queries answer with (enum labels as text, counters as integers).
  assert.equal(schema.map((c) => c[0]), fields);
  assert.match(String(schema.find((c) => c[0] === 'proto')?.[1]), /string/);
  assert.is(schema.find((c) => c[0] === 'ts')?.[1], 'int64');
  assert.equal(types, ['TABLE']);
  assert.is(info['vendor_name'], 'hd_sql');
  assert.type(info['vendor_version'], 'string');
  assert.equal(resultSchema.map((c) => c[0]), ['ts', 'proto', 'n'], JSON.stringify(resultSchema));
  assert.is(resultSchema[2]?.[1], 'int64');
});

fs('errors carry the reference gRPC status and SQLSTATE: unknown table, syntax error, a write', async () => {
  const [missing, syntax, write, prepMissing] = (await adbc([
    { op: 'query', sql: 'SELECT * FROM nope' },
    { op: 'query', sql: 'SELEC 1' },
    { op: 'query', sql: 'DELETE FROM flows' },
    { op: 'prepared', sql: 'SELECT * FROM nope WHERE ts > $1', params: [[1]] },
  ])) as { error: { status: string; message: string } }[];
  assert.is(missing?.error.status, 'NOT_FOUND');
  assert.match(missing?.error.message ?? '', /\(NotFound;/);
  assert.match(missing?.error.message ?? '', /nope.*SQLSTATE 42P01/);
  assert.is(syntax?.error.status, 'INVALID_ARGUMENT');
  assert.match(syntax?.error.message ?? '', /\(InvalidArgument;/);
  assert.match(syntax?.error.message ?? '', /SQLSTATE 42601/);
  assert.is(write?.error.status, 'NOT_IMPLEMENTED');
  assert.match(write?.error.message ?? '', /\(Unimplemented;.*/);
  assert.match(write?.error.message ?? '', /SQLSTATE 0A000/);
  assert.is(prepMissing?.error.status, 'NOT_FOUND');
});

fs('notices (here: the default lookback applied) go to the service log', async () => {
  const [r] = (await adbc([{ op: 'query', sql: 'SELECT count(*) AS n FROM flows' }])) as { rows?: unknown[][] }[];
  assert.ok(r?.rows, JSON.stringify(r));
  assert.match(sql.output(), /Flight SQL notice: .*HD_SQL_DEFAULT_LOOKBACK_SEC|Flight SQL notice: .*lookback/i);
});

// --- malformed input over @grpc/grpc-js ---------------------------------------------------------

const addr = (): string => `127.0.0.1:${ports.flight}`;
const unary = (name: 'GetFlightInfo' | 'GetSchema', req: Buffer): Promise<{ ok?: Buffer; err?: Status }> => fc.unary(addr(), name, req);
const serverStream = (name: 'DoGet' | 'DoAction', req: Buffer): Promise<{ messages: Buffer[]; err?: Status }> => fc.serverStream(addr(), name, req);
const duplex = (name: 'DoPut' | 'DoExchange', reqs: Buffer[]): Promise<{ messages: Buffer[]; err?: Status }> => fc.duplex(addr(), name, reqs);

fs('grpc-js: the door’s FlightInfo and DoGet stream decode with protobufjs and apache-arrow', async () => {
  const q = `SELECT ts, proto FROM flows WHERE ${WINDOW} ORDER BY ts LIMIT 5`;
  const r = await fc.fetchCommand(addr(), any('CommandStatementQuery', { query: q }));
  assert.equal(r.err, undefined);
  assert.equal(r.schema?.fields.map((f) => f.name), ['ts', 'proto']);
  assert.equal(r.table?.toArray().map((x: { ts: bigint; proto: string }) => `${Number(x.ts)}:${x.proto}`), all.map((f) => f).sort((a, b) => a.ts - b.ts).slice(0, 5).map((f) => `${f.ts}:${f.proto}`));
});

fs('grpc-js: garbage descriptors, Any, tickets, actions and DoPut streams answer InvalidArgument / Unimplemented naming the problem', async () => {
  const INVALID = grpc.status.INVALID_ARGUMENT;
  const cases: [string, Promise<{ err?: Status }>, number, RegExp][] = [
    ['descriptor not protobuf', unary('GetFlightInfo', Buffer.from([0x0a, 0xff, 0xff])), INVALID, /malformed protobuf/],
    ['PATH descriptor', unary('GetFlightInfo', enc('arrow.flight.protocol.FlightDescriptor', { type: 1, path: ['flows'] })), INVALID, /only CMD descriptors/],
    ['cmd not an Any', unary('GetFlightInfo', cmdDescriptor(Buffer.from('SELECT 1'))), INVALID, /not a Flight SQL command/],
    ['Any of another type', unary('GetSchema', cmdDescriptor(anyOf('type.googleapis.com/foo.Bar', Buffer.from([1])))), INVALID, /foo\.Bar.*not a Flight SQL command/],
    ['Any with a bad value', unary('GetFlightInfo', cmdDescriptor(anyOf('type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery', Buffer.from([0x0a, 0x05, 0x41])))), INVALID, /malformed protobuf/],
    ['unimplemented command', unary('GetFlightInfo', cmdDescriptor(anyOf('type.googleapis.com/arrow.flight.protocol.sql.CommandGetXdbcTypeInfo', Buffer.alloc(0)))), grpc.status.UNIMPLEMENTED, /CommandGetXdbcTypeInfo is not implemented/],
    ['update command', unary('GetFlightInfo', cmdDescriptor(any('CommandStatementUpdate', { query: 'DELETE FROM flows' }))), grpc.status.UNIMPLEMENTED, /read-only/],
    ['garbage ticket', serverStream('DoGet', ticket(Buffer.from('not a ticket at all'))), INVALID, /Ticket: not a Flight SQL command/],
    ['ticket not protobuf', serverStream('DoGet', Buffer.from([0xff])), INVALID, /malformed protobuf/],
    ['forged statement handle', serverStream('DoGet', ticket(any('TicketStatementQuery', { statement_handle: Buffer.from('{nope') }))), INVALID, /not one this server issued/],
    ['unknown prepared handle', serverStream('DoGet', ticket(any('CommandPreparedStatementQuery', { prepared_statement_handle: Buffer.from('x') }))), INVALID, /unknown prepared statement handle/],
    ['unknown action', serverStream('DoAction', enc('arrow.flight.protocol.Action', { type: 'DropEverything' })), grpc.status.UNIMPLEMENTED, /DropEverything/],
    ['action body not an Any', serverStream('DoAction', enc('arrow.flight.protocol.Action', { type: 'CreatePreparedStatement', body: Buffer.from([0x08]) })), INVALID, /malformed protobuf|not a Flight SQL command/],
    ['DoPut without a descriptor', duplex('DoPut', [enc('arrow.flight.protocol.FlightData', { data_header: Buffer.from([1, 2]) })]), INVALID, /FlightDescriptor/],
    ['DoPut not protobuf', duplex('DoPut', [Buffer.from([0x0a, 0x7f])]), INVALID, /malformed protobuf/],
    ['DoExchange', duplex('DoExchange', []), grpc.status.UNIMPLEMENTED, /DoExchange is not supported/],
    ['SqlInfo ids truncated', unary('GetFlightInfo', cmdDescriptor(anyOf('type.googleapis.com/arrow.flight.protocol.sql.CommandGetSqlInfo', Buffer.from([0x0a, 0x01, 0x80])))), INVALID, /truncated packed varint/],
    ['GetTables with a bad field type', unary('GetSchema', cmdDescriptor(anyOf('type.googleapis.com/arrow.flight.protocol.sql.CommandGetTables', Buffer.from([0x28, 0x01, 0x0a, 0x01])))), INVALID, /malformed protobuf/],
    ['GetTables include_schema as bytes', unary('GetSchema', cmdDescriptor(anyOf('type.googleapis.com/arrow.flight.protocol.sql.CommandGetTables', Buffer.from([0x2a, 0x00])))), INVALID, /include_schema.*should be a varint/],
  ];
  for (const [what, p, code, message] of cases) {
    const r = await p;
    assert.is(r.err?.code, code, `${what}: ${JSON.stringify(r.err)}`);
    assert.match(r.err?.details ?? '', message, what);
  }
  // DoPut with a prepared handle and a body that is not Arrow IPC.
  const created = await serverStream('DoAction', enc('arrow.flight.protocol.Action', { type: 'CreatePreparedStatement', body: any('ActionCreatePreparedStatementRequest', { query: 'SELECT count(*) FROM flows WHERE ts > $1' }) }));
  assert.equal(created.err, undefined);
  const anyResult = dec<{ type_url: string; value: Uint8Array }>('google.protobuf.Any', dec<{ body: Uint8Array }>('arrow.flight.protocol.Result', created.messages[0] as Buffer).body);
  assert.match(anyResult.type_url, /ActionCreatePreparedStatementResult$/);
  const handle = dec<{ prepared_statement_handle: Uint8Array }>('arrow.flight.protocol.sql.ActionCreatePreparedStatementResult', anyResult.value).prepared_statement_handle;
  const badIpc = await duplex('DoPut', [enc('arrow.flight.protocol.FlightData', { flight_descriptor: { type: 2, cmd: any('CommandPreparedStatementQuery', { prepared_statement_handle: handle }) }, data_header: Buffer.from([1, 2, 3, 4]), data_body: Buffer.from([9]) })]);
  assert.is(badIpc.err?.code, INVALID, JSON.stringify(badIpc.err));
  assert.match(badIpc.err?.details ?? '', /not an Arrow IPC stream/);
  const closed = await serverStream('DoAction', enc('arrow.flight.protocol.Action', { type: 'ClosePreparedStatement', body: any('ActionClosePreparedStatementRequest', { prepared_statement_handle: handle }) }));
  assert.equal(closed.err, undefined);
  const after = await unary('GetFlightInfo', cmdDescriptor(any('CommandPreparedStatementQuery', { prepared_statement_handle: handle })));
  assert.match(after.err?.details ?? '', /unknown prepared statement handle/);
  // The door still answers after all that.
  const [ok] = (await adbc([{ op: 'query', sql: 'SELECT 1 AS one' }])) as { rows?: unknown[][] }[];
  assert.equal(ok?.rows, [[1]]);
});

fs('SIGTERM stops the Flight SQL door with the rest', async () => {
  assert.is(await sql.stop(), 0, sql.output());
  const closed = await waitForPort('127.0.0.1', ports.flight, undefined, 300).then(
    () => false,
    () => true,
  );
  assert.ok(closed, 'the Flight SQL port still accepts connections after SIGTERM');
});

fs.run();
