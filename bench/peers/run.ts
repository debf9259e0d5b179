/**
 * `npm run bench:peers [-- --records N] [--only hd,pg,duckdb,chdb,questdb]`: HD side by side with
 * PostgreSQL, DuckDB, chDB and QuestDB on the same flow records in one run (issue #10), one system at
 * a time so no two share the cores, each started and stopped here on loopback. Prints one table of
 * medians and HD / peer ratios, and the answers of each system (which must agree).
 *
 * Peers are installed by bench/peers/install.sh (Debian, PyPI, Maven Central) into .hd/bench-deps/;
 * a peer that cannot be installed or started is skipped with its reason printed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runChdb } from './chdb';
import { makeDataset, writeCsv, writeIlp } from './dataset';
import { runDuckdb } from './duckdb';
import { runHd } from './hd';
import { runPostgres } from './postgres';
import { runQuestdb } from './questdb';
import { since, workload, type SystemResult } from './workload';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const N = Number(arg('records') ?? 10_000_000);
const only = (arg('only') ?? 'hd,pg,duckdb,chdb,questdb').split(',');
if (!Number.isInteger(N) || N < 10_000) throw new Error(`--records must be an integer ≥ 10000, got ${arg('records')}`);

/** Installs the peers (idempotent): peer → 'ok <detail>' or the reason it is unavailable. */
function install(): Map<string, string> {
  const script = path.join(__dirname, 'install.sh');
  const out = execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const m = new Map<string, string>();
  for (const line of out.trim().split('\n')) {
    const [peer, ...rest] = line.split(' ');
    m.set(peer as string, rest.join(' '));
  }
  return m;
}

const fmt = (ms: number | undefined): string => (ms === undefined ? '—' : ms >= 10_000 ? (ms / 1000).toFixed(1) + ' s' : ms >= 100 ? ms.toFixed(0) + ' ms' : ms.toFixed(1) + ' ms');

/** Prints the table: a row per measure, a column per system, then HD / peer ratios. */
function table(results: SystemResult[], n: number): void {
  const hd = results.find((r) => r.system === 'HD');
  const peers = results.filter((r) => r.system !== 'HD' && !r.skipped);
  const measures: [string, (r: SystemResult) => number | undefined, boolean][] = [
    ['1 durable ingest (records/s)', (r) => (r.ingestMs === undefined ? undefined : r.ingestMs), true],
    ['1b bulk load of the CSV file, native (records/s)', (r) => r.ingestFileMs ?? (r.system === 'chDB' || r.system === 'PostgreSQL' ? r.ingestMs : undefined), true],
    ['2 filtered aggregate, 10% of time, cold', (r) => r.q2ColdMs, false],
    ['2 filtered aggregate, 10% of time, warm (median of 21)', (r) => r.q2WarmMs, false],
    ['3 one-batch window, selective, p50 of 200', (r) => r.q3P50Ms, false],
    ['3 one-batch window, selective, p99 of 200', (r) => r.q3P99Ms, false],
    ['4a GROUP BY enum label, ORDER BY (median of 11)', (r) => r.q4GroupMs, false],
    ['4b rows to the client (median of 3)', (r) => r.q4RowsMs, false],
    ['5 count(*) over all the data (median of 21)', (r) => r.q5Ms, false],
  ];
  const shown = [hd, ...peers].filter((r): r is SystemResult => r !== undefined && !r.skipped);
  console.log(`\n| workload | ${shown.map((r) => r.system).join(' | ')} | ${peers.map((p) => `HD / ${p.system}`).join(' | ')} |`);
  console.log(`|---|${shown.map(() => '---:').join('|')}|${peers.map(() => '---:').join('|')}|`);
  for (const [name, get, isIngest] of measures) {
    const cells = shown.map((r) => {
      const v = get(r);
      if (v === undefined) return '—';
      return isIngest ? `${Math.round(n / (v / 1000)).toLocaleString('en-US')} (${fmt(v)})` : fmt(v);
    });
    // Ratio HD / peer: for ingest the rate ratio (> 1: HD faster), for queries the time ratio (< 1: HD faster).
    const h = hd && !hd.skipped ? (get(hd) ?? (isIngest ? hd.ingestMs : undefined)) : undefined;
    const ratios = peers.map((p) => {
      const v = get(p);
      if (h === undefined || v === undefined) return '—';
      return isIngest ? `${(v / h).toFixed(2)}× rate` : `${(h / v).toFixed(2)}× time`;
    });
    console.log(`| ${name} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`);
  }
}

