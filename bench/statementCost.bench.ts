/**
 * What one of the peers bench's statements costs on HD, repeated through the PostgreSQL wire for
 * a while: its latency (median per round) and the CPU all Node processes spent per statement
 * (this client, hd_sql, the SCC, the Storage Nodes; and the Storage Nodes alone). On the 2-core
 * machine the CPU figure moves far less from run to run than the latency, so compare changes by it.
 * The same cluster as `bench/peers/hd.ts` (an SCC and two Storage Nodes, `hd run`), N flow records.
 * For Q4b, the time to its first row and to its last, eight times.
 *
 *   npx tsx bench/statementCost.bench.ts [--records N] [--query q2|q3|q4a|q4b|q5] [--rounds R] [--round-ms MS]
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startCluster } from '../test/support/cluster';
import type { startHd } from '../test/support/hdProcess';
import { makeDataset } from './peers/dataset';
import { FLOWS_SCHEMA, ingest, startSql } from './peers/hd';
import { median, since, tsBound, workload } from './peers/workload';

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const N = Number(arg('records', '4000000'));
const QUERY = arg('query', 'q5');
const ROUNDS = Number(arg('rounds', '6'));
const ROUND_MS = Number(arg('round-ms', '1500'));

/** User + system CPU ticks (1/100 s) of every Node process whose command line holds `only` (all when absent). */
function cpuTicks(only?: string): number {
  let t = 0;
  for (const pid of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!st.includes('(node)')) continue;
      if (only && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(only)) continue;
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      t += Number(f[11]) + Number(f[12]);
    } catch {
      // The process ended meanwhile.
    }
  }
  return t;
}

async function main(): Promise<void> {
  const d = makeDataset(N);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-statement-cost-'));
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', 'flows.json'), FLOWS_SCHEMA);
  const cluster = await startCluster({ recordSize: 150, schemas: [FLOWS_SCHEMA] });
  let sql: ReturnType<typeof startHd> | undefined;
  try {
    await ingest(d, `${cluster.host}:${cluster.scc.productionPort}`);
    const door = await startSql(cluster, path.join(dir, 'schemas'));
    sql = door.sql;
    const c = new pg.Client({ host: '127.0.0.1', port: door.pgPort, user: 'hd', database: 'hd' });
    await c.connect();
    try {
      const w = workload(d, tsBound);
      const texts = QUERY === 'q3' ? w.q3 : QUERY === 'q2' ? [w.q2] : QUERY === 'q4a' ? [w.q4group] : QUERY === 'q4b' ? [w.q4rows] : [w.q5];
      console.log(`${N} records, ${QUERY}: ${texts[0]}${texts.length > 1 ? ` (and ${texts.length - 1} more)` : ''}`);
      if (QUERY === 'q4b') {
        for (let r = 0; r < 8; r++) {
          const t = process.hrtime.bigint();
          let first = -1;
          let n = 0;
          await new Promise<void>((resolve, reject) => {
            // Rows as objects: node-postgres's Query type takes no rowMode (the bench's Q4b figure parses arrays).
            const q = new pg.Query(w.q4rows);
            q.on('row', () => {
              if (first < 0) first = since(t);
              n++;
            });
            q.on('end', () => resolve());
            q.on('error', reject);
            c.query(q);
          });
          console.log(`first row ${first.toFixed(1)} ms, last ${since(t).toFixed(1)} ms (${n} rows)`);
        }
        return;
      }
      for (const t of texts) await c.query(t);
      for (let r = 0; r < ROUNDS; r++) {
        const [all0, sn0] = [cpuTicks(), cpuTicks('storage-node')];
        const ms: number[] = [];
        const t0 = process.hrtime.bigint();
        for (let k = 0; since(t0) < ROUND_MS; k++) {
          const t = process.hrtime.bigint();
          await c.query({ text: texts[k % texts.length] as string, rowMode: 'array' });
          ms.push(since(t));
        }
        const per = (ticks: number): string => ((ticks * 10) / ms.length).toFixed(2);
        console.log(`round ${r + 1}: median ${median(ms).toFixed(2)} ms over ${ms.length} statements; CPU per statement ${per(cpuTicks() - all0)} ms, Storage Nodes ${per(cpuTicks('storage-node') - sn0)} ms`);
      }
    } finally {
      await c.end();
    }
  } finally {
    await sql?.stop();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
