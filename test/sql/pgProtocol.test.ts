/**
 * The wire door's protocol details, byte by byte: ParameterStatus at startup and when a reported
 * parameter changes; Execute row limits with PortalSuspended and where portals close; the
 * transaction status of ReadyForQuery through BEGIN / COMMIT / ROLLBACK / savepoints and a failed
 * block; several statements in one Query; SET / SHOW / RESET and every refusal with its SQLSTATE;
 * RowDescription type OIDs and typmods.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RawSession, serveDoor, startupMessage } from './pgRawSession';
import { fe, roundTrip, summary, untilReady, type Msg } from './pgWireMessages';
import { T0 } from './support';

const ROWS = 25;
const door = suite('pgwire protocol details');
const server = serveDoor(door, ROWS);

async function open(params: Record<string, string> = {}): Promise<{ s: RawSession; startup: Msg[] }> {
  const s = await RawSession.open(server.port);
  s.send(startupMessage({ user: 'tester', database: 'hd', ...params }));
  return { s, startup: await untilReady(s) };
}
const statusOf = (msgs: readonly Msg[]): string => summary(msgs).at(-1) ?? '';
const errorOf = (msgs: readonly Msg[]): Record<string, string> | undefined => msgs.find((m): m is Extract<Msg, { f: unknown }> => m.type === 'E' && 'f' in m)?.f;
const RANGE = `ts >= ${T0} AND ts < ${T0 + ROWS}`;

door('startup: ParameterStatus for what PostgreSQL reports; startup parameters applied, or the value in force reported', async () => {
  const { s, startup } = await open({ application_name: 'tool', TimeZone: 'America/New_York', DateStyle: 'ISO', options: '-c extra_float_digits=2 --search_path=public' });
  const reported = Object.fromEntries(startup.flatMap((m) => ('name' in m && 'value' in m ? [[m.name, m.value]] : [])));
  assert.equal(reported, {
    server_version: '16.0 (hd_sql)', server_encoding: 'UTF8', client_encoding: 'UTF8', DateStyle: 'ISO, MDY', TimeZone: 'UTC', IntervalStyle: 'postgres', integer_datetimes: 'on',
    standard_conforming_strings: 'on', is_superuser: 'off', session_authorization: 'tester', application_name: 'tool', default_transaction_read_only: 'on', in_hot_standby: 'off', scram_iterations: '4096',
  });
  assert.equal(summary(startup).slice(-2), ['K', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('SHOW extra_float_digits'))), ['T:extra_float_digits', 'D:2', 'C:SHOW', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('SHOW search_path'))), ['T:search_path', 'D:public', 'C:SHOW', 'Z:I']);
  s.end();
});

door('Execute with a row limit: PortalSuspended, the next Execute goes on; every row once, in order; the portal then answers SELECT 0', async () => {
  const { s } = await open();
  assert.equal(summary(await roundTrip(s, fe.query('BEGIN'))), ['C:BEGIN', 'Z:T']);
  const first = await roundTrip(s, fe.parse('q', `SELECT ts FROM flows WHERE ${RANGE} ORDER BY ts`), fe.bind('c1', 'q'), fe.describe('P', 'c1'), fe.execute('c1', 10), fe.sync());
  assert.equal(summary(first).filter((x) => !x.startsWith('D:')), ['1', '2', 'T:ts', 's', 'Z:T']);
  const rows = first.flatMap((m) => ('cells' in m ? [m.cells[0]] : []));
  const second = await roundTrip(s, fe.execute('c1', 10), fe.sync());
  assert.equal(summary(second).filter((x) => !x.startsWith('D:')), ['s', 'Z:T']);
  const third = await roundTrip(s, fe.execute('c1', 10), fe.sync());
  assert.equal(summary(third).filter((x) => !x.startsWith('D:')), ['C:SELECT 5', 'Z:T']);
  rows.push(...[...second, ...third].flatMap((m) => ('cells' in m ? [m.cells[0]] : [])));
  assert.equal(rows, Array.from({ length: ROWS }, (_, i) => String(T0 + i)));
  assert.equal(summary(await roundTrip(s, fe.execute('c1', 10), fe.sync())), ['C:SELECT 0', 'Z:T']);
  // COMMIT ends the block and closes its portals.
  assert.equal(summary(await roundTrip(s, fe.query('COMMIT'))), ['C:COMMIT', 'Z:I']);
  const gone = await roundTrip(s, fe.execute('c1', 10), fe.sync());
  assert.is(errorOf(gone)?.C, '34000');
  assert.match(errorOf(gone)?.M ?? '', /portal "c1" does not exist/);
  s.end();
});

door('portals: outside a block they close at Sync; Close closes one; a limit of 0 sends every row', async () => {
  const { s } = await open();
  const a = await roundTrip(s, fe.parse('q', `SELECT ts FROM flows WHERE ${RANGE} ORDER BY ts`), fe.bind('p', 'q'), fe.execute('p', 3), fe.sync());
  assert.equal(summary(a), ['1', '2', `D:${T0}`, `D:${T0 + 1}`, `D:${T0 + 2}`, 's', 'Z:I']);
  assert.is(errorOf(await roundTrip(s, fe.execute('p', 3), fe.sync()))?.C, '34000');
  assert.equal(summary(await roundTrip(s, fe.query('BEGIN'))), ['C:BEGIN', 'Z:T']);
  assert.equal(summary(await roundTrip(s, fe.bind('p', 'q'), fe.execute('p', 1), fe.close('P', 'p'), fe.sync())), ['2', `D:${T0}`, 's', '3', 'Z:T']);
  assert.is(errorOf(await roundTrip(s, fe.execute('p', 1), fe.sync()))?.C, '34000');
  assert.equal(statusOf(await roundTrip(s, fe.query('ROLLBACK'))), 'Z:I');
  const all = await roundTrip(s, fe.bind('', 'q'), fe.execute('', 0), fe.sync());
  assert.equal(summary(all).filter((x) => x.startsWith('D:')).length, ROWS);
  assert.ok(summary(all).includes(`C:SELECT ${ROWS}`));
  s.end();
});

door('transaction status: T inside a block, E after an error there (25P02 until ROLLBACK), I after; COMMIT of a failed block rolls back', async () => {
  const { s } = await open();
  assert.equal(summary(await roundTrip(s, fe.query('START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY'))), ['C:START TRANSACTION', 'Z:T']);
  assert.equal(summary(await roundTrip(s, fe.query('SHOW transaction_isolation'))), ['T:transaction_isolation', 'D:repeatable read', 'C:SHOW', 'Z:T']);
  assert.equal(summary(await roundTrip(s, fe.query('SELECT 1 AS one'))), ['T:one', 'D:1', 'C:SELECT 1', 'Z:T']);
  const bad = await roundTrip(s, fe.query('SELECT * FROM nope'));
  assert.equal([errorOf(bad)?.C, statusOf(bad)], ['42P01', 'Z:E']);
  const refused = await roundTrip(s, fe.query('SELECT 1'));
  assert.equal([errorOf(refused)?.C, statusOf(refused)], ['25P02', 'Z:E']);
  assert.match(errorOf(refused)?.M ?? '', /current transaction is aborted, commands ignored until end of transaction block/);
  // The extended protocol is refused the same way, and a SET too.
  assert.equal([errorOf(await roundTrip(s, fe.parse('', 'SELECT 2'), fe.sync()))?.C], ['25P02']);
  assert.is(errorOf(await roundTrip(s, fe.query("SET application_name = 'x'")))?.C, '25P02');
  assert.equal(summary(await roundTrip(s, fe.query('COMMIT'))), ['C:ROLLBACK', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('SHOW transaction_isolation'))).slice(1, 2), ['D:read committed']);
  // An error outside a block leaves the session idle.
  assert.equal(statusOf(await roundTrip(s, fe.query('SELECT * FROM nope'))), 'Z:I');
  // Extended protocol: BEGIN, then an error before Sync makes the block failed.
  const ext = await roundTrip(s, fe.parse('', 'BEGIN'), fe.bind('', ''), fe.execute(''), fe.parse('', 'SELECT * FROM nope'), fe.bind('', ''), fe.execute(''), fe.sync());
  assert.equal([summary(ext).includes('C:BEGIN'), errorOf(ext)?.C, statusOf(ext)], [true, '42P01', 'Z:E']);
  assert.equal(summary(await roundTrip(s, fe.parse('', 'ROLLBACK'), fe.bind('', ''), fe.execute(''), fe.sync())), ['1', '2', 'C:ROLLBACK', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('END'))), ['N:25P01', 'C:COMMIT', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('BEGIN; BEGIN'))), ['C:BEGIN', 'N:25001', 'C:BEGIN', 'Z:T']);
  assert.equal(summary(await roundTrip(s, fe.query('ABORT'))), ['C:ROLLBACK', 'Z:I']);
  s.end();
});

door('savepoints: ROLLBACK TO recovers a failed block and undoes the SETs after it; RELEASE; the refusals', async () => {
  const { s } = await open({ application_name: 'start' });
  assert.is(errorOf(await roundTrip(s, fe.query('SAVEPOINT a')))?.C, '25P01');
  const r = await roundTrip(s, fe.query("BEGIN; SET application_name = 'one'; SAVEPOINT a; SET application_name = 'two'"));
  assert.equal(summary(r), ['C:BEGIN', 'C:SET', 'C:SAVEPOINT', 'C:SET', 'S:application_name=two', 'Z:T']);
  assert.equal(statusOf(await roundTrip(s, fe.query('SELEC 1'))), 'Z:E');
  assert.equal(summary(await roundTrip(s, fe.query('ROLLBACK TO SAVEPOINT a'))), ['C:ROLLBACK', 'S:application_name=one', 'Z:T']);
  assert.is(errorOf(await roundTrip(s, fe.query('RELEASE nope')))?.C, '3B001');
  assert.equal(summary(await roundTrip(s, fe.query('ROLLBACK TO a; RELEASE SAVEPOINT a; ROLLBACK'))), ['C:ROLLBACK', 'C:RELEASE', 'C:ROLLBACK', 'S:application_name=start', 'Z:I']);
  s.end();
});

door('several statements in one Query run in turn; an error stops the rest; only comments answer EmptyQuery', async () => {
  const { s } = await open();
  assert.equal(summary(await roundTrip(s, fe.query("BEGIN; SELECT 1 AS a; SELECT ';' AS b; COMMIT;"))), ['C:BEGIN', 'T:a', 'D:1', 'C:SELECT 1', 'T:b', 'D:;', 'C:SELECT 1', 'C:COMMIT', 'Z:I']);
  const stopped = await roundTrip(s, fe.query('SELECT 1 AS a; SELEC 2; SELECT 3 AS c'));
  assert.equal(summary(stopped), ['T:a', 'D:1', 'C:SELECT 1', 'E:42601', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('-- nothing\n; /* here */'))), ['I', 'Z:I']);
  assert.is(errorOf(await roundTrip(s, fe.parse('two', 'SELECT 1; SELECT 2'), fe.sync()))?.C, '42601');
  s.end();
});

