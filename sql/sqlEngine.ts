/**
 * hd_sql's one engine behind every door: plan (DuckDB parses), fetch what the plan reads from the
 * Storage Nodes with the filters it pushes down, then run the whole statement in DuckDB over the
 * fetched rows. Errors are SqlErrors with the reference's codes; notices say where the answer is
 * not exactly what was asked.
 */
import { BoundedMap } from '../lib/boundedMap';
import * as arrow from 'apache-arrow';
import { arrowSchemaFor } from '../engine-rs/decode';
import type { Schema } from '../engine-rs/schema';
import { enumDictionaries, type LocalSql } from '../local/localSql';
import { LocalSqlError } from '../local/localSqlError';
import type { LocalSqlSession, SqlParam } from '../local/localSqlSession';
import { AggregateMerger } from './aggregateMerge';
import { MERGED_TABLE, type AggregatePlan } from './aggregatePushdown';
import { stringifyBigJson } from './bigJson';
import type { Catalog } from './catalog';
import { ensureAddressFunctions } from './addressFunctions';
import { withPinnedNames } from './addressPins';
import { ensureChessFunctions } from './chessFunctions';
import type { DatasetFetcher, FetchOutcome } from './datasetFetcher';
import { registerCatalogTables } from './pgcatalog/catalogTables';
import { ensurePgFunctions } from './pgcatalog/pgFunctions';
import { PgModel } from './pgcatalog/pgModel';
import { pgSyntax } from './pgcatalog/pgSyntax';
import { planStatement, statementsOf, type DatasetRead, type Plan } from './planner';
import { isNode } from './pushdown';
import { resultNamingOf, schemaWithNames, withNames, type ResultNaming } from './resultNames';
import { SessionPool } from './sessionPool';
import { passthroughTable } from './passthroughTable';
import type { PassthroughPlan } from './rowPassthrough';
import { SqlError } from './sqlError';
import { READS_DATASETS_ONLY } from './statementGuard';

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
}

/** The answer to one statement. */
export interface SqlResult {
  readonly table: arrow.Table;
  readonly notices: string[];
  /** The plan it ran (for EXPLAIN-like diagnostics and tests). */
  readonly plan: Plan;
  /** True when the Storage Nodes computed the aggregates (the plan split and no fallback was needed). */
  readonly aggregatePushed?: boolean;
  /** True when the fetched batches were the answer (sql/rowPassthrough.ts), not DuckDB's run over them. */
  readonly passedThrough?: boolean;
}

/** Options of one execution. */
export interface ExecuteOptions {
  readonly params?: readonly SqlParam[];
  /** Aborting cancels the query at the SCCs and in DuckDB (57014). */
  readonly signal?: AbortSignal;
}

/** Label vectors of enum columns per (projected) Arrow schema: built once, not per statement. */
const enumLabels = new WeakMap<arrow.Schema, Map<string, arrow.Vector>>();

/** Statement texts whose parse trees are kept. */
const PARSED_STATEMENTS = 256;

/** Plans, fetches and evaluates SQL statements. */
export class SqlEngine {
  /** @param now Unix-seconds clock (tests fix it). */
  constructor(
    catalog: Catalog,
    private readonly local: LocalSql,
    private readonly fetcher: DatasetFetcher,
    readonly settings: SqlEngineSettings,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    this.pool = new SessionPool(local);
    this.current = catalog;
  }

  /** The datasets served now (sql/catalog.ts); a statement keeps the one it started with. */
  private current: Catalog;

  /** The catalog new statements plan against. */
  get catalog(): Catalog {
    return this.current;
  }

  /**
   * Serves `next` from the next statement on (the live catalog, docs/sql.md "Catalog"): statements
   * already running keep the catalog they started with; cached plans of the old one are dropped.
   */
  setCatalog(next: Catalog): void {
    this.current = next;
    this.plans.clear();
  }

  /** Sessions reused across statements (sql/sessionPool.ts). */
  private readonly pool: SessionPool;
  /** Parse trees by statement text (LRU): `json_serialize_sql` is a DuckDB round trip. */
  private readonly trees = new BoundedMap<string, string>(PARSED_STATEMENTS);
  /** Plans by statement text (LRU), for plans that are not `volatile`. */
  private readonly plans = new BoundedMap<string, Plan>(PARSED_STATEMENTS);
  /** PostgreSQL's result column names by statement text (LRU; sql/resultNames.ts). */
  private readonly namings = new BoundedMap<string, ResultNaming>(PARSED_STATEMENTS);
  /** The result schema of each passing-through plan (the statement over the empty dataset table). */
  private readonly passSchemas = new WeakMap<Plan, arrow.Schema>();
  /** DuckDB's aggregate functions and macros (lower case), read once: the aggregate pushdown's refusals. */
  private aggregateNames: Set<string> | undefined;

