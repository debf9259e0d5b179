/**
 * `hd up` as a user runs it: real processes on their own loopback addresses (the DMS with its CA,
 * the Proxy, the SCC, two Storage Nodes, hd_sql), demo data through the ingest path, queries for an
 * identity through the Proxy, `hd status`, `hd down`, a restart that keeps the data and the DMS's
 * state, crashed nodes restarted. Interrupted starts and the ready message's commands: resume.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { requestJson, type ClientTls } from '../../net/jsonClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { EXAMPLE_QUERIES } from '../../up/exampleQueries';
import { INGRESS_SECRET_HEADER_NAME, ingressSecretFile } from '../../up/ingressSecret';
import { readUpState, type UpState } from '../../up/platform';
import { startHd, type HdProcess } from '../support/hdProcess';

const NET = '127.78';
/**
 * RSA-2048 keys for the DMS root, its certificates and the Proxy's and hd_sql's keys (hd up's
 * default is the reference's 4096; the settings reach every node through the environment). This
 * saves about 2-3 s per start on a 2-core machine, more under load.
 */
const KEYS = { DMS_CA_KEY_BITS: '2048', DMS_MIN_KEY_BITS: '2048', PLATFORM_KEY_BITS: '2048' };
const ROOT = path.resolve(__dirname, '../..');