door('SET: client parameters accepted (ParameterStatus when reported); what hd_sql cannot honour, read-only and unknown names refused', async () => {
  const { s } = await open();
  assert.equal(summary(await roundTrip(s, fe.query("SET application_name = 'bi tool'"))), ['C:SET', 'S:application_name=bi tool', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('SET DateStyle = ISO, DMY'))), ['C:SET', 'S:DateStyle=ISO, DMY', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query("SET TIME ZONE 'Etc/UTC'; SET extra_float_digits TO 3; SET search_path = public, \"$user\"; SET statement_timeout = '5s'; SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY; SET NAMES 'utf8'; SET enable_seqscan = off; SET myapp.tenant = 'a'"))).filter((x) => x !== 'C:SET'), ['Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('SHOW search_path'))).slice(0, 2), ['T:search_path', 'D:public, "$user"']);
  assert.equal(summary(await roundTrip(s, fe.query('SHOW TIME ZONE'))).slice(0, 2), ['T:TimeZone', 'D:UTC']);
  assert.equal(summary(await roundTrip(s, fe.query('show datestyle'))).slice(0, 2), ['T:DateStyle', 'D:ISO, DMY']);
  const refusals: [string, string, RegExp][] = [
    ["SET TimeZone = 'America/New_York'", '22023', /invalid value for parameter "TimeZone"/],
    ["SET DateStyle = 'German'", '22023', /DateStyle/],
    ["SET client_encoding = 'LATIN1'", '22023', /client_encoding/],
    ["SET bytea_output = 'escape'", '22023', /bytea_output/],
    ['SET extra_float_digits = 9', '22023', /outside the valid range for parameter "extra_float_digits" \(-15 \.\. 3\)/],
    ['SET threads = 1', '42704', /unrecognized configuration parameter "threads"/],
    ["SET enable_external_access = 'true'", '42704', /unrecognized configuration parameter "enable_external_access"/],
    ["SET server_version = '99'", '55P02', /parameter "server_version" cannot be changed/],
    ['SET ROLE postgres', '42501', /permission denied to set role "postgres"/],
    ['SET SESSION AUTHORIZATION postgres', '42501', /permission denied to set session authorization/],
    ['SHOW no_such_setting', '42704', /unrecognized configuration parameter "no_such_setting"/],
    ['RESET integer_datetimes', '55P02', /cannot be changed/],
    ['SET = 1', '42601', /syntax error/],
    ['DEALLOCATE nope', '26000', /prepared statement "nope" does not exist/],
    ['CLOSE c', '34000', /cursor "c" does not exist/],
  ];
  for (const [sql, code, re] of refusals) {
    const e = errorOf(await roundTrip(s, fe.query(sql)));
    assert.is(e?.C, code, sql);
    assert.match(e?.M ?? '', re, sql);
  }
  // The values stand after the refusals; the hint says what is accepted.
  assert.equal(summary(await roundTrip(s, fe.query('SHOW TimeZone'))).slice(1, 2), ['D:UTC']);
  assert.equal(summary(await roundTrip(s, fe.query('SET ROLE NONE; SET SESSION AUTHORIZATION DEFAULT; SET LOCAL application_name = x; RESET application_name; RESET ALL'))), ['C:SET', 'C:SET', 'N:25P01', 'C:SET', 'C:RESET', 'C:RESET', 'S:DateStyle=ISO, MDY', 'S:application_name=', 'Z:I']);
  s.end();
});

