/**
 * The queries of `npm run bench:peers` (issue #10's workloads 2-4), the same SQL text for every
 * system but the time bound, which each system writes its own way (QuestDB bounds its designated
 * timestamp so it can prune partitions), and the result every system reports.
 */
import { INTERVAL, PER_SECOND, type Dataset } from './dataset';

/** How a system bounds time: `[a, b)` in seconds as a SQL predicate. */
export type TimeBound = (a: number, b: number) => string;

/** The plain bound on the integer `ts` column (HD, PostgreSQL, DuckDB, chDB). */
export const tsBound: TimeBound = (a, b) => `ts >= ${a} AND ts < ${b}`;

/** The workload's queries, as a system runs them. */
export interface Workload {
  /** 2: 10% of the time range, two predicates, an aggregate. */
  readonly q2: string;
  /** Q2's time window [a, b) in seconds. */
  readonly q2Window: readonly [number, number];
  /** 3: 200 one-batch (one-minute) windows with a selective predicate. */
  readonly q3: readonly string[];
  /** 4a: GROUP BY the enum label over all the data, ORDER BY. */
  readonly q4group: string;
  /** 5: count(*) over all the data (issue #17). */
  readonly q5: string;
  /** 4b: a window returning `rowsWanted` rows to the client. */
  readonly q4rows: string;
  readonly rowsWanted: number;
}

/** The workload for dataset `d` with `bound` as the system's time predicate. */
export function workload(d: Dataset, bound: TimeBound): Workload {
  const span = d.end - d.first;
  // Q2: the middle 10% of the time range, minute-aligned when the range holds 10+ minutes.
  let a = d.first + Math.floor(span * 0.45);
  let b = a + Math.max(1, Math.round(span * 0.1));
  if (span >= 10 * INTERVAL) {
    a -= a % INTERVAL;
    b = a + Math.round(span / 10 / INTERVAL) * INTERVAL;
  }
  const q2 = `SELECT count(*) AS n, sum(bytes) AS b, sum(packets) AS p FROM flows WHERE ${bound(a, b)} AND proto = 'tcp' AND dport = 443`;
  // Q3: minute windows (one HD batch each) spread over the data, 0.1% of a minute's records match.
  const minutes = d.batches.map((x) => x.start);
  const q3 = Array.from({ length: 200 }, (_, k) => {
    const m = minutes[(k * 7919) % minutes.length] as number;
    return `SELECT ts, src, dst, sport, bytes FROM flows WHERE ${bound(m, m + INTERVAL)} AND proto = 'udp' AND dport = 22 AND packets < 1000`;
  });
  const q4group = `SELECT proto, count(*) AS n, sum(bytes) AS b FROM flows WHERE ${bound(d.first, d.end)} GROUP BY proto ORDER BY n DESC, proto`;
  const q5 = `SELECT count(*) FROM flows WHERE ${bound(d.first, d.end)}`;
  // Q4b: 1 000 000 rows (N/10 below 10M records), a window from the start of the data.
  const rowsWanted = Math.min(1_000_000, Math.floor(d.n / 10));
  const secs = Math.ceil(rowsWanted / PER_SECOND);
  const q4rows = `SELECT ts, proto, src, dport, bytes, host FROM flows WHERE ${bound(d.first, d.first + secs)} AND flow_id < ${rowsWanted * 7919}`;
  return { q2, q2Window: [a, b], q3, q4group, q5, q4rows, rowsWanted };
}

/** What a system measured; times in ms, undefined where not run. */
export interface SystemResult {
  readonly system: string;
  /** Why the system was not measured (not installed, failed to start). */
  skipped?: string;
  ingestMs?: number;
  /** The peer's native bulk load of the CSV file, where that is a second path (DuckDB's COPY). */
  ingestFileMs?: number;
  q2ColdMs?: number;
  q2WarmMs?: number;
  q3P50Ms?: number;
  q3P99Ms?: number;
  q4GroupMs?: number;
  q4RowsMs?: number;
  q5Ms?: number;
  /** Answers, compared across systems: Q2's n|b|p, Q4a's groups, Q4b's row count, Q3's total rows. */
  answers: { q2?: string; q4group?: string; q4rows?: number; q3rows?: number; q5?: string };
  notes: string[];
}

