/**
 * One statement's run as its paths see it (the record path in sql/sqlEngine.ts, the aggregate path
 * in sql/aggregateRun.ts, row passthrough in sql/passthroughRun.ts): the session, the plan, the
 * engine's settings and fetcher, the notices gathered so far, and the rules every path applies to
 * its answer alike — failed batches noted, HD_SQL_MAX_ROWS, HD_SQL_STRICT.
 */
import type * as arrow from 'apache-arrow';
import type { LocalSqlSession, SqlParam } from '../local/localSqlSession';
import type { DatasetFetcher, FetchOutcome } from './datasetFetcher';
import type { ExecuteOptions, SqlEngineSettings, SqlResult } from './engineTypes';
import type { Plan } from './planner';
import { SqlError } from './sqlError';

/** What a path of one statement works with. */
export interface StatementRun {
  readonly session: LocalSqlSession;
  /** The statement as the client sent it. */
  readonly sql: string;
  readonly plan: Plan;
  readonly opts: ExecuteOptions;
  /** When HD_SQL_QUERY_TIMEOUT_MS runs out (epoch ms). */
  readonly deadline: number;
  readonly settings: SqlEngineSettings;
  readonly fetcher: DatasetFetcher;
  /** Notices that say the answer is not exactly what was asked (HD_SQL_STRICT fails on them). */
  readonly notices: string[];
  /** Informational notices (HD_SQL_EXPLAIN_PUSHDOWN); never fail a statement. */
  readonly info: string[];
  /** `json_deserialize_sql` of a tree. */
  deserialize(tree: string): Promise<string>;
  /**
   * The statement's schema key (sql/parseTrees.ts): what a path keeps per plan it keeps per key
   * instead, shared by the texts that differ only in WHERE integers (sql/planKeyed.ts).
   */
  readonly schemaKey?: string;
}

/** The deadline and cancel signal, as DuckDB and the fetcher take them. */
export function runLimits(r: StatementRun): { deadline: number; signal?: AbortSignal } {
  return { deadline: r.deadline, ...(r.opts.signal ? { signal: r.opts.signal } : {}) };
}

/** The statement's bound parameters, as a session query takes them (none: nothing). */
export function paramsOf(r: StatementRun): { params?: readonly SqlParam[] } {
  return r.opts.params && r.opts.params.length > 0 ? { params: r.opts.params } : {};
}

/**
 * Opens the statement's transaction before its first load into the session (sql/sessionPool.ts
 * rolls it back afterwards, discarding the rows with their memory): a statement that loads nothing
 * (answered in hd_sql, or by the fetched rows themselves) runs no BEGIN and no ROLLBACK.
 */
export async function beforeLoading(r: StatementRun): Promise<void> {
  if (!r.session.inTransaction) await r.session.begin();
}

/** The text DuckDB runs: the statement, or its rewritten tree (catalog tables, address keys). */
export async function statementText(r: StatementRun): Promise<string> {
  return r.plan.rewrittenTree === undefined ? r.sql : r.deserialize(r.plan.rewrittenTree);
}

/** Says, when batches failed delivery (bad batch notices, no replica), that their records are absent. */
export function noteFailedBatches(r: StatementRun, dataset: string, out: FetchOutcome): void {
  if (out.batchErrors.length === 0) return;
  const first = out.batchErrors[0];
  r.notices.push(`${dataset}: ${out.batchErrors.length} batch(es) failed delivery and are absent from the result${first ? ` (first: ${first.message})` : ''}`);
}

/** The notice of an answer cut to HD_SQL_MAX_ROWS (`max`). */
export function cutNotice(max: number): string {
  return `the result was cut to ${max} rows (HD_SQL_MAX_ROWS): the statement stopped producing rows there, more were left`;
}

/** The answer cut to HD_SQL_MAX_ROWS, with the notice, when it holds more (paths produce one row past the cap). */
export function capRows(r: StatementRun, table: arrow.Table): arrow.Table {
  const max = r.settings.maxRows;
  if (max <= 0 || table.numRows <= max) return table;
  r.notices.push(cutNotice(max));
  return table.slice(0, max);
}

/**
 * The statement's answer: `table` cut to HD_SQL_MAX_ROWS, the notices gathered; with HD_SQL_STRICT
 * a notice fails it instead (SqlError `incomplete_result`).
 */
export function answer(r: StatementRun, table: arrow.Table, how: Pick<SqlResult, 'aggregatePushed' | 'passedThrough' | 'outerInHdSql'> = {}): SqlResult {
  const capped = capRows(r, table);
  if (r.settings.strict && r.notices.length > 0) {
    throw new SqlError('incomplete_result', `HD_SQL_STRICT is on and the answer would not be exactly what was asked: ${r.notices.join('; ')}. Bound the time field, narrow the query, or retry once the batches are readable`);
  }
  return { table: capped, notices: [...r.notices, ...r.info], plan: r.plan, ...how };
}
