/**
 * Security issue #14, item 6: resource limits before authentication and per user, each attack made
 * against a real hd_sql process (`hd run pipelines/sql.yaml`, a password on every door): an
 * oversized startup packet (claimed at once, and dripped a byte at a time) and an oversized SASL
 * message are refused as soon as their length is read; a client that never logs in is closed after
 * HD_SQL_LOGIN_TIMEOUT_MS; the N+1th connection gets 53300; too many prepared statements (PostgreSQL
 * wire and Flight SQL) and a DoPut past its byte cap are refused; HD_SQL_MAX_ROWS stops DuckDB
 * producing rows instead of cutting a finished result. The slow reader and the cancel of a waiting
 * read are in resourceLimitsStreaming.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FlightWriter } from '../../sql/flight/flightProto';
import { any, cmdDescriptor, enc } from '../sql/flightClient';
import { saslInitial, startupMessage, typedMessage } from '../sql/pgRawSession';
import { freePort, waitForPort, type HdProcess } from '../support/hdProcess';
import { basic, flightClient, handshake, startSql } from './doorSupport';
import { PgSocket, putWith, streamWith } from './limitsSupport';

const PASSWORD = 'open sesame';
const MAX_CONNECTIONS = 3;
const MAX_PREPARED = 3;
const MAX_PUT = 64 * 1024;
const MAX_ROWS = 10;
/** Guards so a test of the code before the fix ends; never a bound on how fast the server is. */
const GUARD_MS = 30_000;

const rl = suite('resource limits: attacks on a real hd_sql before and after the login');
let dir: string;
let sql: HdProcess;
const ports = { pg: 0, flight: 0 };

