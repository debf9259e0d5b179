/**
 * PostgreSQL in `npm run bench:peers`: a private cluster (initdb + pg_ctl, Debian's server
 * binaries) in the bench's temporary directory on a free loopback port, run as the `postgres` user
 * when the bench runs as root. Ingest: COPY FROM STDIN through psql's `\copy` of the CSV (fsync and
 * synchronous_commit on, the defaults); then a BRIN index on ts and VACUUM ANALYZE (timed apart).
 * Queries through node-postgres; the cold query follows a restart (empty shared buffers).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../test/support/hdProcess';
import type { Dataset } from './dataset';
import { runQueries, since, tsBound, workload, type SystemResult } from './workload';

/** The table: the record's 22 fields (addresses as inet, arrays as their text form). */
const TABLE = `CREATE TABLE flows (ts bigint, proto text, src inet, dst inet, src6 inet, sport integer, dport integer, bytes bigint, packets bigint, dt bigint, amount numeric(18,4), ttl smallint, rtt real, score double precision, ok boolean, host text, ports text, tags text, asn integer, vlan smallint, flow_id bigint, country text)`;

/** Runs PostgreSQL's part of the bench; `bin` is the server binaries' directory. */
export async function runPostgres(d: Dataset, base: string, csv: string, bin: string): Promise<SystemResult> {
  const r: SystemResult = { system: 'PostgreSQL', answers: {}, notes: [] };
  const root = process.getuid?.() === 0;
  const dir = path.join(base, 'pg');
  const port = await freePort();
  // As root, the server runs as `postgres` (initdb refuses root); the directories must be reachable.
  const as = (cmd: string, args: string[]): string => execFileSync(root ? 'runuser' : cmd, root ? ['-u', 'postgres', '--', cmd, ...args] : args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  mkdirSync(dir, { mode: 0o700 });
  if (root) {
    chmodSync(base, 0o755);
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c shared_buffers=1GB -c max_wal_size=8GB -c checkpoint_timeout=30min -c work_mem=64MB -c maintenance_work_mem=512MB`;
  const ctl = (...args: string[]): string => as(path.join(bin, 'pg_ctl'), ['-D', path.join(dir, 'data'), '-l', path.join(dir, 'log'), ...args]);
  let started = false;
  let c: pg.Client | undefined;
  const connect = async (): Promise<pg.Client> => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    await client.connect();
    return client;
  };
  try {
    as(path.join(bin, 'initdb'), ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    ctl('-o', opts, '-w', 'start');
    started = true;
    c = await connect();
    await c.query(TABLE);
    let t = process.hrtime.bigint();
    execFileSync('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', `\\copy flows FROM '${csv}' WITH (FORMAT csv)`], { stdio: ['ignore', 'ignore', 'pipe'] });
    r.ingestMs = since(t);
    t = process.hrtime.bigint();
    await c.query('CREATE INDEX flows_ts ON flows USING brin (ts)');
    await c.query('VACUUM ANALYZE flows');
    r.notes.push(`ingest = COPY FROM STDIN (psql \\copy of CSV); then BRIN index on ts + VACUUM ANALYZE took ${(since(t) / 1000).toFixed(1)} s more (not in the ingest figure)`);
    await c.end();
    // Cold: a restart empties shared buffers (the OS page cache stays warm).
    ctl('-m', 'fast', '-w', 'restart', '-o', opts);
    c = await connect();
    const client = c;
    await runQueries(workload(d, tsBound), { query: async (q) => (await client.query({ text: q, rowMode: 'array' })).rows as unknown[][] }, r);
    r.notes.push('cold: first query after a server restart (OS page cache warm); settings: shared_buffers 1GB, max_wal_size 8GB, fsync on');
  } catch (err) {
    const e = err as Error & { stderr?: Buffer | string };
    r.skipped = `failed: ${e.message} ${e.stderr ? String(e.stderr).slice(-1000) : ''}`;
  } finally {
    await c?.end().catch(() => undefined);
    if (started) {
      try {
        ctl('-m', 'fast', '-w', 'stop');
      } catch {
        // already stopped
      }
    }
  }
  return r;
}
