/**
 * HD in `npm run bench:peers`: an SCC and two Storage Nodes (`hd run`, test/support/cluster.ts),
 * ingest through PlatformIngestClient (sha512 chain, both replicas durable at each eob), queries
 * through hd_sql's PostgreSQL wire (`hd run pipelines/sql.yaml`) with node-postgres.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { startCluster } from '../../test/support/cluster';
import { freePort, startHd, waitForPort } from '../../test/support/hdProcess';
import { FLOW } from '../flows';
import type { Dataset } from './dataset';
import { median, runQueries, since, tsBound, workload, type SystemResult, type Workload } from './workload';

/** At most this many eobs unanswered while sending, as an ingester keeps them. */
const MAX_UNACKED = 4;

/** The flows schema under the table name every system uses. */
export const FLOWS_SCHEMA = JSON.stringify({ ...FLOW, id: 'flows' });

/** Sends every batch, at most MAX_UNACKED eobs unanswered; ms from the first byte to the last durable ack. */
export async function ingest(d: Dataset, sccAddress: string): Promise<number> {
  await using client = new PlatformIngestClient();
  client.loadDatasetSchema(FLOWS_SCHEMA);
  client.setSccTargets([sccAddress]);
  const pending = new Set<Promise<boolean>>();
  const t = process.hrtime.bigint();
  for (const b of d.batches) {
    const id = client.generateBatchIdTime(b.start, b.start + 60);
    if (!(await client.streamInsert(id, d.records.subarray(b.from * 150, b.to * 150)))) throw new Error(`HD ingest: ${String(client.lastError)}`);
    const ack = client.sendEob(id).then((ok) => {
      if (!ok) throw new Error(`HD eob refused: ${String(client.lastError)}`);
      return ok;
    });
    pending.add(ack);
    void ack.then(() => pending.delete(ack), () => undefined);
    while (pending.size >= MAX_UNACKED) await Promise.race(pending);
  }
  await Promise.all(pending);
  return since(t);
}

/**
 * Where HD's query time goes: the fetch alone (Dispatch → SCC → Storage Nodes scan with the pushed
 * filters → the statement's columns decoded to Arrow in this process), without hd_sql's parse, DuckDB load,
 * evaluation and PostgreSQL wire. Median of 5 for Q2's read, of 21 for one of Q3's and of 3 for Q4a's (every record).
 */
async function fetchOnly(d: Dataset, w: Workload, scc: { host: string; productionPort: number; queryGrpcPort: number }): Promise<string> {
  const q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  try {
    q.loadDatasetSchema(FLOWS_SCHEMA);
    q.setSccTargets([{ host: scc.host, port: scc.productionPort, grpcPort: scc.queryGrpcPort }]);
    const time = async (query: Record<string, unknown>, runs: number, columns: readonly string[]): Promise<{ ms: number; rows: number }> => {
      const ms: number[] = [];
      let rows = 0;
      for (let k = 0; k < runs; k++) {
        rows = 0;
        const t = process.hrtime.bigint();
        await q.executeStream(
          query,
          async (b) => {
            rows += b.numRows;
          },
          { columns },
        );
        ms.push(since(t));
      }
      return { ms: median(ms), rows };
    };
    const filters = [
      { field: 'ts', op: 'ge', value: String(w.q2Window[0]) },
      { field: 'ts', op: 'lt', value: String(w.q2Window[1]) },
      { field: 'proto', op: 'eq', value: '6' },
      { field: 'dport', op: 'eq', value: '443' },
    ];
    const q2 = await time({ start_time: w.q2Window[0], end_time: w.q2Window[1] - 1, sub_queries: [{ filters }] }, 5, ['ts', 'proto', 'dport', 'bytes', 'packets']);
    const m = d.batches[Math.floor(d.batches.length / 2)]?.start ?? d.first;
    const q3Filters = [
      { field: 'ts', op: 'ge', value: String(m) },
      { field: 'ts', op: 'lt', value: String(m + 60) },
      { field: 'proto', op: 'eq', value: '17' },
      { field: 'dport', op: 'eq', value: '22' },
      { field: 'packets', op: 'lt', value: '1000' },
    ];
    const q3 = await time({ start_time: m, end_time: m + 59, sub_queries: [{ filters: q3Filters }] }, 21, ['ts', 'proto', 'src', 'dst', 'sport', 'dport', 'bytes', 'packets']);
    const all = await time({ start_time: d.first, end_time: d.end - 1, sub_queries: [] }, 3, ['ts', 'proto', 'bytes']);
    return `fetch alone (PlatformQueryClient.executeStream decoding the statement's columns, as hd_sql does; no SQL layer): Q2's read ${q2.ms.toFixed(1)} ms (${q2.rows} records), a Q3 read ${q3.ms.toFixed(1)} ms (median of 21, ${q3.rows} records), Q4a's read of every record ${all.ms.toFixed(0)} ms (${all.rows} records)`;
  } finally {
    await q.stop();
  }
}