door('DISCARD ALL drops prepared statements and resets parameters (refused inside a block); DEALLOCATE drops one', async () => {
  const { s } = await open();
  await roundTrip(s, fe.parse('keep', 'SELECT 1 AS one'), fe.parse('drop', 'SELECT 2 AS two'), fe.sync());
  assert.equal(summary(await roundTrip(s, fe.query('DEALLOCATE drop'))), ['C:DEALLOCATE', 'Z:I']);
  assert.is(errorOf(await roundTrip(s, fe.bind('', 'drop'), fe.sync()))?.C, '26000');
  assert.equal(summary(await roundTrip(s, fe.bind('', 'keep'), fe.execute(''), fe.sync())), ['2', 'D:1', 'C:SELECT 1', 'Z:I']);
  assert.equal(summary(await roundTrip(s, fe.query('BEGIN; DISCARD ALL'))), ['C:BEGIN', 'E:25001', 'Z:E']);
  await roundTrip(s, fe.query('ROLLBACK'));
  assert.equal(summary(await roundTrip(s, fe.query("SET application_name = 'x'; DISCARD ALL"))), ['C:SET', 'C:DISCARD ALL', 'Z:I']);
  assert.is(errorOf(await roundTrip(s, fe.bind('', 'keep'), fe.sync()))?.C, '26000');
  s.end();
});