(async () => {
  const base = mkdtempSync(path.join(process.env.HD_BENCH_DIR ?? os.tmpdir(), 'hd-peers-'));
  try {
    const avail = install();
    let t = process.hrtime.bigint();
    const d = makeDataset(N);
    console.log(`${N} records of 150 bytes (${((N * 150) / 1e6).toFixed(0)} MB), ${d.batches.length} minute batches, ts ${d.first}..${d.end}; generated in ${(since(t) / 1000).toFixed(1)} s; ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    const w = workload(d, (a, b) => `ts >= ${a} AND ts < ${b}`);
    console.log(`Q2: ${w.q2}\nQ3 (1 of 200): ${w.q3[0]}\nQ4a: ${w.q4group}\nQ4b: ${w.q4rows}  (${w.rowsWanted} rows)\nQ5: ${w.q5}`);
    const csv = path.join(base, 'flows.csv');
    const ilp = path.join(base, 'flows.ilp');
    if (only.some((s) => s === 'pg' || s === 'chdb' || s === 'duckdb')) {
      t = process.hrtime.bigint();
      writeCsv(d, csv);
      console.log(`CSV for PostgreSQL, chDB and DuckDB's COPY written in ${(since(t) / 1000).toFixed(1)} s (not timed as ingest)`);
    }
    const results: SystemResult[] = [];
    const skip = (system: string, why: string): SystemResult => ({ system, skipped: why, answers: {}, notes: [] });
    for (const s of only) {
      const started = process.hrtime.bigint();
      console.log(`\n--- ${s} (load average ${os.loadavg()[0]?.toFixed(1)}) ---`);
      let r: SystemResult;
      const a = avail.get(s === 'pg' ? 'pg' : s);
      if (s === 'hd') r = await runHd(d);
      else if (s === 'duckdb') r = await runDuckdb(d, base, csv);
      else if (!a?.startsWith('ok')) r = skip(s, a ?? 'not installed');
      else if (s === 'pg') r = await runPostgres(d, base, csv, a.slice(3));
      else if (s === 'chdb') r = await runChdb(d, base, csv, a.slice(3));
      else if (s === 'questdb') {
        t = process.hrtime.bigint();
        writeIlp(d, ilp);
        console.log(`ILP lines for QuestDB written in ${(since(t) / 1000).toFixed(1)} s (not timed as ingest)`);
        r = await runQuestdb(d, base, ilp, a.slice(3));
        rmSync(ilp, { force: true });
      } else r = skip(s, `unknown system ${s}`);
      results.push(r);
      console.log(r.skipped ? `SKIPPED ${r.system}: ${r.skipped}` : `${r.system}: ${JSON.stringify({ ...r, notes: undefined })}`);
      for (const note of r.notes) console.log(`  note: ${note}`);
      console.log(`  (${(since(started) / 1000).toFixed(1)} s)`);
    }
    table(results, N);
    console.log('\nAnswers (must agree):');
    for (const r of results.filter((x) => !x.skipped)) console.log(`  ${r.system}: Q2 ${r.answers.q2}; Q3 rows ${r.answers.q3rows}; Q4a ${r.answers.q4group}; Q4b rows ${r.answers.q4rows}; Q5 ${r.answers.q5}`);
    // Compared by value, whatever order each system filled its answers in.
    const distinct = new Set(results.filter((x) => !x.skipped).map((x) => JSON.stringify(Object.entries(x.answers).sort(([a], [b]) => a.localeCompare(b)))));
    console.log(distinct.size > 1 ? 'WARNING: the systems disagree (see the answers above)' : 'All measured systems gave the same answers.');
    for (const r of results.filter((x) => x.skipped)) console.log(`skipped ${r.system}: ${r.skipped}`);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