  /**
   * Does before the first statement what it would otherwise pay for: starts DuckDB, installs the
   * chess functions (a table and macros, tens of ms) and leaves a session idle in the pool. The
   * server calls it before its doors open.
   */
  async warmUp(): Promise<void> {
    await this.withSession(async (session) => {
      await ensureChessFunctions(this.local, session);
      await ensureAddressFunctions(this.local, session);
      await ensurePgFunctions(this.local, session);
      await session.query('SELECT 1');
    });
  }

  /** Plans `sql` without running it (parsing needs DuckDB). */
  async plan(sql: string, params: readonly unknown[] = []): Promise<Plan> {
    return this.withSession((session) => this.planIn(session, sql, params, this.catalog));
  }

  /** Runs `fn` on a pooled session: released (tables parked) when it resolves, closed when it throws. */
  private async withSession<T>(fn: (s: LocalSqlSession) => Promise<T>): Promise<T> {
    const session = await this.pool.take();
    let out: T;
    try {
      out = await fn(session);
    } catch (err) {
      await this.pool.discard(session);
      throw err;
    }
    // Parking runs after the answer is handed back; the next statement takes another session if it has not finished.
    void this.pool.release(session);
    return out;
  }

  /**
   * The result schema of `sql` without reading any data: the statement over empty tables with its
   * `paramCount` parameters null (the SQL wire's Describe of a prepared statement).
   */
  async describe(sql: string, paramCount: number): Promise<arrow.Schema> {
    try {
      return await this.withSession(async (session) => {
        const params = Array.from({ length: paramCount }, () => null);
        await ensureChessFunctions(this.local, session);
        await ensureAddressFunctions(this.local, session);
        await ensurePgFunctions(this.local, session);
        const catalog = this.catalog;
        const plan = await this.planIn(session, sql, [], catalog);
        if (plan.usesCatalog) await registerCatalogTables(session, PgModel.of(catalog), plan.catalogRelations, plan.showTables);
        for (const read of plan.reads) await this.registerRead(session, read.schema);
        const text = plan.rewrittenTree === undefined ? sql : await this.deserialize(session, plan.rewrittenTree);
        const schema = (await session.query(text, params.length > 0 ? { params } : {})).schema;
        return schemaWithNames(schema, (await this.namingOf(session, sql)).namesFor(schema.fields.map((f) => f.name)));
      });
    } catch (err) {
      throw toSqlError(err);
    }
  }

  /** Runs one statement. @throws SqlError */
  async execute(sql: string, opts: ExecuteOptions = {}): Promise<SqlResult> {
    const deadline = Date.now() + this.settings.timeoutMs;
    try {
      return await this.withSession(async (session) => {
        const r = await this.executeIn(session, sql, opts, deadline);
        // PostgreSQL's column names, whichever path answered (sql/resultNames.ts).
        return { ...r, table: withNames(r.table, (await this.namingOf(session, sql)).namesFor(r.table.schema.fields.map((f) => f.name))) };
      });
    } catch (err) {
      throw toSqlError(err, opts.signal);
    }
  }

  /** How PostgreSQL names the result columns of `sql` (kept per statement text, as the parse trees are). */
  private async namingOf(session: LocalSqlSession, sql: string): Promise<ResultNaming> {
    const known = this.namings.touch(sql);
    if (known) return known;
    // The text DuckDB parsed (PostgreSQL spellings rewritten, as planAfresh does): the tree's locations point into it.
    const text = pgSyntax(sql).text;
    let tree = this.trees.touch(sql);
    tree ??= String((await session.query(`SELECT json_serialize_sql('${text.replace(/'/g, "''")}')::VARCHAR AS tree`)).getChildAt(0)?.get(0));
    const naming = resultNamingOf(tree, text);
    this.namings.set(sql, naming);
    return naming;
  }

