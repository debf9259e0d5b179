/**
 * Security issue #14, item 2: every SQL door of a real hd_sql process (`hd run pipelines/sql.yaml`
 * with HD_SQL_USERS_FILE and a TLS certificate) authenticates, attacked from outside: the real psql
 * (plaintext, sslmode=require, channel_binding=require), node-postgres, raw wire bytes, HTTPS
 * requests, a gRPC Flight client over TLS and ADBC's Flight SQL driver (grpc+tls). No credential,
 * a wrong one or a malformed one is refused with the door's code (28P01 / 08P01, 401 with
 * WWW-Authenticate, Unauthenticated); the right one works; a foreign Host header gets 403.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, waitForPort, type HdProcess } from '../support/hdProcess';
import { any, cmdDescriptor } from '../sql/flightClient';
import { saslInitial, startupMessage, typedMessage } from '../sql/pgRawSession';
import { adbc, basic, flightClient, freshToken, handshake, queryOver, ROOT, selfSignedCert, startSql, unaryWith, writeUsersFile, type TestUser } from './doorSupport';

const PSQL = '/usr/bin/psql';
const UNAUTHENTICATED = 16;
const run = promisify(execFile);
const alice: TestUser = { name: 'alice', password: 'correct horse', token: freshToken(), role: 'analyst', email: 'alice@example.com' };
const bob: TestUser = { name: 'bob', token: freshToken(), role: 'guest', email: 'bob@example.com' };

const da = suite('every SQL door of a real hd_sql asks for credentials (HD_SQL_USERS_FILE, TLS from files)');
let sql: HdProcess;
let dir: string;
let ca = '';
const ports = { pg: 0, http: 0, flight: 0 };
const https = (): string => `https://127.0.0.1:${ports.http}`;

da.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-doorauth-'));
  const tls = selfSignedCert(dir);
  ca = tls.pem;
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  sql = startSql(dir, {
    HD_SQL_USERS_FILE: writeUsersFile(dir, [alice, bob]),
    HD_SQL_TLS_CERT_FILE: tls.cert,
    HD_SQL_TLS_KEY_FILE: tls.key,
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pg}`,
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${ports.http}`,
    HD_SQL_FLIGHTSQL_ADDRESS: `127.0.0.1:${ports.flight}`,
  });
  for (const p of Object.values(ports)) await waitForPort('127.0.0.1', p, sql, 60_000);
});
da.after(async () => {
  await sql?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** psql with `conninfo` extras; its stdout, or the error's stderr prefixed with "ERR ". */
async function psql(user: string, password: string | undefined, extra = ''): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, PGCONNECT_TIMEOUT: '10' };
  delete env.PGPASSWORD;
  if (password !== undefined) env.PGPASSWORD = password;
  return run(PSQL, ['-X', '-A', '-t', '-w', '-c', 'SELECT 1', `host=127.0.0.1 port=${ports.pg} user=${user} dbname=hd ${extra}`], { env, encoding: 'utf8' }).then(
    (r) => r.stdout.trim(),
    (e: { stderr: string }) => `ERR ${e.stderr}`,
  );
}

da('start-up says the doors ask for credentials and serve TLS, without a warning', () => {
  const out = sql.output();
  assert.match(out, 'doors ask for credentials: the 2 user(s) of HD_SQL_USERS_FILE');
  assert.match(out, /TLS: .*tls\.cert\.pem \(HD_SQL_TLS_CERT_FILE\)/);
  assert.match(out, `https://127.0.0.1:${ports.http}/v1/query`);
  assert.match(out, `grpc+tls://127.0.0.1:${ports.flight}`);
  assert.not.match(out, /WARNING/);
});

da('psql: no password, a wrong one, an unknown user and a token-only user are refused; the right password works, in clear and over TLS with channel binding', async (ctx) => {
  if (!existsSync(PSQL)) return console.warn(`SKIPPED: ${PSQL} is not installed; ${String(ctx.__test__)}`);
  assert.match(await psql('alice', undefined, 'sslmode=disable'), /^ERR .*(no password supplied|password authentication failed)/s);
  assert.match(await psql('alice', 'wrong', 'sslmode=disable'), /^ERR .*password authentication failed for user "alice"/s);
  assert.match(await psql('carol', 'correct horse', 'sslmode=disable'), /^ERR .*password authentication failed for user "carol"/s);
  assert.match(await psql('bob', 'anything', 'sslmode=disable'), /^ERR .*password authentication failed for user "bob"/s);
  assert.is(await psql('alice', 'correct horse', 'sslmode=disable'), '1', sql.output());
  // TLS (the server answers SSLRequest with 'S'), and SCRAM-SHA-256-PLUS bound to the server's certificate.
  assert.is(await psql('alice', 'correct horse', 'sslmode=require'), '1', sql.output());
  assert.is(await psql('alice', 'correct horse', 'sslmode=require channel_binding=require'), '1', sql.output());
  assert.match(await psql('alice', 'wrong', 'sslmode=require channel_binding=require'), /^ERR .*password authentication failed for user "alice"/s);
  // Verifying the certificate against its CA works too (the certificate names 127.0.0.1).
  const caFile = path.join(dir, 'tls.cert.pem');
  assert.is(await psql('alice', 'correct horse', `sslmode=verify-full sslrootcert=${caFile}`), '1', sql.output());
});

