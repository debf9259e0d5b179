/**
 * hd_sql as a real process: `hd run pipelines/sql.yaml` in front of a real SCC and two Storage
 * Nodes holding batches ingested with PlatformIngestClient, asked through psql, node-postgres and
 * HTTP; answers compared with what was ingested; pushdown seen on the nodes' matched counters;
 * settings refused with messages naming the variable; SIGTERM stops it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startCluster, type Cluster } from '../support/cluster';
import { flowsFixture, flowsSchemaJson, ingestFlows } from './flowsFixture';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';

const PSQL = '/usr/bin/psql';
const schemaJson = flowsSchemaJson;
const FIXTURE = flowsFixture(3, 400);
const { t0: T0, batches: BATCHES, all } = FIXTURE;
const PASSWORD = 'open sesame';

const WINDOW = FIXTURE.window;

const sp = suite('hd_sql as a process: hd run pipelines/sql.yaml against a real cluster');
let cluster: Cluster;
let sql: HdProcess;
let dir: string;
const ports = { pg: 0, http: 0, ret: 0, obs: 0 };
const run = promisify(execFile);

async function matched(): Promise<number> {
  let n = 0;
  for (const sn of cluster.sns) {
    const text = await (await fetch(`http://127.0.0.1:${sn.observabilityPort}/metrics`)).text();
    n += Number(/^hd_sn_query_records_matched_total (\d+)/m.exec(text)?.[1] ?? 0);
  }
  return n;
}

function sqlEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    HD_SQL_SCC_TARGETS: `${cluster.host}:${cluster.scc.productionPort}:${cluster.scc.queryGrpcPort}`,
    HD_SQL_SCHEMA_DIR: path.join(dir, 'schemas'),
    PLATFORM_DATA_RETURN_HOST: '127.0.0.1',
    PLATFORM_DATA_RETURN_PORT: String(ports.ret),
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pg}`,
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${ports.http}`,
    HD_SQL_FLIGHTSQL_ENABLED: 'false',
    OBSERVABILITY_INTERFACE: '127.0.0.1',
    OBSERVABILITY_PORT: String(ports.obs),
    HD_SQL_THREADS: '1',
    ...extra,
  };
}

sp.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sqlproc-'));
  writeFileSync(path.join(dir, 'password'), `${PASSWORD}\n`);
  const { mkdirSync } = await import('node:fs');
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', 'flows.json'), schemaJson);
  cluster = await startCluster({ recordSize: 64, schemas: [schemaJson] });
  await ingestFlows(cluster, FIXTURE);
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  sql = startHd(['run', 'pipelines/sql.yaml', '--quiet'], sqlEnv({ HD_SQL_PGWIRE_PASSWORD_FILE: path.join(dir, 'password') }));
  await waitForPort('127.0.0.1', ports.http, sql, 60_000);
});
sp.after(async () => {
  await sql?.stop();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const psql = async (q: string): Promise<string> => (await run(PSQL, ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'hd', '-c', q], { env: { ...process.env, PGPASSWORD: PASSWORD, PGCONNECT_TIMEOUT: '10' }, encoding: 'utf8' })).stdout;

sp('start-up says where each door listens, with the psql command line and no password warning', () => {
  const out = sql.output();
  assert.match(out, `PostgreSQL wire on 127.0.0.1:${ports.pg} — psql -h 127.0.0.1 -p ${ports.pg} -U hd`);
  assert.match(out, `HTTP on http://127.0.0.1:${ports.http}/v1/query`);
  assert.match(out, `results from the Storage Nodes arrive at 127.0.0.1:${ports.ret}`);
  assert.match(out, `/health and /metrics on http://127.0.0.1:${ports.obs}`);
  assert.not.match(out, /WARNING/);
});

sp('psql: a pushdown filter with an enum label returns exactly the ingested matches, and the nodes return only those', async (ctx) => {
  if (!existsSync(PSQL)) return console.warn(`SKIPPED: ${PSQL} is not installed; ${String(ctx.__test__)}`);
  const want = all.filter((f) => f.dst_port === 443 && f.proto === 'udp');
  assert.ok(want.length > 0);
  const before = await matched();
  const got = await psql(`SELECT count(*), sum(bytes) FROM flows WHERE ${WINDOW} AND dst_port = 443 AND proto = 'udp'`);
  assert.is(got.trim(), `${want.length}|${want.reduce((s, f) => s + f.bytes, 0)}`, sql.output());
  // Pushed down: the nodes matched (and sent) the filtered records, not the window's.
  assert.is((await matched()) - before, want.length);
  assert.is((await psql('SHOW TABLES')).trim(), 'flows');
  const rows = await psql(`SELECT ts, dst_port, proto, bytes FROM "Network flows" WHERE ${WINDOW} AND proto = 'icmp' AND bytes < 100 ORDER BY ts, bytes`);
  const wantRows = all.filter((f) => f.proto === 'icmp' && f.bytes < 100).sort((a, b) => a.ts - b.ts || a.bytes - b.bytes);
  assert.is(rows.trim(), wantRows.map((f) => `${f.ts}|${f.dst_port}|icmp|${f.bytes}`).join('\n'));
  const err = await psql('SELECT * FROM nope').then(
    () => '',
    (e: { stderr: string }) => e.stderr,
  );
  assert.match(err, /ERROR:.*nope/);
});

sp('node-postgres: GROUP BY aggregate, bind parameters, unknown table → 42P01, wrong password → 28P01', async () => {
  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'hd', password: PASSWORD, database: 'hd' });
  await c.connect();
  try {
    const r = await c.query(`SELECT proto, count(*)::INTEGER AS n, sum(bytes)::BIGINT AS b FROM flows WHERE ts >= $1 AND ts < $2 GROUP BY proto ORDER BY proto`, [T0, T0 + BATCHES * 60]);
    const want = ['icmp', 'tcp', 'udp'].map((p) => {
      const fs = all.filter((f) => f.proto === p);
      return { proto: p, n: fs.length, b: String(fs.reduce((s, f) => s + f.bytes, 0)) };
    });
    assert.equal(r.rows, want, sql.output());
    const e = await c.query('SELECT * FROM nope').then(
      () => undefined,
      (err: { code?: string }) => err,
    );
    assert.is(e?.code, '42P01');
  } finally {
    await c.end();
  }
  const bad = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'hd', password: 'wrong', database: 'hd' });
  const e = await bad.connect().then(
    () => undefined,
    (err: { code?: string }) => err,
  );
  assert.is(e?.code, '28P01');
  await bad.end().catch(() => undefined);
});

sp('HTTP: POST /v1/query returns the rows (Basic with the password file\'s password, any user); /health and /metrics answer', async () => {
  const auth = `Basic ${Buffer.from(`anyone:${PASSWORD}`).toString('base64')}`;
  const refused = await fetch(`http://127.0.0.1:${ports.http}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT 1' }) });
  assert.is(refused.status, 401, 'the password file guards the HTTP door too');
  const r = await fetch(`http://127.0.0.1:${ports.http}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: JSON.stringify({ sql: `SELECT dst_port, count(*) AS n FROM flows WHERE ${WINDOW} AND dst_port IN (22, 53) GROUP BY dst_port ORDER BY dst_port` }) });
  assert.is(r.status, 200);
  const j = (await r.json()) as { rows: unknown[][]; notices: string[] };
  assert.equal(j.rows, [22, 53].map((p) => [p, all.filter((f) => f.dst_port === p).length]));
  assert.equal(j.notices, []);
  const missing = await fetch(`http://127.0.0.1:${ports.http}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: JSON.stringify({ sql: 'SELECT * FROM nope' }) });
  assert.is(missing.status, 404);
  const health = (await (await fetch(`http://127.0.0.1:${ports.obs}/health`)).json()) as { status: string; role: string; upstream: { targets: { reachable: boolean }[] }; schemas: { datasets: string[] } };
  assert.is(health.status, 'ok');
  assert.is(health.role, 'sql');
  assert.equal(health.schemas.datasets, ['flows']);
  assert.ok(health.upstream.targets[0]?.reachable);
  assert.match(await (await fetch(`http://127.0.0.1:${ports.obs}/metrics`)).text(), /^hd_sql_queries_total\{outcome="ok"\} [1-9]/m);
});

sp('bad settings are refused at start with the variable named; no password file warns', async () => {
  const refused = async (env: Record<string, string>): Promise<string> => {
    const p = startHd(['run', 'pipelines/sql.yaml', '--quiet'], sqlEnv({ HD_SQL_PGWIRE_ADDRESS: '127.0.0.1:0', HD_SQL_HTTP_ADDRESS: '127.0.0.1:0', PLATFORM_DATA_RETURN_PORT: '0', OBSERVABILITY_PORT: '-1', ...env }));
    const code = await p.exited;
    assert.is.not(code, 0, p.output());
    return p.output();
  };
  assert.match(await refused({ HD_SQL_SCC_TARGETS: '' }), /needs where to send its reads: HD_PROXY_ENDPOINT .* or HD_SQL_SCC_TARGETS/);
  assert.match(await refused({ HD_PROXY_ENDPOINT: 'https://proxy:6986' }), /HD_PROXY_ENDPOINT .* or HD_SQL_SCC_TARGETS .*, not both/);
  assert.match(await refused({ HD_SQL_SCC_TARGETS: '', HD_PROXY_ENDPOINT: 'https://proxy:6986' }), /without an identity for the Proxy: set HD_SQL_PROXY_ROLE/);
  assert.match(await refused({ HD_SQL_SCC_TARGETS: '', HD_PROXY_ENDPOINT: 'proxy:6986', HD_SQL_PROXY_ROLE: 'admin' }), /HD_PROXY_ENDPOINT must be/);
  assert.match(await refused({ HD_DMS_ENDPOINT: 'https://dms:6986', HD_DMS_CA_FILE: path.join(dir, 'ca.pem') }), /HD_DMS_CLIENT_CERT_FILE, HD_DMS_CLIENT_KEY_FILE are not/);
  assert.match(await refused({ HD_SQL_RESULT_TLS: 'true' }), /HD_SQL_RESULT_TLS=true needs the certificate the listener presents: set HD_DMS_ENDPOINT/);
  assert.match(await refused({ HD_SQL_SCHEMA_DIR: '' }), /needs its dataset schemas: set HD_SQL_SCHEMA_DIR .*HD_DMS_ENDPOINT .* or HD_PROXY_ENDPOINT/);
  assert.match(await refused({ HD_SQL_SCC_TARGETS: 'scc:notaport' }), /HD_SQL_SCC_TARGETS: entry 1's data port must be a TCP port/);
  assert.match(await refused({ HD_SQL_PGWIRE_ADDRESS: '5432' }), /HD_SQL_PGWIRE_ADDRESS must be \[host\]:port/);
  assert.match(await refused({ HD_SQL_QUERY_QOS: '0' }), /HD_SQL_QUERY_QOS/);
  assert.match(await refused({ HD_SQL_PGWIRE_PASSWORD_FILE: path.join(dir, 'absent') }), /HD_SQL_PGWIRE_PASSWORD_FILE: cannot read/);
  assert.match(await refused({ PLATFORM_DATA_RETURN_PORT: String(ports.ret) }), /PLATFORM_DATA_RETURN_PORT\) cannot listen/);

  // Without a password file it starts, warns, and a SIGTERM stops it in order.
  const open = startHd(['run', 'pipelines/sql.yaml', '--quiet'], sqlEnv({ HD_SQL_PGWIRE_ADDRESS: '127.0.0.1:0', HD_SQL_HTTP_ADDRESS: '127.0.0.1:0', PLATFORM_DATA_RETURN_PORT: '0', OBSERVABILITY_PORT: '-1' }));
  try {
    const deadline = Date.now() + 60_000;
    while (!/WARNING: HD_SQL_PGWIRE_PASSWORD_FILE is not set/.test(open.output()) && open.proc.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.match(open.output(), /WARNING: HD_SQL_PGWIRE_PASSWORD_FILE is not set/);
  } finally {
    assert.is(await open.stop(), 0, open.output());
  }
});

sp('SIGTERM stops the server in order and frees its ports', async () => {
  assert.is(await sql.stop(), 0, sql.output());
  const closed = await waitForPort('127.0.0.1', ports.pg, undefined, 300).then(
    () => false,
    () => true,
  );
  assert.ok(closed, 'the PostgreSQL wire port is closed');
});

sp.run();