async function until(what: string, p: HdProcess, test: () => boolean, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (p.proc.exitCode !== null) throw new Error(`hd up exited before ${what}:\n${p.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms:\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `hd <args>` run to completion (through tsx, as startHd does). */
async function hd(args: string[]): Promise<{ code: number | string; out: string }> {
  const p = startHd(args);
  const code = await p.exited;
  return { code, out: p.output() };
}

function segments(dir: string): number {
  return readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.hdseg')).length;
}

/** The SQL password hd up made and printed (up/sqlPassword.ts), as the README has the reader export it. */
const sqlPassword = (): string => readFileSync(path.join(dataDir, 'sql', 'password'), 'utf8').trim();

/** Runs one statement through the real psql against the demo's SQL door (PGPASSWORD, as the README says); the SQL log on failure. */
function psql(sql: string): string {
  try {
    return execFileSync('/usr/bin/psql', ['-X', '-A', '-t', '-w', '-v', 'ON_ERROR_STOP=1', '-h', `${NET}.0.1`, '-p', '5432', '-U', 'hd', '-c', sql], { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PGPASSWORD: sqlPassword() } });
  } catch (err) {
    throw new Error(`psql ${sql}: ${(err as Error).message}\nsql log:\n${readFileSync(path.join(dataDir, 'logs', 'sql.log'), 'utf8').slice(-3000)}`);
  }
}

/** Runs `commands` (SQL or backslash commands) in one psql session; its whole output. */
function psqlSession(commands: readonly string[]): string {
  const args = ['-X', '-A', '-t', '-w', '-v', 'ON_ERROR_STOP=1', '-h', `${NET}.0.1`, '-p', '5432', '-U', 'hd', ...commands.flatMap((c) => ['-c', c])];
  return execFileSync('/usr/bin/psql', args, { encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PGPASSWORD: sqlPassword() } });
}

/** The administrator's TLS material, from the files hd up names. */
function adminTls(state: UpState): ClientTls {
  return { ca: readFileSync(state.dms.caCert, 'utf8'), cert: readFileSync(state.dms.adminCert, 'utf8'), key: readFileSync(state.dms.adminKey, 'utf8') };
}

/** `SELECT count(*) FROM flows` through the Proxy with the SDK in Proxy mode, as `role`. */
async function countThroughProxy(state: UpState, role: string): Promise<number> {
  await using q = new PlatformQueryClient(state.proxy.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: readFileSync(state.dms.caCert, 'utf8') } });
  q.loadDatasetSchema(readFileSync(path.join(ROOT, 'up/demo/flows.schema.json'), 'utf8'));
  q.addControlHeader('X-Forwarded-Role', role);
  q.addControlHeader('X-Forwarded-Email', `${role}@example.com`);
  // The Proxy takes identity headers only from an ingress: this client stands in for one with hd up's secret.
  q.addControlHeader(INGRESS_SECRET_HEADER_NAME, readFileSync(ingressSecretFile(state.dataDir), 'utf8').trim());
  const now = Math.floor(Date.now() / 1000);
  const t = await q.executeToSql({ start_time: now - 3 * 3600, end_time: now + 60 }, 'SELECT count(*) AS n FROM flows');
  return Number(t.toArray()[0].n);
}

/** The pid of a node's latest start, from its log. */
function lastPid(log: string): number {
  const pids = [...readFileSync(log, 'utf8').matchAll(/start: hd run .* \(pid (\d+)\)/g)].map((m) => Number(m[1]));
  const pid = pids.at(-1);
  if (pid === undefined) throw new Error(`no start line with a pid in ${log}`);
  return pid;
}

/** Waits until a node's /health says ok. */
async function healthy(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2000) }).then(
      async (r) => ((await r.json()) as { status?: string }).status === 'ok',
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} not ok within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let caBefore = '';

const up = suite('hd up');
let dataDir: string;
up.before(() => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'hd-up-'));
});
up.after(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

up('starts every node on its own address, ingests the demo, status is ok, down stops everything', async () => {
  const p = startHd(['up', '--demo', 'small', '--data-dir', dataDir, '--net', NET], KEYS);
  try {
    // The ready message comes once the nodes answer; the demo then loads in the background.
    await until('HD is up', p, () => p.output().includes('HD is up.'));
    assert.match(p.output(), /flows: loading in the background \(20,000 records\)/);
    await until('the demo loaded', p, () => p.output().includes('hd up: data loaded:'));
    const out = p.output();
    assert.match(out, new RegExp(`scc +scc +${NET.replace('.', '\\.')}\\.20\\.1:6987`));
    assert.match(out, /data loaded: flows 20,000 records in \d+ batches, chess [\d,]+ records in \d+ batches/);
    const state = readUpState(dataDir) as UpState;
    assert.equal(state.nodes.map((n) => n.name), ['dms', 'sn1', 'sn2', 'scc', 'proxy', 'sql']);
    assert.match(out, `psql -h ${NET}.0.1 -p 5432 -U hd`);
    // The SQL doors' password: made on the first start, mode 0600, printed with the examples.
    assert.is(statSync(path.join(dataDir, 'sql', 'password')).mode & 0o777, 0o600);
    assert.match(out, `user hd, password ${sqlPassword()}`);
    assert.match(out, `curl -s -u "hd:$PGPASSWORD" http://${NET}.0.1:8081/v1/query`);
    const anonymous = await fetch(`http://${NET}.0.1:8081/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT 1' }) });
    assert.is(anonymous.status, 401, 'the HTTP door asks for the password');

    // The control plane: where the DMS and the Proxy are, the administrator credential (0600) and the policy route.
    assert.match(out, `DMS:    https://${NET}.10.1:6986`);
    assert.match(out, `Proxy:  https://${NET}.11.1:6986/v1/query`);
    assert.match(out, `admin credential: ${state.dms.adminCert} and ${state.dms.adminKey}`);
    assert.match(out, /policy: version 1, the default hd up installed just now: allow everything; replace it with PUT \/v1\/policy/);
    assert.match(out, /policy version 1 \(the default: allow everything\)/);
    for (const f of [state.dms.adminKey, state.dms.adminCert]) assert.is(statSync(f).mode & 0o777, 0o600, f);
    caBefore = readFileSync(state.dms.caCert, 'utf8');
    // The administrator sees what hd up declared: cluster c1, the SCC and the Storage Nodes with
    // their addresses (observability too: the Proxy reads batch filters there), both datasets, and the registered Proxy.
    const admin = adminTls(state);
    type NodeView = { name: string; role: string; addresses: Record<string, { host: string; port: number }> };
    const topo = (await requestJson('GET', `${state.dms.url}/v1/topology`, admin)).body as { primary_cluster: string; nodes: NodeView[]; clusters: { sccs: NodeView[]; storage_nodes: NodeView[]; datasets: string[] }[] };
    assert.is(topo.primary_cluster, 'c1');
    const byName = new Map([...topo.nodes, ...(topo.clusters[0]?.sccs ?? []), ...(topo.clusters[0]?.storage_nodes ?? [])].map((n) => [n.name, n]));
    assert.equal(byName.get('scc1')?.addresses.grpc, { host: `${NET}.20.1`, port: 6990 });
    assert.equal(byName.get('sn2')?.addresses.observability, { host: `${NET}.30.2`, port: 8080 });
    assert.equal(byName.get('sn1')?.addresses.production, { host: `${NET}.30.1`, port: 6987 });
    assert.is(byName.get('hd-proxy')?.role, 'proxy');
    assert.equal([...(topo.clusters[0]?.datasets ?? [])].sort(), ['chess', 'flows']);
    // Without the administrator certificate the DMS refuses administration.
    const anon = await requestJson('PUT', `${state.dms.url}/v1/policy`, { ca: admin.ca }, { rego: 'package hd.authz' });
    assert.is(anon.status, 401);

    // The Proxy answers a query for an identity: the SDK in Proxy mode gets every demo row (the default policy allows all).
    assert.is(await countThroughProxy(state, 'analyst'), 20_000);
    // Spoofed identity headers without the ingress's proof are refused (security issue #14).
    const spoofed = await requestJson('POST', `${state.proxy.url}/v1/query`, { ca: admin.ca }, { query_id: 1, dataset: 'flows', start: 1, end: 2, return_address: { host: '127.0.0.1', port: 9 }, token: 'ab'.repeat(16) }, { headers: { 'x-forwarded-role': 'admin', 'x-forwarded-email': 'a@x' } });
    assert.is(spoofed.status, 401);
    // No identity: refused, saying which headers to send.
    const noWho = await requestJson('POST', `${state.proxy.url}/v1/query`, { ca: admin.ca }, { query_id: 1, dataset: 'flows', start: 1, end: 2, return_address: { host: '127.0.0.1', port: 9 }, token: 'ab'.repeat(16) });
    assert.is(noWho.status, 401);
    assert.match(JSON.stringify(noWho.body), /X-Forwarded-Role/);

    // The README's example queries (the ones hd up prints) run through psql on the first start and return rows.
    const readme = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');
    // Their times go to the test log (issue #17 asks for them; never asserted): wall time of the psql
    // process, so each includes psql's own start and connect (a few ms).
    const timed = (sql: string): string => {
      const t0 = performance.now();
      const rows = psql(sql);
      console.log(`  up: ${(performance.now() - t0).toFixed(1)} ms through psql: ${sql}`);
      return rows;
    };
    timed('SELECT count(*) FROM flows');
    for (const q of EXAMPLE_QUERIES) {
      assert.ok(out.includes(q.sql), `hd up prints ${q.sql}`);
      assert.ok(readme.includes(q.sql), `README.md shows ${q.sql}`);
      assert.ok(timed(q.sql).trim() !== '', `${q.sql} returns rows`);
    }
    // The same statements in one psql session with \timing: the statement's own time as a user sees
    // it (no psql start or connect), each run twice (the second with hd_sql's plan cached).
    const statements = ['SELECT count(*) FROM flows', ...EXAMPLE_QUERIES.map((q) => q.sql)];
    const session = psqlSession(['\\timing on', ...statements.flatMap((q) => [q, q])]);
    const times = [...session.matchAll(/^Time: ([\d.]+) ms/gm)].map((m) => Number(m[1]));
    assert.is(times.length, statements.length * 2, session.slice(-2000));
    statements.forEach((q, i) => console.log(`  up: ${times[2 * i]!.toFixed(1)} / ${times[2 * i + 1]!.toFixed(1)} ms (psql \\timing, first / again): ${q}`));
    // hd_sql reads through the Proxy, with the certificate hd up had the DMS issue for it (0600), as role admin.
    assert.match(out, 'SQL (through the Proxy, as role admin, hd-sql@localhost):');
    for (const f of ['hd-sql.key.pem', 'hd-sql.cert.pem']) assert.is(statSync(path.join(dataDir, 'sql', f)).mode & 0o777, 0o600, f);
    const metrics = await (await fetch(`http://${NET}.11.1:8080/metrics`)).text();
    const ok = Number(/hd_proxy_queries_total\{result="ok"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    assert.ok(ok >= EXAMPLE_QUERIES.length, `the Proxy answered the SQL server's reads: ${ok}`);
    // And through Arrow Flight SQL with a client from outside the project (ADBC's driver), at the URI hd up prints.
    assert.match(out, `Arrow Flight SQL: grpc://${NET}.0.1:31337`);
    execFileSync('bash', [path.join(ROOT, 'scripts/flightsql-client.sh'), 'install'], { cwd: ROOT, stdio: 'ignore' });
    const steps = EXAMPLE_QUERIES.map((q) => ({ op: 'query', sql: q.sql.replace(/;$/, '') }));
    const answers = JSON.parse(execFileSync(path.join(ROOT, '.hd/test-deps/flightsql/bin/python'), [path.join(ROOT, 'test/sql/clients/flightsql_client.py'), `grpc://${NET}.0.1:31337`, JSON.stringify({ username: 'hd', password: sqlPassword() })], { input: JSON.stringify(steps), encoding: 'utf8', timeout: 120_000 })) as { rows?: unknown[][]; error?: unknown }[];
    answers.forEach((a, i) => assert.ok(a.rows && a.rows.length > 0, `Flight SQL: ${EXAMPLE_QUERIES[i]?.sql} returns rows: ${JSON.stringify(a).slice(0, 300)}`));
    const status = await hd(['status', '--data-dir', dataDir]);
    assert.is(status.code, 0, status.out);
    assert.match(status.out, /sn1 +storage-node +127\.78\.30\.1:6987 +ok/);
    assert.match(status.out, /scc +scc +127\.78\.20\.1:6987 +ok/);
    assert.match(status.out, /sql +sql +127\.78\.0\.1:5432 +ok/);
    assert.match(status.out, /dms +dms +127\.78\.10\.1:6986 +ok/);
    assert.match(status.out, /proxy +proxy +127\.78\.11\.1:6986 +ok/);
    // The SCC and the Storage Nodes registered with the DMS: each node's ports saw the SCC's
    // certificate (mutual TLS), and nothing else knocked on them.
    for (const sn of ['127.78.30.1', '127.78.30.2']) {
      const id = ((await (await fetch(`http://${sn}:8080/health`)).json()) as { identity: { source: string; peers: { name: string; role: string }[]; refused: number } }).identity;
      assert.ok(id.peers.some((p) => p.name === 'scc1' && p.role === 'scc'), `${sn} linked to scc1 over mutual TLS: ${JSON.stringify(id)}`);
      assert.is(id.refused, 0);
    }
    // Both replicas hold every batch.
    const n1 = segments(path.join(dataDir, 'sn1'));
    assert.ok(n1 > 0);
    assert.is(segments(path.join(dataDir, 'sn2')), n1);

    // A node that crashes is restarted, and the restart is logged.
    const sn2 = state.nodes.find((n) => n.name === 'sn2');
    const pids = execFileSync('pgrep', ['-f', path.join(dataDir, 'sn2', 'config.json')]).toString().trim().split('\n').map(Number);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await until('the restart line', p, () => /sn2 exited \(SIGKILL\); restarting/.test(p.output()));
    await until('sn2 healthy again', p, () => readFileSync(sn2?.log as string, 'utf8').split('start: hd run').length >= 3, 30_000);
    await healthy(sn2?.healthUrl as string);
    // So is the Proxy: its bootstrap token was used, so hd up issues a new one for the restart.
    const proxyLog = state.nodes.find((n) => n.name === 'proxy')?.log as string;
    process.kill(lastPid(proxyLog), 'SIGKILL');
    await until('the Proxy restart line', p, () => /proxy exited \(SIGKILL\); restarting/.test(p.output()));
    await until('the Proxy listening again', p, () => readFileSync(proxyLog, 'utf8').split('listening on https://').length >= 3, 60_000);
    assert.is(await countThroughProxy(state, 'analyst'), 20_000);

    const down = await hd(['down', '--data-dir', dataDir]);
    assert.is(down.code, 0, down.out);
    assert.is(await p.exited, 0);
    assert.not.ok(existsSync(path.join(dataDir, 'up.json')), 'the state file is removed');
    let left = '';
    try {
      left = execFileSync('pgrep', ['-af', dataDir]).toString();
    } catch {
      // pgrep exits 1 when nothing matches: what we want.
    }
    assert.is(left.trim(), '', 'no node process is left behind');
    // The DMS and the Proxy (whose command lines do not name the data directory) too: every pid in the logs is gone.
    for (const n of state.nodes) {
      const pid = lastPid(n.log);
      assert.throws(() => process.kill(pid, 0), /ESRCH/, `${n.name} (pid ${pid}) has exited`);
    }
  } finally {
    await p.stop();
  }
});

up('a second start finds the data and does not ingest again; status without a platform says so', async () => {
  const before = segments(path.join(dataDir, 'sn1'));
  const p = startHd(['up', '--demo', 'small', '--data-dir', dataDir, '--net', NET], KEYS);
  try {
    await until('HD is up', p, () => p.output().includes('HD is up.'));
    assert.match(p.output(), /flows: 20,000 records in \d+ batches/);
    await until('the note on earlier data', p, () => p.output().includes('data from an earlier start found'));
    // The DMS found its state: same CA, the policy kept (not installed again), the declarations accepted as they are.
    assert.match(p.output(), /DMS ready: cluster c1 with 2 Storage Nodes, datasets chess, flows; policy version 1\n/);
    const state = readUpState(dataDir) as UpState;
    assert.is(readFileSync(state.dms.caCert, 'utf8'), caBefore);
    // The administrator replaces the policy where the ready message says (PUT /v1/policy); the running Proxy takes it.
    const put = await requestJson('PUT', `${state.dms.url}/v1/policy`, adminTls(state), { rego: 'package hd.authz\nimport rego.v1\ndefault allow := true\nhidden_fields contains "src_ip" if input.role == "guest"\n' });
    assert.equal(put.body, { version: 2, proxies: [{ proxy: 'hd-proxy', result: 'installed' }] });
    assert.is(segments(path.join(dataDir, 'sn1')), before);
    const again = await hd(['up', '--data-dir', dataDir, '--net', NET]);
    assert.is(again.code, 1);
    assert.match(again.out, /already running from .* \(pid \d+\); 'hd status' shows it, 'hd down' stops it/);
  } finally {
    await p.stop();
  }
  const status = await hd(['status', '--data-dir', dataDir]);
  assert.is(status.code, 1);
  assert.match(status.out, /no platform is running from .*; start one with 'hd up'/);
  const bad = await hd(['up', '--demo', 'lots', '--data-dir', dataDir]);
  assert.is(bad.code, 2);
  assert.match(bad.out, /--demo takes default, small or none, got "lots"/);
  const p2 = startHd(['up', '--data-dir', dataDir, '--net', NET], { PLATFORM_KEY_BITS: '1024' });
  assert.is(await p2.exited, 2);
  assert.match(p2.output(), /PLATFORM_KEY_BITS must be an RSA key size from 2048 to 16384 bits, got "1024"/);
});

up('after a restart psql and the HTTP door answer from the recovered data', async () => {
  const p = startHd(['up', '--demo', 'small', '--data-dir', dataDir, '--net', NET], KEYS);
  try {
    await until('HD is up', p, () => p.output().includes('HD is up.'));
    // After a restart the data is read from the recovered segments: the first example answers again.
    assert.ok(psql(EXAMPLE_QUERIES[0]!.sql).trim() !== '', 'the first example returns rows after a restart');
    const http = await fetch(`http://${NET}.0.1:8081/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`hd:${sqlPassword()}`).toString('base64')}` }, body: JSON.stringify({ sql: 'SELECT count(*) AS n FROM flows' }) });
    assert.equal(((await http.json()) as { rows: unknown[][] }).rows, [[20_000]]);
    // The restarted Proxy registered with a new token and answers from the recovered data; the DMS kept the administrator's policy.
    const state = readUpState(dataDir) as UpState;
    assert.is(await countThroughProxy(state, 'analyst'), 20_000);
    assert.match(p.output(), /policy version 2\n/);
    assert.match(p.output(), /policy: version 2 \(kept from an earlier start\); replace it with PUT \/v1\/policy/);
    assert.is(((await requestJson('GET', `${state.dms.url}/v1/policy`, adminTls(state))).body as { version: number }).version, 2);
  } finally {
    await p.stop();
  }
});

up.run();
