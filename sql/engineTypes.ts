/**
 * The engine's settings, answers and execution options (sql/sqlEngine.ts), apart so the runs of a
 * statement's paths (sql/statementRun.ts, aggregateRun.ts, passthroughRun.ts) can name them.
 */
import type * as arrow from 'apache-arrow';
import type { SqlParam } from '../local/localSqlSession';
import type { Plan } from './planner';

/** Settings of the engine (the reference's SQL server settings it uses). */
export interface SqlEngineSettings {
  /** HD_SQL_DEFAULT_LOOKBACK_SEC (3600). */
  readonly lookbackSec: number;
  /** HD_SQL_QUERY_TIMEOUT_MS (300000): dispatch, waiting and local evaluation. */
  readonly timeoutMs: number;
  /** HD_SQL_MAX_ROWS (0 = unlimited). */
  readonly maxRows: number;
  /** HD_SQL_QUERY_QOS (1..255). */
  readonly qos: number;
  /** HD_SQL_STRICT (ours): a statement whose answer would carry a notice fails instead. */
  readonly strict?: boolean;
  /**
   * Decode and load only the columns the statement can read (default true; `sql/columnUse.ts`).
   * False loads every column (tests compare both).
   */
  readonly projectColumns?: boolean;
  /**
   * HD_SQL_AGGREGATE_PUSHDOWN (ours, default true): statements that split compute their
   * aggregates on the Storage Nodes (docs/sql.md, "Aggregate pushdown"). False: the record path always.
   */
  readonly aggregatePushdown?: boolean;
  /**
   * HD_SQL_EXPLAIN_PUSHDOWN (ours, default false): every answer carries an informational notice
   * saying what was pushed down (filters, aggregate, or why the aggregate was not). Such a notice
   * never makes HD_SQL_STRICT fail a statement.
   */
  readonly explainPushdown?: boolean;
  /**
   * HD_SQL_ROW_PASSTHROUGH (ours, default true): a statement that only picks columns of one
   * dataset, its WHERE pushed whole, is answered by the fetched batches without DuckDB
   * (docs/sql.md, "Row passthrough"). False: every statement runs in DuckDB.
   */
  readonly rowPassthrough?: boolean;
  /**
   * HD_SQL_TOP_PUSHDOWN (ours, default true): `ORDER BY <field> LIMIT n` over one dataset, its WHERE
   * pushed whole, has each batch send only its best n records (docs/sql.md, "Top records"). False:
   * every matching record is read.
   */
  readonly topPushdown?: boolean;
  /**
   * A pushed aggregate's outer statement of a simple shape (keys and aggregate calls, ORDER BY,
   * LIMIT) is evaluated by hd_sql itself instead of DuckDB (default true; sql/aggregateOuterShape.ts).
   * False: DuckDB always runs it (the differential tests compare both).
   */
  readonly aggregateOuterInHdSql?: boolean;
  /**
   * A new text of a known shape (the same statement with new literals) gets its parse tree from
   * the shape's template and shares the result schema with texts that differ only in WHERE
   * integers (default true; sql/parseTrees.ts). False: every new text asks DuckDB.
   */
  readonly shapeTrees?: boolean;
  /**
   * SqlEngine.warmUpPlans sends one aggregate of an empty window through the Storage Nodes, so the
   * first statement's fetch path is not cold (default true). False: warm-up stays local.
   */
  readonly warmUpFetch?: boolean;
}

/** The answer to one statement. */
export interface SqlResult {
  readonly table: arrow.Table;
  readonly notices: string[];
  /** The plan it ran (for EXPLAIN-like diagnostics and tests). */
  readonly plan: Plan;
  /** True when the Storage Nodes computed the aggregates (the plan split and no fallback was needed). */
  readonly aggregatePushed?: boolean;
  /** True when hd_sql evaluated the pushed aggregate's outer statement itself (DuckDB not run). */
  readonly outerInHdSql?: boolean;
  /** True when the fetched batches were the answer (sql/rowPassthrough.ts), not DuckDB's run over them. */
  readonly passedThrough?: boolean;
  /**
   * Rows already given to {@link ExecuteOptions.rows} as they arrived (row passthrough); `table` then
   * holds none, only the columns. Undefined: every row is in `table`.
   */
  readonly streamed?: number;
}

/**
 * Where a door takes a statement's rows as they arrive, so a large answer reaches the client while
 * the Storage Nodes still send it (row passthrough, sql/passthroughRun.ts; other paths answer whole).
 */
export interface RowStream {
  /** The statement's result columns, once, before the first rows. */
  begin(schema: arrow.Schema): void;
  /** Rows in order; resolves when the door can take more. */
  rows(batch: arrow.RecordBatch): Promise<void>;
}

/** Options of one execution. */
export interface ExecuteOptions {
  readonly params?: readonly SqlParam[];
  /** Aborting cancels the query at the SCCs and in DuckDB (57014). */
  readonly signal?: AbortSignal;
  /** Rows may be handed here as they arrive (never with HD_SQL_STRICT, which must see every notice first). */
  readonly rows?: RowStream;
}