/** Median of xs. */
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** The p-th percentile (0-100, nearest rank). */
export const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
};

/** Milliseconds since `t` (process.hrtime.bigint()). */
export const since = (t: bigint): number => Number(process.hrtime.bigint() - t) / 1e6;

/** A SQL connection as the shared workload driver sees it: runs a statement, returns its rows. */
export interface SqlRunner {
  query(sql: string): Promise<readonly (readonly unknown[])[]>;
}

/** Warm runs of Q2 and of Q5 (median taken). */
export const WARM_RUNS = 21;

/** Runs of Q4a (median taken). */
export const GROUP_RUNS = 11;

/**
 * Rounds of the warm-up every system gets after its cold Q2 and before the warm figures (at least
 * these, and at least {@link WARMUP_MS}): each round runs Q2, Q4a and Q5 once, and the warm-up
 * ends with one pass over Q3's statements. "Warm"
 * means a server that has been answering for a while — JIT-compiled (HD's Node.js processes,
 * QuestDB's JVM), its caches filled — not the first statements after a start, which the cold
 * figure measures.
 */
export const WARMUP_ROUNDS = 30;

/**
 * The warm-up goes on, round after round, until it has also lasted this long: a server's JIT
 * reaches its steady state after a number of statements, not of rounds (HD's four Node.js
 * processes took about 2 000 statements to settle: Q5 at 4M records 3.6 → 2.1 ms), and a fast
 * system answers 30 rounds in well under a second.
 */
export const WARMUP_MS = 20_000;

/**
 * Runs workloads 2-5 through `run` (the first Q2 after the system's start is the cold one, then
 * {@link WARMUP_ROUNDS} rounds of warm-up, for {@link WARMUP_MS} at least) and
 * fills `r`. `fresh` (re)starts the system's query side so the first Q2 is cold; may be undefined
 * when the caller already started it fresh.
 */
export async function runQueries(w: Workload, run: SqlRunner, r: SystemResult): Promise<void> {
  let t = process.hrtime.bigint();
  const cold = await run.query(w.q2);
  r.q2ColdMs = since(t);
  r.answers.q2 = (cold[0] ?? []).map(String).join('|');
  const warmUp = process.hrtime.bigint();
  for (let k = 0; k < WARMUP_ROUNDS || since(warmUp) < WARMUP_MS; k++) for (const q of [w.q2, w.q4group, w.q5]) await run.query(q);
  for (const q of w.q3) await run.query(q);
  const warm: number[] = [];
  for (let k = 0; k < WARM_RUNS; k++) {
    t = process.hrtime.bigint();
    await run.query(w.q2);
    warm.push(since(t));
  }
  r.q2WarmMs = median(warm);
  const lat: number[] = [];
  let q3rows = 0;
  for (const q of w.q3) {
    t = process.hrtime.bigint();
    q3rows += (await run.query(q)).length;
    lat.push(since(t));
  }
  r.q3P50Ms = percentile(lat, 50);
  r.q3P99Ms = percentile(lat, 99);
  r.answers.q3rows = q3rows;
  const groups: number[] = [];
  for (let k = 0; k < GROUP_RUNS; k++) {
    t = process.hrtime.bigint();
    const g = await run.query(w.q4group);
    groups.push(since(t));
    r.answers.q4group = g.map((row) => row.map(String).join(':')).join(' ');
  }
  r.q4GroupMs = median(groups);
  const counts: number[] = [];
  for (let k = 0; k < WARM_RUNS; k++) {
    t = process.hrtime.bigint();
    r.answers.q5 = String((await run.query(w.q5))[0]?.[0]);
    counts.push(since(t));
  }
  r.q5Ms = median(counts);
  const rowsMs: number[] = [];
  for (let k = 0; k < 3; k++) {
    t = process.hrtime.bigint();
    r.answers.q4rows = (await run.query(w.q4rows)).length;
    rowsMs.push(since(t));
  }
  r.q4RowsMs = median(rowsMs);
}