  private async executeIn(session: LocalSqlSession, sql: string, opts: ExecuteOptions, deadline: number): Promise<SqlResult> {
    await ensureChessFunctions(this.local, session);
    await ensureAddressFunctions(this.local, session);
    await ensurePgFunctions(this.local, session);
    // The catalog this statement plans and runs with, even if a refresh replaces it meanwhile.
    const catalog = this.catalog;
    const planned = await this.planIn(session, sql, opts.params ?? [], catalog);
    const plan: Plan = this.settings.projectColumns === false ? { ...planned, reads: planned.reads.map((r): DatasetRead => ({ schema: r.schema, startTime: r.startTime, endTime: r.endTime, subQueries: r.subQueries })) } : planned;
    const notices = [...plan.notices];
    if (plan.usesCatalog) await registerCatalogTables(session, PgModel.of(catalog), plan.catalogRelations, plan.showTables);
    for (const read of plan.reads) await this.registerRead(session, read.schema, read.columns);
    // Fetched rows are loaded in a transaction the pool rolls back afterwards: no commit per batch,
    // and the rows (and their memory) are gone before the session serves another statement.
    await session.begin();
    const info: string[] = [];
    if (this.settings.explainPushdown) info.push(...plan.reads.map(pushdownNotice));
    if (plan.aggregate && this.fetcher.fetchAggregate) {
      const pushed = await this.aggregateIn(session, sql, plan, plan.aggregate, opts, deadline, notices, info);
      if (pushed) return pushed;
    } else if (plan.noAggregate !== undefined && this.settings.explainPushdown) info.push(`${plan.reads[0]?.schema.id ?? 'statement'}: aggregate not pushed down: ${plan.noAggregate}`);
    if (plan.passthrough && plan.reads.length === 1) return await this.passthroughIn(session, sql, plan, plan.passthrough, opts, deadline, notices, info);
    for (const read of plan.reads) {
      const s = read.schema;
      if (read.startTime > read.endTime) continue;
      // A fetcher that decoded more than the projection (the columns are a request, not a promise): keep the plan's.
      const cols = read.columns;
      const fit = (b: arrow.RecordBatch): arrow.RecordBatch => (cols && b.numCols !== cols.length ? pick(b, cols) : b);
      const out = await this.fetcher.fetch(read, (b) => session.append(s.id, fit(b), { deadline, ...(opts.signal ? { signal: opts.signal } : {}) }), { deadline, qos: this.settings.qos, ...(opts.signal ? { signal: opts.signal } : {}) });
      // A batch no node holds is an interval nobody ingested (the batch ids of a window extend one
      // interval past it): absent, not a failure. Only failed batches make the answer incomplete.
      if (out.batchErrors.length > 0) {
        notices.push(`${s.id}: ${out.batchErrors.length} batch(es) failed delivery and are absent from the result${out.batchErrors[0] ? ` (first: ${out.batchErrors[0].message})` : ''}`);
      }
    }
    const text = plan.rewrittenTree === undefined ? sql : await this.deserialize(session, plan.rewrittenTree);
    // HD_SQL_MAX_ROWS is applied while DuckDB produces the rows: it streams them and stops one row
    // past the cap (that row says the cap applied), instead of materialising the whole result first.
    const max = this.settings.maxRows;
    let table = await session.query(text, { deadline, ...(max > 0 ? { maxRows: max } : {}), ...(opts.params && opts.params.length > 0 ? { params: opts.params } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    if (max > 0 && table.numRows > max) {
      notices.push(`the result was cut to ${max} rows (HD_SQL_MAX_ROWS): the statement stopped producing rows there, more were left`);
      table = table.slice(0, max);
    }
    this.checkStrict(notices);
    return { table, notices: [...notices, ...info], plan };
  }

  /**
   * Row passthrough (sql/rowPassthrough.ts): the read's batches are the answer, under the names and
   * types of the statement run over the empty dataset table (kept per plan). When a batch does not
   * fit those types, the same batches are loaded into DuckDB and the statement runs as usual.
   */
  private async passthroughIn(session: LocalSqlSession, sql: string, plan: Plan, pass: PassthroughPlan, opts: ExecuteOptions, deadline: number, notices: string[], info: string[]): Promise<SqlResult> {
    const read = plan.reads[0] as DatasetRead;
    const s = read.schema;
    const run = { deadline, ...(opts.signal ? { signal: opts.signal } : {}) };
    const params = opts.params && opts.params.length > 0 ? { params: opts.params } : {};
    const text = plan.rewrittenTree === undefined ? sql : await this.deserialize(session, plan.rewrittenTree);
    let expected = this.passSchemas.get(plan);
    if (!expected) this.passSchemas.set(plan, (expected = (await session.query(text, { ...run, ...params })).schema));
    const batches: arrow.RecordBatch[] = [];
    let out: FetchOutcome = { batchErrors: [], missingBatches: 0 };
    if (read.startTime <= read.endTime) {
      out = await this.fetcher.fetch(read, async (b) => void batches.push(b), { deadline, qos: this.settings.qos, ...(opts.signal ? { signal: opts.signal } : {}) });
    }
    if (out.batchErrors.length > 0) notices.push(`${s.id}: ${out.batchErrors.length} batch(es) failed delivery and are absent from the result${out.batchErrors[0] ? ` (first: ${out.batchErrors[0].message})` : ''}`);
    const max = this.settings.maxRows;
    const built = passthroughTable(batches, pass, expected, max > 0 ? max : undefined);
    if (!(built instanceof arrow.Table)) {
      // DuckDB answers instead, over the same batches: nothing is fetched twice.
      if (this.settings.explainPushdown) info.push(`${s.id}: row passthrough fell back to DuckDB: ${built.reason}`);
      const cols = read.columns;
      for (const b of batches) await session.append(s.id, cols && b.numCols !== cols.length ? pick(b, cols) : b, run);
      let table = await session.query(text, { ...run, ...(max > 0 ? { maxRows: max } : {}), ...params });
      if (max > 0 && table.numRows > max) {
        notices.push(`the result was cut to ${max} rows (HD_SQL_MAX_ROWS): the statement stopped producing rows there, more were left`);
        table = table.slice(0, max);
      }
      this.checkStrict(notices);
      return { table, notices: [...notices, ...info], plan };
    }
    let table = built;
    if (max > 0 && table.numRows > max) {
      notices.push(`the result was cut to ${max} rows (HD_SQL_MAX_ROWS): the statement stopped producing rows there, more were left`);
      table = table.slice(0, max);
    }
    if (this.settings.explainPushdown) info.push(`${s.id}: answered by the fetched rows (row passthrough; DuckDB not run)`);
    this.checkStrict(notices);
    return { table, notices: [...notices, ...info], plan, passedThrough: true };
  }

  private checkStrict(notices: readonly string[]): void {
    if (this.settings.strict && notices.length > 0) {
      throw new SqlError('incomplete_result', `HD_SQL_STRICT is on and the answer would not be exactly what was asked: ${notices.join('; ')}. Bound the time field, narrow the query, or retry once the batches are readable`);
    }
  }

  /**
   * The aggregate path (docs/sql.md, "Aggregate pushdown"): the nodes' partials merged exactly,
   * loaded as a small table, and the outer statement run over it. Undefined when the statement must
   * take the record path instead — a node refused the aggregate, a partial did not fit, or the
   * outer statement's columns would differ from the normal path's (names and types are checked
   * against the statement run over the empty dataset table). Timeouts and cancels are not fallbacks.
   */
  private async aggregateIn(session: LocalSqlSession, sql: string, plan: Plan, agg: AggregatePlan, opts: ExecuteOptions, deadline: number, notices: string[], info: string[]): Promise<SqlResult | undefined> {
    const read = plan.reads[0] as DatasetRead;
    const s = read.schema;
    const run = { deadline, ...(opts.signal ? { signal: opts.signal } : {}) };
    const params = opts.params && opts.params.length > 0 ? { params: opts.params } : {};
    const fallback = (why: string): undefined => {
      if (this.settings.explainPushdown) info.push(`${s.id}: aggregate pushdown fell back to the record path: ${why}`);
      return undefined;
    };
    // What the normal path answers with: the statement over the (still empty) dataset table.
    let expected: arrow.Schema;
    try {
      expected = (await session.query(sql, { ...run, ...params })).schema;
    } catch {
      return fallback('the statement does not run over the dataset table as written'); // the record path reports DuckDB's error
    }
    const merger = new AggregateMerger(agg, s);
    let mergeError: Error | undefined;
    let partials = 0;
    let out: FetchOutcome = { batchErrors: [], missingBatches: 0 };
    const started = Date.now();
    if (read.startTime <= read.endTime) {
      try {
        out = await this.fetcher.fetchAggregate!(read, agg.spec, (p) => {
          if (mergeError) return;
          partials++;
          try {
            merger.add(p);
          } catch (err) {
            mergeError = err instanceof Error ? err : new Error(String(err));
          }
        }, { ...run, qos: this.settings.qos });
      } catch (err) {
        if (err instanceof SqlError && (err.kind === 'query_timeout' || err.kind === 'upstream_unavailable')) throw err;
        return fallback(err instanceof Error ? err.message : String(err));
      }
    }
    if (mergeError) return fallback(mergeError.message);
    let outerSql: string;
    try {
      await session.register(MERGED_TABLE, merger.table(), { ...run, dictionaries: merger.keyDictionaries });
      const top = statementsOf(agg.outerTree)[0]!;
      const items = isNode(top.node) && Array.isArray(top.node.select_list) ? top.node.select_list : [];
      for (const i of agg.renamedItems) {
        const item = items[i];
        const name = expected.fields[i]?.name;
        if (isNode(item) && item.alias === '' && name !== undefined) item.alias = name;
      }
      outerSql = await this.deserialize(session, stringifyBigJson({ error: false, statements: [top] }));
    } catch (err) {
      return fallback(err instanceof Error ? err.message : String(err));
    }
    const max = this.settings.maxRows;
    let table: arrow.Table;
    try {
      table = await session.query(outerSql, { ...run, ...(max > 0 ? { maxRows: max } : {}) });
    } catch (err) {
      if (err instanceof LocalSqlError && err.code === 'ERR_SQL_INTERRUPTED') throw err;
      return fallback(`the outer statement failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    const got = table.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');
    const want = expected.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');
    if (got !== want) return fallback(`the outer statement's columns (${got}) differ from the statement's (${want})`);
    if (out.batchErrors.length > 0) notices.push(`${s.id}: ${out.batchErrors.length} batch(es) failed delivery and are absent from the result${out.batchErrors[0] ? ` (first: ${out.batchErrors[0].message})` : ''}`);
    if (max > 0 && table.numRows > max) {
      notices.push(`the result was cut to ${max} rows (HD_SQL_MAX_ROWS): the statement stopped producing rows there, more were left`);
      table = table.slice(0, max);
    }
    this.checkStrict(notices);
    if (this.settings.explainPushdown) info.push(`${s.id}: ${agg.summary}; ${merger.size} group(s) merged from ${partials} partial(s) in ${Date.now() - started} ms`);
    return { table, notices: [...notices, ...info], plan, aggregatePushed: true };
  }

  private async planIn(session: LocalSqlSession, sql: string, params: readonly unknown[], catalog: Catalog): Promise<Plan> {
    if (sql.trim() === '') throw new SqlError('invalid_statement', 'empty statement');
    // A plan that depends on neither the clock nor parameters is the same for the same text (and catalog).
    const known = params.length === 0 && catalog === this.current ? this.plans.touch(sql) : undefined;
    if (known) return known;
    const plan = await this.planAfresh(session, sql, params, catalog);
    if (!plan.volatile && catalog === this.current) this.plans.set(sql, plan);
    return plan;
  }

  private async planAfresh(session: LocalSqlSession, sql: string, params: readonly unknown[], catalog: Catalog): Promise<Plan> {
    let tree = this.trees.touch(sql);
    // PostgreSQL spellings DuckDB cannot parse (`OPERATOR(pg_catalog.~)`) are rewritten first (sql/pgcatalog/pgSyntax.ts).
    const text = pgSyntax(sql);
    if (tree === undefined) {
      try {
        const t = await session.query(`SELECT json_serialize_sql('${text.text.replace(/'/g, "''")}')::VARCHAR AS tree`);
        tree = String(t.getChildAt(0)?.get(0));
      } catch (err) {
        throw new SqlError('invalid_statement', `cannot parse the statement: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      this.trees.set(sql, tree);
    }
    // planStatement parses the text afresh each time (it rewrites its own copy), so a cached tree is never shared.
    const aggregateFunctions = this.settings.aggregatePushdown === false || !this.fetcher.fetchAggregate ? undefined : await this.aggregateFunctions(session);
    // Rewritten select items keep DuckDB's names for them as written (sql/addressPins.ts).
    return withPinnedNames(planStatement(tree, catalog, { now: this.now(), lookbackSec: this.settings.lookbackSec, params, textRewritten: text.changed, rowPassthrough: this.settings.rowPassthrough !== false, ...(aggregateFunctions ? { aggregateFunctions } : {}) }), session);
  }

  /** DuckDB's aggregate functions and macros, read once per engine (the chess macros included). */
  private async aggregateFunctions(session: LocalSqlSession): Promise<Set<string>> {
    if (this.aggregateNames) return this.aggregateNames;
    const t = await session.query(`SELECT DISTINCT lower(function_name) AS name FROM duckdb_functions() WHERE function_type IN ('aggregate', 'macro', 'table_macro')`);
    const names = new Set<string>();
    const col = t.getChildAt(0);
    for (let i = 0; i < t.numRows; i++) names.add(String(col?.get(i)));
    return (this.aggregateNames = names);
  }

  /** Creates the dataset's table with `columns` (the plan's projection; absent: every field). */
  private async registerRead(session: LocalSqlSession, s: Schema, columns?: readonly string[]): Promise<void> {
    const arrowSchema = arrowSchemaFor(s, columns ? { fields: columns } : undefined);
    // arrowSchemaFor returns the same Schema object for the same columns: a reused session keeps the table.
    let dictionaries = enumLabels.get(arrowSchema);
    if (!dictionaries) enumLabels.set(arrowSchema, (dictionaries = enumDictionaries(s, arrowSchema)));
    await session.reuseOrRegister(s.id, arrowSchema, { aliases: s.name !== s.id ? [s.name] : [], dictionaries });
  }

  private async deserialize(session: LocalSqlSession, tree: string): Promise<string> {
    const t = await session.query(`SELECT json_deserialize_sql('${tree.replace(/'/g, "''")}'::JSON) AS sql`);
    return String(t.getChildAt(0)?.get(0));
  }
}

/** The pushdown notice of one read (HD_SQL_EXPLAIN_PUSHDOWN). */
function pushdownNotice(read: DatasetRead): string {
  const filters = read.subQueries.map((q) => q.filters.map((f) => `${f.field} ${f.op} ${f.value ?? `[${(f.values ?? []).join(', ')}]`}`).join(' AND ')).join(' OR ');
  return `${read.schema.id}: pushed down: ${read.startTime <= read.endTime ? `window ${read.startTime}..${read.endTime}` : 'nothing can match'}${filters ? `, filters ${filters}` : ''}${read.columns ? `, columns ${read.columns.join(', ')}` : ''}`;
}

/** `b`'s columns named `names`, in that order (apache-arrow's `select` misplaces the children). */
function pick(b: arrow.RecordBatch, names: readonly string[]): arrow.RecordBatch {
  const ix = names.map((n) => b.schema.fields.findIndex((f) => f.name === n));
  if (ix.some((i) => i < 0)) return b; // missing columns: the append's shape check says which
  const fields = ix.map((i) => b.schema.fields[i]!);
  const schema = new arrow.Schema(fields, b.schema.metadata);
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(fields), length: b.numRows, nullCount: 0, children: ix.map((i) => b.data.children[i]!) }));
}

/** DuckDB's refusals under the sandbox: external access off, configuration locked. */
const SANDBOX_REFUSAL = /^Permission Error:|the configuration has been locked|Loading external extensions is disabled/;

/** Any failure as the SqlError a door reports. */
export function toSqlError(err: unknown, signal?: AbortSignal): SqlError {
  if (err instanceof SqlError) return err;
  if (err instanceof LocalSqlError) {
    if (err.code === 'ERR_SQL_INTERRUPTED') return new SqlError('query_timeout', signal?.aborted ? 'canceling statement due to user request' : `${err.message} (HD_SQL_QUERY_TIMEOUT_MS)`, { cause: err });
    if (err.code === 'ERR_SQL' && /^Parser Error/.test(err.message)) return new SqlError('invalid_statement', err.message, { cause: err });
    if (err.code === 'ERR_SQL' && /^Catalog Error: Table/.test(err.message)) return new SqlError('unknown_dataset', err.message, { cause: err });
    // The sandbox (sdk/local/localSql.ts sandboxConfig) caught what the guard let through: same
    // answer as the guard's, and DuckDB's message (which names the path) stays out of it.
    if (err.code === 'ERR_SQL' && SANDBOX_REFUSAL.test(err.message)) return new SqlError('unsupported_statement', `the statement needs access to files, the network, extensions or settings, which HD SQL does not give: ${READS_DATASETS_ONLY}`, { cause: err });
    if (err.code === 'ERR_SQL') return new SqlError('query_failed', err.message, { cause: err });
  }
  return new SqlError('internal', err instanceof Error ? err.message : String(err), { cause: err });
}