da('node-postgres: a wrong password and an unknown user → 28P01; the right one answers, also over TLS', async () => {
  const connect = async (user: string, password: string, ssl = false): Promise<{ code?: string; rows?: unknown[] }> => {
    const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user, password, database: 'hd', ...(ssl && { ssl: { ca, servername: 'localhost' } }) });
    try {
      await c.connect();
      return { rows: (await c.query('SELECT 1 AS one')).rows };
    } catch (err) {
      return { code: (err as { code?: string }).code ?? String(err) };
    } finally {
      await c.end().catch(() => undefined);
    }
  };
  assert.is((await connect('alice', 'wrong')).code, '28P01');
  assert.is((await connect('nobody', 'correct horse')).code, '28P01');
  assert.equal((await connect('alice', 'correct horse')).rows, [{ one: 1 }]);
  assert.equal((await connect('alice', 'correct horse', true)).rows, [{ one: 1 }]);
});

/** Sends `bytes` on a fresh wire connection; everything the server answers until it closes. */
function raw(bytes: Buffer[]): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(ports.pg, '127.0.0.1');
    let got = Buffer.alloc(0);
    s.on('data', (d: Buffer) => (got = Buffer.concat([got, d])));
    s.on('error', () => undefined);
    s.on('close', () => resolve(got.toString('latin1')));
    s.on('connect', () => {
      for (const b of bytes) s.write(b);
    });
    setTimeout(() => s.destroy(), 10_000).unref();
  });
}

da('wire: garbage SASL, a SASL message too large to be a login and clear bytes behind an SSLRequest end the connection with 08P01', async () => {
  const start = startupMessage({ user: 'alice', database: 'hd' });
  const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
  const garbage = await raw([start, saslInitial('SCRAM-SHA-256', '\u0000\u00ff garbage')]);
  assert.match(garbage, /C08P01.*protocol violation: malformed SCRAM/s);
  assert.not.match(garbage, /R\u0000\u0000\u0000\u0008\u0000\u0000\u0000\u0000/, 'no AuthenticationOk');
  const wrongMechanism = await raw([start, saslInitial('SCRAM-SHA-1', 'n,,n=,r=abc')]);
  assert.match(wrongMechanism, /C08P01.*is not offered/s);
  const huge = await raw([start, typedMessage('p', Buffer.alloc(1_000_000, 0x41))]);
  assert.match(huge, /C08P01.*out of range .*before the login is done/s);
  const stuffed = await raw([Buffer.concat([sslRequest, start])]);
  assert.match(stuffed, /C08P01.*unencrypted data after SSLRequest/s);
});

da('HTTPS: no credentials, wrong or malformed ones → 401 with WWW-Authenticate; Basic and Bearer of a user → 200; a foreign Host → 403', async () => {
  const refused = async (auth: string | undefined, why: RegExp): Promise<void> => {
    const r = await queryOver(https(), ca, 'SELECT 1 AS one', auth);
    assert.is(r.status, 401, `${auth?.slice(0, 40)}: ${r.body}`);
    // Two challenges (Node's client joins the two header lines with ", ").
    assert.is(r.headers['www-authenticate'], 'Basic realm="hd_sql", charset="UTF-8", Bearer realm="hd_sql"');
    assert.is((JSON.parse(r.body) as { error: { code: string } }).error.code, 'unauthenticated');
    assert.match(r.body, why);
  };
  await refused(undefined, /credentials are required/);
  await refused(basic('alice', 'wrong'), /password authentication failed for user \\"alice\\"/);
  await refused(basic('mallory', 'correct horse'), /password authentication failed/);
  await refused('Basic !!!not-base64!!!', /not base64/);
  await refused(`Basic ${Buffer.from('no colon').toString('base64')}`, /user:password/);
  await refused(`Basic ${Buffer.from([0xff, 0xfe, 0x3a]).toString('base64')}`, /not UTF-8/);
  await refused('Digest username="alice"', /scheme \\"Digest\\" is not accepted/);
  await refused('Bearer not-a-token', /bearer token is not one of the users file/);
  await refused(basic('alice', 'x'.repeat(5000)), /longer than/);
  // A header beyond Node's limit never reaches the door: 431, or the connection is dropped; nothing runs.
  const huge = await queryOver(https(), ca, 'SELECT 1', `Basic ${'A'.repeat(64 * 1024)}`).then(
    (r) => String(r.status),
    (e: NodeJS.ErrnoException) => e.code ?? String(e),
  );
  assert.ok(['431', 'ECONNRESET', 'EPIPE'].includes(huge), huge);

  const ok = async (auth: string): Promise<void> => {
    const r = await queryOver(https(), ca, 'SELECT 1 AS one', auth);
    assert.is(r.status, 200, r.body);
    assert.equal((JSON.parse(r.body) as { rows: unknown[][] }).rows, [[1]]);
  };
  await ok(basic('alice', 'correct horse'));
  await ok(`Bearer ${alice.token}`);
  await ok(`Bearer ${bob.token}`);

  const evil = await queryOver(https(), ca, 'SELECT 1', basic('alice', 'correct horse'), 'evil.example');
  assert.is(evil.status, 403);
  assert.match(evil.body, /host_not_allowed.*HD_SQL_HTTP_ALLOWED_HOSTS/);
  const rebound = await queryOver(https(), ca, 'SELECT 1', undefined, `evil.example:${ports.http}`);
  assert.is(rebound.status, 403, 'the Host check comes before the credentials');
  const local = await queryOver(https(), ca, 'SELECT 1 AS one', `Bearer ${alice.token}`, `localhost:${ports.http}`);
  assert.is(local.status, 200);
});

