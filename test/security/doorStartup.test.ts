/**
 * Security issue #14, item 2, at start-up: hd_sql as a real process refuses to serve without a
 * credential beyond loopback (unless HD_SQL_ALLOW_UNAUTHENTICATED=true, with a warning), refuses
 * inconsistent security settings naming the variable, listens on loopback by default, and with the
 * single password file (any user name) guards HTTP (plaintext) and the Flight SQL handshake too.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, waitForOutput, waitForPort } from '../support/hdProcess';
import { any, cmdDescriptor } from '../sql/flightClient';
import { basic, flightClient, handshake, queryOver, startSql, unaryWith, writeUsersFile } from './doorSupport';

const ds = suite('hd_sql start-up: no open door beyond loopback, settings checked, loopback by default');
let dir: string;
ds.before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-doorstart-'));
  writeFileSync(path.join(dir, 'password'), 'open sesame\n');
});
ds.after(() => rmSync(dir, { recursive: true, force: true }));

/** Starts hd_sql with `env`; resolves with its output once it exits (it must not start). */
async function refused(env: Record<string, string>): Promise<string> {
  const p = startSql(dir, { HD_SQL_PGWIRE_ADDRESS: '127.0.0.1:0', HD_SQL_HTTP_ADDRESS: '127.0.0.1:0', HD_SQL_FLIGHTSQL_ADDRESS: '127.0.0.1:0', ...env });
  const code = await p.exited;
  assert.is.not(code, 0, p.output());
  return p.output();
}

