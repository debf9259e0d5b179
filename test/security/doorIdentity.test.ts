/**
 * HD_SQL_IDENTITY=user (beyond the reference): a real hd_sql process in Proxy mode sends each
 * statement's SQL user — authenticated at the door, mapped to a role and email by the users file —
 * as X-Forwarded-Role / X-Forwarded-Email on its Proxy requests, seen by a real HTTP listener
 * standing in for the Proxy; with the default (service) it sends the service's identity whoever asks.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, waitForPort, type HdProcess } from '../support/hdProcess';
import { any } from '../sql/flightClient';
import { basic, flightClient, freshToken, queryOver, runFlightStatement, startSql, writeUsersFile, type TestUser } from './doorSupport';

const alice: TestUser = { name: 'alice', password: 'alice pw', token: freshToken(), role: 'analyst', email: 'alice@example.com' };
const bob: TestUser = { name: 'bob', password: 'bob pw', token: freshToken(), role: 'guest', email: 'bob@example.com' };

const di = suite('HD_SQL_IDENTITY=user: the SQL user\'s role and email reach the Proxy, per statement');
let dir: string;
let proxy: Server;
let seen: IncomingHttpHeaders[] = [];

di.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-dooridentity-'));
  // The stand-in Proxy: records each request's headers and answers 503 (the statement fails; the headers are what is checked).
  proxy = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"unavailable","message":"test stand-in"}}');
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
});
di.after(async () => {
  await new Promise((resolve) => proxy.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** hd_sql in Proxy mode toward the stand-in, with the users file and `identity`. */
async function start(identity: 'user' | 'service'): Promise<{ p: HdProcess; ports: { pg: number; http: number; flight: number } }> {
  const ports = { pg: await freePort(), http: await freePort(), flight: await freePort() };
  const p = startSql(dir, {
    HD_SQL_SCC_TARGETS: '',
    HD_PROXY_ENDPOINT: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`,
    HD_SQL_PROXY_ROLE: 'svc',
    HD_SQL_PROXY_EMAIL: 'hd-sql@service',
    HD_SQL_QUERY_TIMEOUT_MS: '5000',
    HD_SQL_USERS_FILE: writeUsersFile(dir, [alice, bob]),
    HD_SQL_IDENTITY: identity,
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pg}`,
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${ports.http}`,
    HD_SQL_FLIGHTSQL_ADDRESS: `127.0.0.1:${ports.flight}`,
  });
  for (const port of Object.values(ports)) await waitForPort('127.0.0.1', port, p, 60_000);
  return { p, ports };
}

/** The identities the stand-in saw while `fn` ran (requests without an identity left out). */
async function identitiesDuring(fn: () => Promise<unknown>): Promise<string[]> {
  seen = [];
  await fn();
  return [...new Set(seen.filter((h) => h['x-forwarded-role']).map((h) => `${String(h['x-forwarded-role'])} ${String(h['x-forwarded-email'])}`))];
}

const READ = 'SELECT count(*) FROM flows';

di('each door\'s statement reads as its user: HTTP Basic as alice, the wire as bob, Flight SQL with alice\'s token', async () => {
  const { p, ports } = await start('user');
  try {
    assert.match(p.output(), "identity at the Proxy: each SQL user's role and email (HD_SQL_IDENTITY=user)");
    const http = await identitiesDuring(() => queryOver(`http://127.0.0.1:${ports.http}`, undefined, READ, basic('alice', 'alice pw')));
    assert.equal(http, ['analyst alice@example.com'], p.output());
    const wire = await identitiesDuring(async () => {
      const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'bob', password: 'bob pw', database: 'hd' });
      await c.connect();
      await c.query(READ).catch(() => undefined);
      await c.end();
    });
    assert.equal(wire, ['guest bob@example.com'], p.output());
    const flight = await identitiesDuring(async () => {
      const c = flightClient(`127.0.0.1:${ports.flight}`);
      try {
        await runFlightStatement(c, any('CommandStatementQuery', { query: READ }), `Bearer ${alice.token}`);
      } finally {
        c.close();
      }
    });
    assert.equal(flight, ['analyst alice@example.com'], p.output());
  } finally {
    await p.stop();
  }
});

di('the default (HD_SQL_IDENTITY=service) sends the service\'s identity whoever asks', async () => {
  const { p, ports } = await start('service');
  try {
    const http = await identitiesDuring(() => queryOver(`http://127.0.0.1:${ports.http}`, undefined, READ, `Bearer ${alice.token}`));
    assert.equal(http, ['svc hd-sql@service'], p.output());
  } finally {
    await p.stop();
  }
});

di.run();
