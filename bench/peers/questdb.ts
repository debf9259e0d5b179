/**
 * QuestDB in `npm run bench:peers`: the Maven Central jar run with `java`, every port on loopback,
 * commits fsynced (cairo.commit.mode=sync). Ingest: InfluxDB line protocol over HTTP (`/write`,
 * its recommended fast path: each request is acknowledged once committed), 16 MiB requests one
 * after another, into a WAL table partitioned by hour on the designated timestamp `t` (= ts); the
 * time runs until every row is visible to queries. Queries over its PostgreSQL wire with
 * node-postgres, time-bounded on `t` (so partitions and intervals are pruned). Cold: the first
 * query after a server restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freePort, waitForPort } from '../../test/support/hdProcess';
import type { Dataset } from './dataset';
import { runQueries, since, workload, type SystemResult, type TimeBound } from './workload';

const TABLE = `CREATE TABLE flows (proto SYMBOL, ts LONG, src VARCHAR, dst VARCHAR, src6 VARCHAR, sport LONG, dport LONG, bytes LONG, packets LONG, dt LONG, amount DOUBLE, ttl LONG, rtt DOUBLE, score DOUBLE, ok BOOLEAN, host VARCHAR, ports VARCHAR, tags VARCHAR, asn LONG, vlan LONG, flow_id LONG, country VARCHAR, t TIMESTAMP) TIMESTAMP(t) PARTITION BY HOUR WAL`;
const iso = (s: number): string => `'${new Date(s * 1000).toISOString().slice(0, 19)}.000000Z'`;
/** QuestDB bounds its designated timestamp, which carries ts. */
const tBound: TimeBound = (a, b) => `t >= ${iso(a)} AND t < ${iso(b)}`;
const REQUEST = 16 << 20;

interface Server {
  readonly proc: ChildProcess;
  readonly http: number;
  readonly pg: number;
  readonly log: () => string;
}

async function start(jar: string, root: string, ports: { http: number; pg: number }): Promise<Server> {
  const env = {
    ...process.env,
    QDB_HTTP_BIND_TO: `127.0.0.1:${ports.http}`,
    QDB_PG_NET_BIND_TO: `127.0.0.1:${ports.pg}`,
    QDB_LINE_TCP_ENABLED: 'false',
    QDB_LINE_UDP_ENABLED: 'false',
    QDB_HTTP_MIN_ENABLED: 'false',
    QDB_TELEMETRY_ENABLED: 'false',
    QDB_CAIRO_COMMIT_MODE: 'sync',
  };
  const proc = spawn('java', ['-Xmx2g', '-p', jar, '-m', 'io.questdb/io.questdb.ServerMain', '-d', root], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
  proc.stderr?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
  const asHd = { proc, output: () => out, exited: new Promise<number | string>((r) => proc.once('exit', (c, s) => r(c ?? s ?? 'unknown'))), stop: async () => 0, kill9: async () => 0 };
  await waitForPort('127.0.0.1', ports.pg, asHd, 60_000);
  await waitForPort('127.0.0.1', ports.http, asHd, 60_000);
  return { proc, http: ports.http, pg: ports.pg, log: () => out };
}

async function stop(s: Server): Promise<void> {
  if (s.proc.exitCode !== null) return;
  const gone = new Promise<void>((r) => s.proc.once('exit', () => r()));
  s.proc.kill('SIGTERM');
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), 20_000);
  await gone;
  clearTimeout(timer);
}

async function exec(s: Server, sql: string): Promise<{ dataset?: unknown[][]; error?: string }> {
  const res = await fetch(`http://127.0.0.1:${s.http}/exec?query=${encodeURIComponent(sql)}`);
  return (await res.json()) as { dataset?: unknown[][]; error?: string };
}

/** Posts the ILP file in ~16 MiB requests cut at line ends; then waits until every row is visible: ms. */
async function ingest(s: Server, ilp: string, n: number): Promise<number> {
  const fd = openSync(ilp, 'r');
  const buf = Buffer.alloc(REQUEST + (1 << 20));
  let carry = 0;
  const t = process.hrtime.bigint();
  try {
    for (;;) {
      const got = readSync(fd, buf, carry, REQUEST, null);
      const len = carry + got;
      if (len === 0) break;
      const cut = got === 0 ? len : buf.lastIndexOf(10, len - 1) + 1;
      const res = await fetch(`http://127.0.0.1:${s.http}/write?precision=n`, { method: 'POST', body: buf.subarray(0, cut) });
      if (res.status !== 204) throw new Error(`QuestDB /write answered ${res.status}: ${(await res.text()).slice(0, 500)}`);
      buf.copy(buf, 0, cut, len);
      carry = len - cut;
      if (got === 0 && carry === 0) break;
    }
  } finally {
    closeSync(fd);
  }
  for (;;) {
    const r = await exec(s, 'SELECT count() FROM flows');
    if (Number(r.dataset?.[0]?.[0]) >= n) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  return since(t);
}

/** Runs QuestDB's part of the bench; `jar` is the Maven Central jar. */
export async function runQuestdb(d: Dataset, base: string, ilp: string, jar: string): Promise<SystemResult> {
  const r: SystemResult = { system: 'QuestDB', answers: {}, notes: [] };
  const root = path.join(base, 'questdb');
  mkdirSync(root);
  const ports = { http: await freePort(), pg: await freePort() };
  let s: Server | undefined;
  let c: pg.Client | undefined;
  try {
    s = await start(jar, root, ports);
    const created = await exec(s, TABLE);
    if (created.error) throw new Error(`CREATE TABLE: ${created.error}`);
    r.ingestMs = await ingest(s, ilp, d.n);
    await stop(s);
    s = await start(jar, root, ports);
    c = new pg.Client({ host: '127.0.0.1', port: s.pg, user: 'admin', password: 'quest', database: 'qdb' });
    await c.connect();
    const client = c;
    await runQueries(workload(d, tBound), { query: async (q) => (await client.query({ text: q, rowMode: 'array' })).rows as unknown[][] }, r);
    r.notes.push('ingest = ILP over HTTP, 16 MiB requests, commit mode sync, until all rows visible; time bounds on the designated timestamp; cold: first query after a restart');
  } catch (err) {
    r.skipped = `failed: ${(err as Error).message}${s ? `\n${s.log().slice(-1500)}` : ''}`;
  } finally {
    await c?.end().catch(() => undefined);
    if (s) await stop(s);
  }
  return r;
}