da('Flight SQL over TLS: calls without a bearer, a bad handshake or a bad token → Unauthenticated; the handshake token and a users-file token work', async () => {
  const c = flightClient(`127.0.0.1:${ports.flight}`, ca);
  try {
    const info = any('CommandStatementQuery', { query: 'SELECT 1 AS one' });
    assert.is((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(info))).err?.code, UNAUTHENTICATED);
    assert.is((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(info), 'Bearer forged')).err?.code, UNAUTHENTICATED);
    assert.is((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(info), 'Basic %%%')).err?.code, UNAUTHENTICATED);
    assert.is((await handshake(c)).err?.code, UNAUTHENTICATED);
    assert.is((await handshake(c, basic('alice', 'wrong'))).err?.code, UNAUTHENTICATED);
    // Arrow Flight's Go client (ADBC) sends Basic without base64 padding.
    const unpadded = `Basic ${Buffer.from('alice:correct horse').toString('base64').replace(/=+$/, '')}`;
    const h = await handshake(c, unpadded);
    assert.match(h.token ?? '', /^Bearer [A-Za-z0-9_-]{43}$/, JSON.stringify(h.err));
    assert.ok((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(info), h.token)).ok);
    assert.ok((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(info), `Bearer ${bob.token}`)).ok);
    assert.ok((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(info), basic('alice', 'correct horse'))).ok);
  } finally {
    c.close();
  }
  // A plaintext client does not get through a TLS door.
  const plain = flightClient(`127.0.0.1:${ports.flight}`);
  try {
    const r = await unaryWith(plain, 'GetFlightInfo', cmdDescriptor(any('CommandStatementQuery', { query: 'SELECT 1' })), `Bearer ${bob.token}`);
    assert.is(r.err?.code, 14);
  } finally {
    plain.close();
  }
});

da('ADBC Flight SQL driver over grpc+tls: username/password works; a wrong password or none is refused Unauthenticated', async () => {
  await run('bash', [path.join(ROOT, 'scripts/flightsql-client.sh'), 'install'], { cwd: ROOT });
  const python = path.join(ROOT, '.hd/test-deps/flightsql/bin/python');
  const uri = `grpc+tls://localhost:${ports.flight}`;
  const tlsOpts = { 'adbc.flight.sql.client_option.tls_root_certs': ca };
  const steps = [{ op: 'query', sql: 'SELECT 1 AS one' }];
  const ok = await adbc(python, uri, steps, { ...tlsOpts, username: 'alice', password: 'correct horse' });
  assert.equal(ok[0]?.rows, [[1]], JSON.stringify(ok) + sql.output().slice(-2000));
  const wrong = await adbc(python, uri, steps, { ...tlsOpts, username: 'alice', password: 'wrong' });
  assert.is(wrong[0]?.error?.status, 'UNAUTHENTICATED', JSON.stringify(wrong));
  const none = await adbc(python, uri, steps, tlsOpts);
  assert.is(none[0]?.error?.status, 'UNAUTHENTICATED', JSON.stringify(none));
  const token = await adbc(python, uri, steps, { ...tlsOpts, 'adbc.flight.sql.authorization_header': `Bearer ${bob.token}` });
  assert.equal(token[0]?.rows, [[1]], JSON.stringify(token));
});

da.run();