door('client_min_messages = warning holds back notices (the default lookback notice), not warnings', async () => {
  const { s } = await open();
  const sql = 'SELECT count(*) AS n FROM flows';
  assert.ok(summary(await roundTrip(s, fe.query(sql))).includes('N:01000'));
  await roundTrip(s, fe.query('SET client_min_messages = warning'));
  assert.not.ok(summary(await roundTrip(s, fe.query(sql))).includes('N:01000'));
  assert.ok(summary(await roundTrip(s, fe.query('COMMIT'))).includes('N:25P01'));
  assert.is(errorOf(await roundTrip(s, fe.query('SET client_min_messages = loud')))?.C, '22023');
  s.end();
});

door('RowDescription: OIDs and typmods drivers map (numeric(p,s), arrays, hugeint, time, timestamps, bytea); values in PostgreSQL text', async () => {
  const { s } = await open();
  const sql =
    "SELECT 2.50::DECIMAL(5,2) AS d, [1.5]::DECIMAL(4,1)[] AS da, 12345678901234567890::HUGEINT AS h, TIME '12:34:56.5' AS tm, TIMESTAMP '2024-01-02 03:04:05.123456' AS ts, " +
    "TIMESTAMPTZ '2024-01-02 03:04:05.5+00' AS tz, [DATE '2024-01-02'] AS dd, [TIMESTAMP '2024-01-02 00:00:01'] AS tsa, '\\x01ab'::BLOB AS b, 7::SMALLINT AS s2, 7 AS s4, 7::BIGINT AS s8, 1.5::REAL AS f4, 1.5::DOUBLE AS f8, true AS bo, 'x' AS t, [[1, 2], [3]] AS nested, 1::UBIGINT AS ub";
  const r = await roundTrip(s, fe.query(sql));
  const t = r.find((m): m is Extract<Msg, { fields: unknown }> => 'fields' in m);
  assert.equal(t?.fields.map((f) => `${f.name}:${f.oid}:${f.typmod}`), [
    'd:1700:327686', 'da:1231:262149', 'h:1700:-1', 'tm:1083:-1', 'ts:1114:-1', 'tz:1184:-1', 'dd:1182:-1', 'tsa:1115:-1', 'b:17:-1', 's2:21:-1', 's4:23:-1', 's8:20:-1', 'f4:700:-1', 'f8:701:-1', 'bo:16:-1', 't:25:-1', 'nested:1007:-1', 'ub:1700:-1',
  ]);
  const d = r.find((m): m is Extract<Msg, { cells: unknown }> => 'cells' in m);
  assert.equal(d?.cells, ['2.50', '{1.5}', '12345678901234567890', '12:34:56.5', '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.5+00', '{2024-01-02}', '{"2024-01-02 00:00:01"}', '\\x016162', '7', '7', '7', '1.5', '1.5', 't', 'x', '{{1,2},{3}}', '1']);
  s.end();
});

door.run();
