/**
 * Writes the seed corpus of the TypeScript fuzz targets (test/fuzz/seeds/<target>/): valid inputs
 * of each parser, made by hand here so a mutation starts from something the parser accepts.
 *
 *   npx tsx test/fuzz/tsSeeds.ts
 *
 * Regression inputs found by fuzzing go in the same folders by hand (`crash-<what>`); this script
 * only (re)writes its own `seed-*` files.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { serializeHdQuery } from '../../query/hdQuery';

const root = path.resolve(__dirname, 'seeds');
const out = (target: string, name: string, bytes: Buffer | string): void => {
  mkdirSync(path.join(root, target), { recursive: true });
  writeFileSync(path.join(root, target, `seed-${name}`), bytes);
};
const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const i16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const cstr = (s: string): Buffer => Buffer.from(`${s}\0`, 'utf8');
const typed = (code: string, body: Buffer): Buffer => Buffer.concat([Buffer.from(code), i32(body.length + 4), body]);
const startup = (body: Buffer): Buffer => Buffer.concat([i32(body.length + 4), body]);

// pgwire: first byte = chunk size for the split run, then the stream.
const login = startup(Buffer.concat([i32(196608), cstr('user'), cstr('hd'), cstr('database'), cstr('hd'), cstr('application_name'), cstr('psql'), Buffer.from([0])]));
const extended = Buffer.concat([
  typed('P', Buffer.concat([cstr('s1'), cstr('SELECT $1::int'), i16(1), i32(23)])),
  typed('B', Buffer.concat([cstr(''), cstr('s1'), i16(1), i16(0), i16(1), i32(2), Buffer.from('42'), i16(1), i16(0)])),
  typed('D', Buffer.concat([Buffer.from('P'), cstr('')])),
  typed('E', Buffer.concat([cstr(''), i32(0)])),
  typed('C', Buffer.concat([Buffer.from('S'), cstr('s1')])),
  typed('S', Buffer.alloc(0)),
]);
out('pgwire_frontend', 'simple', Buffer.concat([Buffer.from([3]), login, typed('Q', cstr('SELECT count(*) FROM flows')), typed('X', Buffer.alloc(0))]));
out('pgwire_frontend', 'extended', Buffer.concat([Buffer.from([7]), login, extended]));
out('pgwire_frontend', 'sasl', Buffer.concat([Buffer.from([1]), login, typed('p', Buffer.concat([cstr('SCRAM-SHA-256'), i32(32), Buffer.from('n,,n=,r=rOprNGfwEbeRWgbNEkqO%hvYD')]))]));
out('pgwire_frontend', 'ssl-then-login', Buffer.concat([Buffer.from([4]), startup(i32(80877103)), login]));
out('pgwire_frontend', 'cancel', Buffer.concat([Buffer.from([0]), startup(Buffer.concat([i32(80877102), i32(1234), i32(5678)]))]));
out('pgwire_sasl', 'scram', Buffer.concat([cstr('SCRAM-SHA-256'), i32(32), Buffer.from('n,,n=,r=rOprNGfwEbeRWgbNEkqO%hvYD')]));
out('pgwire_sasl', 'plus', Buffer.concat([cstr('SCRAM-SHA-256-PLUS'), i32(-1)]));

// Flight SQL: google.protobuf.Any { type_url = 1, value = 2 } around a command message.
const varint = (n: number): Buffer => {
  const b: number[] = [];
  while (n > 0x7f) {
    b.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  b.push(n);
  return Buffer.from(b);
};
const field = (no: number, v: Buffer): Buffer => Buffer.concat([varint((no << 3) | 2), varint(v.length), v]);
const any = (name: string, value: Buffer): Buffer => Buffer.concat([field(1, Buffer.from(`type.googleapis.com/arrow.flight.protocol.sql.${name}`)), field(2, value)]);
out('flight_sql_command', 'statement', any('CommandStatementQuery', field(1, Buffer.from('SELECT 1'))));
out('flight_sql_command', 'prepared', any('CommandPreparedStatementQuery', field(1, Buffer.from('handle-1'))));
out('flight_sql_command', 'tables', any('CommandGetTables', Buffer.concat([field(1, Buffer.from('hd')), field(3, Buffer.from('fl%')), field(4, Buffer.from('TABLE')), Buffer.from([0x28, 1])])));
out('flight_sql_command', 'catalogs', any('CommandGetCatalogs', Buffer.alloc(0)));
out('flight_sql_command', 'sqlinfo', any('CommandGetSqlInfo', Buffer.from([0x08, 0x00, 0x08, 0x01])));
out('flight_sql_command', 'update', any('CommandStatementUpdate', field(1, Buffer.from('DELETE FROM flows'))));

out(
  'hd_query_json',
  'query',
  serializeHdQuery({
    queryId: 7,
    dataset: 'flows',
    batchIds: ['00'.repeat(64)],
    subQueries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }],
    targets: [],
    verifyHash: true,
    queryQos: 8,
    returnAddress: { host: '127.0.0.1', port: 6989 },
    token: Buffer.alloc(16, 1),
  }),
);

out('aggregate_partial', 'v1', '{"v":1,"groups":[{"k":["6","1700000000"],"m":["1234","99887766","17"]}]}');
out('aggregate_partial', 'v2', `{"v":2,"batches":[["${'0a'.repeat(64)}",12],["${'0b'.repeat(64)}",0]],"groups":[{"k":[],"m":["12"]}]}`);

out('http_sql_body', 'select', '{"sql":"SELECT count(*) FROM flows WHERE dst_port = 443"}');
out('http_sql_body', 'params', '{"sql":"SELECT $1","params":[1,"a",null,true]}');
out('proxy_policy_body', 'put', JSON.stringify({ version: 4, rego: 'package hd.authz\nimport rego.v1\ndefault allow := true\n', data: { hidden: { guest: ['src_ip'] } } }));
out('dms_registration_body', 'scc', JSON.stringify({ role: 'scc', name: 'scc1', addresses: { control: { host: '127.0.0.1', port: 6986 }, production: { host: '127.0.0.1', port: 6987 }, grpc: { host: '127.0.0.1', port: 50051 } } }));
out('schema_json', 'flows.json', readFileSync(path.resolve(__dirname, '../../up/demo/flows.schema.json')));
out('schema_json', 'chess.json', readFileSync(path.resolve(__dirname, '../../up/demo/chess.schema.json')));
out('kafka_payload', 'ndjson', Buffer.concat([Buffer.from([0]), Buffer.from('{"ts":1700000042,"src_ip":"10.1.2.3","dst_port":443,"proto":"tcp","bytes":10164,"app":"web","ratio":0.5}\n{"ts":"2024-01-01T00:00:00Z","proto":17}\nnot json\n\n')]));
out('kafka_payload', 'csv', Buffer.concat([Buffer.from([1]), Buffer.from('ts,src_ip,dst_port,proto,bytes,app,ratio\n1700000042,10.1.2.3,443,tcp,10164,"a,b",1e3\n1,x,70000,udp,,,\n')]));
out('rego_input', 'analyst', JSON.stringify({ role: 'analyst', email: 'ann@example.com', dataset: 'flows', fields: ['ts', 'src_ip'], query: { sub_queries: [] } }));
out('rego_input', 'guest', JSON.stringify({ role: 'guest', email: 'g@x' }));