ds('no credential on 0.0.0.0 is refused, naming the door and what to set; HD_SQL_ALLOW_UNAUTHENTICATED=true starts it with a warning', async () => {
  const out = await refused({ HD_SQL_PGWIRE_ADDRESS: '0.0.0.0:0' });
  assert.match(out, /no credential is configured \(HD_SQL_USERS_FILE or HD_SQL_PGWIRE_PASSWORD_FILE\), and HD_SQL_PGWIRE_ADDRESS=0\.0\.0\.0:0 is not loopback/);
  assert.match(out, /HD_SQL_ALLOW_UNAUTHENTICATED=true/);
  assert.match(await refused({ HD_SQL_HTTP_ADDRESS: ':0' }), /HD_SQL_HTTP_ADDRESS=0\.0\.0\.0:0 is not loopback/);

  const port = await freePort();
  const open = startSql(dir, { HD_SQL_PGWIRE_ADDRESS: `0.0.0.0:${port}`, HD_SQL_HTTP_ENABLED: 'false', HD_SQL_FLIGHTSQL_ENABLED: 'false', HD_SQL_ALLOW_UNAUTHENTICATED: 'true' });
  try {
    await waitForPort('127.0.0.1', port, open, 60_000);
    const deadline = Date.now() + 30_000;
    while (!/WARNING: HD_SQL_PGWIRE_PASSWORD_FILE is not set/.test(open.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.match(open.output(), /WARNING: HD_SQL_PGWIRE_PASSWORD_FILE is not set \(nor HD_SQL_USERS_FILE\).*including beyond loopback/);
  } finally {
    assert.is(await open.stop(), 0, open.output());
  }
});

ds('inconsistent security settings are refused at start with the variable named', async () => {
  const users = writeUsersFile(dir, [{ name: 'alice', password: 'pw', token: 'hd_tok', role: 'analyst', email: 'a@x' }]);
  assert.match(await refused({ HD_SQL_USERS_FILE: users, HD_SQL_PGWIRE_PASSWORD_FILE: path.join(dir, 'password') }), /set HD_SQL_USERS_FILE .* or HD_SQL_PGWIRE_PASSWORD_FILE .*, not both/);
  assert.match(await refused({ HD_SQL_TLS_REQUIRED: 'true' }), /HD_SQL_TLS_REQUIRED=true needs a certificate/);
  assert.match(await refused({ HD_SQL_TLS_CERT_FILE: path.join(dir, 'cert.pem') }), /HD_SQL_TLS_CERT_FILE and HD_SQL_TLS_KEY_FILE go together/);
  assert.match(await refused({ HD_SQL_TLS_CERT_FILE: path.join(dir, 'absent.pem'), HD_SQL_TLS_KEY_FILE: path.join(dir, 'absent.key') }), /HD_SQL_TLS_CERT_FILE: cannot read/);
  assert.match(await refused({ HD_SQL_TLS_CERT_FILE: path.join(dir, 'password'), HD_SQL_TLS_KEY_FILE: path.join(dir, 'password') }), /do not make a usable TLS identity/);
  assert.match(await refused({ HD_SQL_TLS_FROM_IDENTITY: 'true' }), /HD_SQL_TLS_FROM_IDENTITY=true serves the certificate the DMS issued/);
  assert.match(await refused({ HD_SQL_IDENTITY: 'user', HD_SQL_PGWIRE_PASSWORD_FILE: path.join(dir, 'password') }), /HD_SQL_IDENTITY=user needs HD_SQL_USERS_FILE/);
  assert.match(await refused({ HD_SQL_IDENTITY: 'root' }), /HD_SQL_IDENTITY must be "service" .* or "user"/);
  assert.match(await refused({ HD_SQL_HTTP_ALLOWED_HOSTS: 'ok.example, bad host' }), /HD_SQL_HTTP_ALLOWED_HOSTS: "bad host" is not a host name/);
  const bad = path.join(dir, 'bad-users.json');
  writeFileSync(bad, JSON.stringify({ users: [{ name: 'eve', scram_sha_256: 'md5abc' }] }));
  assert.match(await refused({ HD_SQL_USERS_FILE: bad }), /HD_SQL_USERS_FILE: .*bad-users\.json, user 1 \("eve"\): "scram_sha_256" must be SCRAM-SHA-256\$/);
  writeFileSync(bad, JSON.stringify({ users: [{ name: 'eve', password: 'plain' }] }));
  assert.match(await refused({ HD_SQL_USERS_FILE: bad }), /unknown field "password"/);
  writeFileSync(bad, '{"users": [');
  assert.match(await refused({ HD_SQL_USERS_FILE: bad }), /HD_SQL_USERS_FILE: cannot read .* as JSON/);
});

ds('the default listen addresses are loopback; the password file (any user name) guards plaintext HTTP and the Flight SQL handshake', async () => {
  const ports = { http: await freePort(), flight: await freePort() };
  const p = startSql(dir, {
    HD_SQL_PGWIRE_PASSWORD_FILE: path.join(dir, 'password'),
    HD_SQL_PGWIRE_ENABLED: 'false',
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${ports.http}`,
    HD_SQL_FLIGHTSQL_ADDRESS: `127.0.0.1:${ports.flight}`,
  });
  try {
    for (const port of Object.values(ports)) await waitForPort('127.0.0.1', port, p, 60_000);
    await waitForOutput(p, 'doors ask for credentials');
    assert.match(p.output(), 'doors ask for credentials: the password of HD_SQL_PGWIRE_PASSWORD_FILE (any user name)');
    const base = `http://127.0.0.1:${ports.http}`;
    assert.is((await queryOver(base, undefined, 'SELECT 1')).status, 401);
    assert.is((await queryOver(base, undefined, 'SELECT 1', basic('hd', 'nope'))).status, 401);
    const ok = await queryOver(base, undefined, 'SELECT 1 AS one', basic('whoever', 'open sesame'));
    assert.is(ok.status, 200, ok.body);
    assert.is((await queryOver(base, undefined, 'SELECT 1', basic('whoever', 'open sesame'), 'evil.example')).status, 403);
    const c = flightClient(`127.0.0.1:${ports.flight}`);
    try {
      assert.is((await handshake(c, basic('hd', 'nope'))).err?.code, 16);
      const h = await handshake(c, basic('hd', 'open sesame'));
      assert.ok((await unaryWith(c, 'GetFlightInfo', cmdDescriptor(any('CommandStatementQuery', { query: 'SELECT 1' })), h.token)).ok, JSON.stringify(h));
    } finally {
      c.close();
    }
  } finally {
    await p.stop();
  }
  // Without HD_SQL_*_ADDRESS the doors bind 127.0.0.1, not every interface (the reference says ":5432").
  const yaml = (await import('node:fs')).readFileSync(path.resolve(__dirname, '../../pipelines/sql.yaml'), 'utf8');
  for (const d of ['PGWIRE_ADDRESS:-127.0.0.1:5432', 'HTTP_ADDRESS:-127.0.0.1:8081', 'FLIGHTSQL_ADDRESS:-127.0.0.1:31337']) assert.ok(yaml.includes(d), d);
});

ds.run();
