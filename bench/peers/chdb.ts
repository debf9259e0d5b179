/**
 * chDB in `npm run bench:peers`: ClickHouse in-process in Python (PyPI `chdb`, venv from
 * install.sh), driven by bench/peers/chdb_runner.py, which times inside Python and answers in
 * JSON. Ingest: INSERT ... SELECT from the CSV into a MergeTree table ordered by ts, with
 * fsync_after_insert and fsync_part_directory on (durable like the others). Queries in a second
 * Python process that opens the session again (its first query is the cold one).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Dataset } from './dataset';
import { GROUP_RUNS, median, percentile, tsBound, WARM_RUNS, WARMUP_MS, WARMUP_ROUNDS, workload, type SystemResult } from './workload';

const TABLE = `CREATE TABLE flows (ts Int64, proto LowCardinality(String), src String, dst String, src6 String, sport Int32, dport Int32, bytes Int64, packets Int64, dt Int64, amount Decimal(18,4), ttl Int16, rtt Float32, score Float64, ok Bool, host String, ports String, tags String, asn Int32, vlan Int16, flow_id Int64, country String) ENGINE = MergeTree ORDER BY ts SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`;

/** Runs chdb_runner.py with `req` on stdin; resolves with its JSON answer. */
function runner(python: string, req: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const p = spawn(python, [path.join(__dirname, 'chdb_runner.py')], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`chdb_runner.py exited ${code}: ${err.slice(-2000)}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as Record<string, unknown>);
      } catch {
        reject(new Error(`chdb_runner.py answered no JSON: ${out.slice(-500)} ${err.slice(-1000)}`));
      }
    });
    p.stdin.end(JSON.stringify(req));
  });
}

/** Runs chDB's part of the bench; `python` is the venv's interpreter. */
export async function runChdb(d: Dataset, base: string, csv: string, python: string): Promise<SystemResult> {
  const r: SystemResult = { system: 'chDB', answers: {}, notes: [] };
  const dir = path.join(base, 'chdb');
  try {
    const ing = await runner(python, { mode: 'ingest', path: dir, csv, table: TABLE });
    if (ing['rows'] !== d.n) throw new Error(`chDB holds ${String(ing['rows'])} rows, expected ${d.n}`);
    r.ingestMs = ing['ingest_ms'] as number;
    const w = workload(d, tsBound);
    const q = await runner(python, { mode: 'query', path: dir, q2: w.q2, q3: w.q3, q4group: w.q4group, q4rows: w.q4rows, q5: w.q5, warm_runs: WARM_RUNS, group_runs: GROUP_RUNS, warmup_rounds: WARMUP_ROUNDS, warmup_ms: WARMUP_MS });
    r.q2ColdMs = q['q2_cold_ms'] as number;
    r.q2WarmMs = median(q['q2_warm_ms'] as number[]);
    r.q3P50Ms = percentile(q['q3_ms'] as number[], 50);
    r.q3P99Ms = percentile(q['q3_ms'] as number[], 99);
    r.q4GroupMs = median(q['q4group_ms'] as number[]);
    r.q4RowsMs = median(q['q4rows_ms'] as number[]);
    r.q5Ms = median(q['q5_ms'] as number[]);
    r.answers.q2 = (q['q2'] as string[]).join('|');
    r.answers.q3rows = q['q3_rows'] as number;
    r.answers.q4group = (q['q4group'] as string[][]).map((g) => g.join(':')).join(' ');
    r.answers.q4rows = q['q4rows'] as number;
    r.answers.q5 = q['q5'] as string;
    r.notes.push('ingest = INSERT ... SELECT FROM file(CSV) into MergeTree ORDER BY ts, fsync_after_insert=1; timed inside Python; results as CSV text; cold: first query of a new process');
  } catch (err) {
    r.skipped = `failed: ${(err as Error).message}`;
  }
  return r;
}