/**
 * hd_sql (`hd run pipelines/sql.yaml`) in direct SCC mode against `cluster`, its PostgreSQL door on
 * a free loopback port, once that port answers.
 */
export async function startSql(cluster: { host: string; scc: { productionPort: number; queryGrpcPort: number } }, schemaDir: string): Promise<{ sql: ReturnType<typeof startHd>; pgPort: number }> {
  const [pgPort, http, ret] = [await freePort(), await freePort(), await freePort()];
  const sql = startHd(['run', 'pipelines/sql.yaml', '--quiet'], {
    HD_SQL_SCC_TARGETS: `${cluster.host}:${cluster.scc.productionPort}:${cluster.scc.queryGrpcPort}`,
    HD_SQL_SCHEMA_DIR: schemaDir,
    PLATFORM_DATA_RETURN_HOST: '127.0.0.1',
    PLATFORM_DATA_RETURN_PORT: String(ret),
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${pgPort}`,
    HD_SQL_HTTP_ADDRESS: `127.0.0.1:${http}`,
    HD_SQL_FLIGHTSQL_ENABLED: 'false',
    OBSERVABILITY_PORT: '-1',
    HD_SQL_QUERY_TIMEOUT_MS: '600000',
  });
  await waitForPort('127.0.0.1', pgPort, sql, 60_000);
  return { sql, pgPort };
}

/** Runs HD's part of the bench. */
export async function runHd(d: Dataset): Promise<SystemResult> {
  const r: SystemResult = { system: 'HD', answers: {}, notes: [] };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-peers-sql-'));
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', 'flows.json'), FLOWS_SCHEMA);
  const cluster = await startCluster({ recordSize: 150, schemas: [FLOWS_SCHEMA] });
  let sql: ReturnType<typeof startHd> | undefined;
  let c: pg.Client | undefined;
  try {
    r.ingestMs = await ingest(d, `${cluster.host}:${cluster.scc.productionPort}`);
    const door = await startSql(cluster, path.join(dir, 'schemas'));
    sql = door.sql;
    c = new pg.Client({ host: '127.0.0.1', port: door.pgPort, user: 'hd', database: 'hd' });
    await c.connect();
    const client = c;
    const w = workload(d, tsBound);
    await runQueries(w, { query: async (q) => (await client.query({ text: q, rowMode: 'array' })).rows as unknown[][] }, r);
    r.notes.push('cold: first query of a fresh hd_sql (the Storage Nodes read from the page cache)');
    await c.end();
    c = undefined;
    await sql.stop();
    sql = undefined;
    r.notes.push(await fetchOnly(d, w, { host: cluster.host, ...cluster.scc }));
  } catch (err) {
    r.skipped = `failed: ${(err as Error).message}${sql ? `\n${sql.output().slice(-2000)}` : ''}`;
  } finally {
    await c?.end().catch(() => undefined);
    await sql?.stop();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return r;
}