rl.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-limits-'));
  writeFileSync(path.join(dir, 'password'), `${PASSWORD}\n`);
  ports.pg = await freePort();
  ports.flight = await freePort();
  sql = startSql(dir, {
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pg}`,
    HD_SQL_FLIGHTSQL_ADDRESS: `127.0.0.1:${ports.flight}`,
    HD_SQL_HTTP_ENABLED: 'false',
    HD_SQL_PGWIRE_PASSWORD_FILE: path.join(dir, 'password'),
    HD_SQL_LOGIN_TIMEOUT_MS: '1500',
    HD_SQL_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    HD_SQL_MAX_PREPARED_STATEMENTS: String(MAX_PREPARED),
    HD_SQL_FLIGHT_MAX_PUT_BYTES: String(MAX_PUT),
    HD_SQL_MAX_ROWS: String(MAX_ROWS),
  });
  for (const p of [ports.pg, ports.flight]) await waitForPort('127.0.0.1', p, sql, 120_000);
});
rl.after(async () => {
  await sql?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const client = (): pg.Client => new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'hd', password: PASSWORD, database: 'hd' });

/** A startup packet header claiming `length` bytes (protocol 3.0), with no body. */
function startupHeader(length: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeInt32BE(length, 0);
  b.writeInt32BE(196608, 4);
  return b;
}

rl('a startup packet claiming 10 MB is refused (08P01) as soon as its length is read, without waiting for its body', async () => {
  const s = await PgSocket.open(ports.pg);
  s.send(startupHeader(10 * 1024 * 1024));
  const e = await s.error();
  assert.ok(e, 'an ErrorResponse before the close');
  assert.is(e?.['C'], '08P01');
  assert.match(e?.['M'] ?? '', /startup packet length 10485760 is out of range \(8\.\.10000/);
  assert.ok(await s.closedBy(GUARD_MS), 'closed by the server');
});

rl('a startup packet claiming 10 MB dripped one byte at a time is refused once its four length bytes are in', async () => {
  const s = await PgSocket.open(ports.pg);
  const bytes = Buffer.concat([startupHeader(10 * 1024 * 1024), Buffer.alloc(64, 0x61)]);
  let sent = 0;
  const dripping = (async () => {
    for (const b of bytes) {
      if (!s.send(Buffer.from([b]))) return;
      sent++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const e = await s.error();
  await dripping;
  assert.is(e?.['C'], '08P01');
  assert.ok(await s.closedBy(GUARD_MS));
  assert.ok(sent < bytes.length, `the server closed before the drip ended (${sent} of ${bytes.length} bytes sent)`);
  // Negative and too-short lengths are refused the same way.
  for (const len of [-1, 4]) {
    const t = await PgSocket.open(ports.pg);
    t.send(startupHeader(len));
    assert.is((await t.error())?.['C'], '08P01', `length ${len}`);
  }
});

rl('before the login, a SASL message claiming 1 MB is refused (08P01); a valid startup still gets the SASL request', async () => {
  const s = await PgSocket.open(ports.pg);
  s.send(startupMessage({ user: 'hd', database: 'hd' }));
  const req = await s.until('R');
  assert.ok(req !== 'closed', 'AuthenticationSASL');
  s.send(typedMessage('p', Buffer.alloc(16), 1024 * 1024));
  const e = await s.error();
  assert.is(e?.['C'], '08P01');
  assert.match(e?.['M'] ?? '', /out of range \(4\.\.10000 before the login is done\)/);
  assert.ok(await s.closedBy(GUARD_MS));
});

rl('a client that connects and never logs in is closed after HD_SQL_LOGIN_TIMEOUT_MS: silent, and stalled in SASL', async () => {
  const silent = await PgSocket.open(ports.pg);
  assert.ok(await silent.closedBy(GUARD_MS), 'a connection that sends nothing is closed');
  const stalled = await PgSocket.open(ports.pg);
  stalled.send(startupMessage({ user: 'hd', database: 'hd' }));
  assert.ok((await stalled.until('R')) !== 'closed');
  stalled.send(saslInitial('SCRAM-SHA-256', 'n,,n=hd,r=abcdefghijklmnop'));
  const e = await stalled.error();
  assert.ok(e, 'told why');
  assert.is(e?.['C'], '08006');
  assert.match(e?.['M'] ?? '', /HD_SQL_LOGIN_TIMEOUT_MS/);
  assert.ok(await stalled.closedBy(GUARD_MS));
  // A logged-in connection is not closed by the login deadline.
  const c = client();
  await c.connect();
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  await c.end();
});

rl('the connection past HD_SQL_MAX_CONNECTIONS is refused with 53300 before its login; one closing frees a place', async () => {
  const held: pg.Client[] = [];
  try {
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const c = client();
      await c.connect();
      held.push(c);
    }
    const extra = await PgSocket.open(ports.pg);
    extra.send(startupMessage({ user: 'hd', database: 'hd' }));
    const e = await extra.error();
    assert.is(e?.['C'], '53300');
    assert.match(e?.['M'] ?? '', /too many clients already.*HD_SQL_MAX_CONNECTIONS/);
    assert.ok(await extra.closedBy(GUARD_MS));
    const refused = await client().connect().then(
      () => undefined,
      (err: { code?: string }) => err.code,
    );
    assert.is(refused, '53300', 'node-postgres sees 53300 too');
    await (held.pop() as pg.Client).end();
    // The place is free once the server has seen the close.
    let again: pg.Client | undefined;
    for (let i = 0; i < 50 && !again; i++) {
      const c = client();
      again = await c.connect().then(
        () => c,
        () => undefined,
      );
      if (!again) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(again, 'a connection fits again');
    held.push(again as pg.Client);
  } finally {
    for (const c of held) await c.end().catch(() => undefined);
  }
});

rl('PostgreSQL wire: the prepared statement past HD_SQL_MAX_PREPARED_STATEMENTS on one connection is refused (53400); closing one makes room', async () => {
  const c = client();
  await c.connect();
  try {
    for (let i = 0; i < MAX_PREPARED; i++) await c.query({ name: `s${i}`, text: `SELECT ${i} AS n` });
    const err = await c.query({ name: `s${MAX_PREPARED}`, text: 'SELECT 42 AS n' }).then(
      () => undefined,
      (e: { code?: string; message: string }) => e,
    );
    assert.is(err?.code, '53400');
    assert.match(err?.message ?? '', /HD_SQL_MAX_PREPARED_STATEMENTS/);
    // The connection still answers, and the statements it holds still run.
    assert.equal((await c.query({ name: 's0', text: 'SELECT 0 AS n' })).rows, [{ n: 0 }]);
  } finally {
    await c.end();
  }
});

/** The Flight door's Bearer token for the password. */
async function flightToken(c: ReturnType<typeof flightClient>): Promise<string> {
  const h = await handshake(c, basic('hd', PASSWORD));
  assert.ok(h.token, `handshake: ${JSON.stringify(h.err)}`);
  return h.token as string;
}

rl('Flight SQL: the prepared statement past HD_SQL_MAX_PREPARED_STATEMENTS of one peer is refused with RESOURCE_EXHAUSTED', async () => {
  const c = flightClient(`127.0.0.1:${ports.flight}`);
  try {
    const auth = await flightToken(c);
    const create = (q: string): Buffer => enc('arrow.flight.protocol.Action', { type: 'CreatePreparedStatement', body: any('ActionCreatePreparedStatementRequest', { query: q }) });
    for (let i = 0; i < MAX_PREPARED; i++) {
      const r = await streamWith(c, 'DoAction', create(`SELECT ${i} AS n`), auth);
      assert.is(r.err, undefined, JSON.stringify(r.err));
    }
    const over = await streamWith(c, 'DoAction', create('SELECT 42 AS n'), auth);
    assert.is(over.err?.code, 8, JSON.stringify(over.err));
    assert.match(over.err?.details ?? '', /HD_SQL_MAX_PREPARED_STATEMENTS/);
  } finally {
    c.close();
  }
});

rl('Flight SQL: a DoPut sending more than HD_SQL_FLIGHT_MAX_PUT_BYTES is refused with RESOURCE_EXHAUSTED', async () => {
  const c = flightClient(`127.0.0.1:${ports.flight}`);
  try {
    const auth = await flightToken(c);
    const descriptor = cmdDescriptor(any('CommandPreparedStatementQuery', { prepared_statement_handle: Buffer.from('00') }));
    // FlightData: field 1 the descriptor, field 1000 data_body; four messages of a quarter of the cap and more.
    const piece = (withDescriptor: boolean): Buffer => {
      const w = new FlightWriter();
      if (withDescriptor) w.bytes(1, descriptor);
      return w.bytes(1000, Buffer.alloc(MAX_PUT / 2, 0x5a)).finish();
    };
    const r = await putWith(c, [piece(true), piece(false), piece(false), piece(false)], auth);
    assert.is(r.err?.code, 8, JSON.stringify(r.err));
    assert.match(r.err?.details ?? '', /HD_SQL_FLIGHT_MAX_PUT_BYTES/);
  } finally {
    c.close();
  }
});

rl('HD_SQL_MAX_ROWS stops DuckDB producing rows: a statement that would fail past row 1 000 000 answers the first rows with a notice', async () => {
  const c = client();
  const notices: string[] = [];
  c.on('notice', (n: { message?: string }) => notices.push(n.message ?? ''));
  await c.connect();
  try {
    // Rows past 1 000 000 raise an error when they are produced: the cap must stop production before them.
    const r = await c.query(`SELECT CASE WHEN i < 1000000 THEN i ELSE error('row ' || i || ' was produced past HD_SQL_MAX_ROWS') END AS i FROM range(3000000) t(i)`);
    assert.is(r.rows.length, MAX_ROWS);
    assert.equal(r.rows.map((x: { i: string }) => Number(x.i)), Array.from({ length: MAX_ROWS }, (_, i) => i));
    assert.ok(notices.some((n) => /cut to 10 rows \(HD_SQL_MAX_ROWS\)/.test(n)), notices.join(' | '));
  } finally {
    await c.end();
  }
});

rl.run();
