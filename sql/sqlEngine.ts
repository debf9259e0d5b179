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
import type { LocalSqlSession } from '../local/localSqlSession';
import { aggregateRunCache, runAggregate } from './aggregateRun';
import type { Catalog } from './catalog';
import { ensureAddressFunctions } from './addressFunctions';
import { withPinnedNames } from './addressPins';
import { ensureChessFunctions } from './chessFunctions';
import type { DatasetFetcher } from './datasetFetcher';
import type { ExecuteOptions, SqlEngineSettings, SqlResult } from './engineTypes';
import { registerCatalogTables } from './pgcatalog/catalogTables';
import { ensurePgFunctions } from './pgcatalog/pgFunctions';
import { PgModel } from './pgcatalog/pgModel';
import { runPassthrough } from './passthroughRun';
import { ParseTrees } from './parseTrees';
import { PlanKeyed } from './planKeyed';
import { planStatement, type DatasetRead, type Plan } from './planner';
import { inSpan } from '../lib/tracing/spans';
import { projected } from './projectedBatch';
import { resultNamingOf, schemaWithNames, withNames, type ResultNaming } from './resultNames';
import { SessionPool } from './sessionPool';
import { BatchLoader } from './batchLoader';
import { SqlError } from './sqlError';
import { answer, beforeLoading, noteFailedBatches, paramsOf, runLimits, statementText, type StatementRun } from './statementRun';
import { READS_DATASETS_ONLY } from './statementGuard';

export type { ExecuteOptions, SqlEngineSettings, SqlResult } from './engineTypes';

/** Label vectors of enum columns per (projected) Arrow schema: built once, not per statement. */
const enumLabels = new WeakMap<arrow.Schema, Map<string, arrow.Vector>>();

/** Statement texts whose parse trees are kept. */
const PARSED_STATEMENTS = 256;
/** Datasets whose first plan {@link SqlEngine.warmUpPlans} prepares. */
const WARM_DATASETS = 8;
/** How long warmUpPlans waits for its empty-window aggregate. */
const WARM_FETCH_MS = 2000;

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
    this.parseTrees = new ParseTrees(PARSED_STATEMENTS, settings.shapeTrees !== false);
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
    this.passSchemas.clear();
    this.aggregateCache.clear();
  }

  /** Sessions reused across statements (sql/sessionPool.ts). */
  private readonly pool: SessionPool;
  /** Parse trees by statement text and by shape (sql/parseTrees.ts): `json_serialize_sql` is a DuckDB round trip. */
  readonly parseTrees: ParseTrees;
  /** Plans by statement text (LRU), for plans that are not `volatile`. */
  private readonly plans = new BoundedMap<string, Plan>(PARSED_STATEMENTS);
  /** PostgreSQL's result column names by statement text (LRU; sql/resultNames.ts). */
  private readonly namings = new BoundedMap<string, ResultNaming>(PARSED_STATEMENTS);
  /** The result schema of each passing-through plan (the statement over the empty dataset table), per schema key where there is one. */
  private readonly passSchemas = new PlanKeyed<arrow.Schema>();
  /** What the aggregate path keeps per plan (sql/aggregateRun.ts). */
  private readonly aggregateCache = aggregateRunCache();
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

  /**
   * Prepares, once the doors are open, what the first statements would otherwise pay for (issue
   * #17: `hd up`'s first statements took up to 0.7 s): per dataset (the first
   * {@link WARM_DATASETS}), a time-bounded `count(*)` planned (DuckDB's parser and its aggregate
   * functions read, the planner's code run, the statement's shape learned: sql/parseTrees.ts), its
   * table registered and the statement run over it empty (its result schema kept, as the aggregate
   * path keeps it); `sessions` pooled sessions open; and (unless `warmUpFetch` is false) one
   * aggregate of an empty window sent through the Storage Nodes (the second 0 of the first dataset:
   * nothing is read), so the fetch path is not cold either.
   * Resolves with what it took (ms); never rejects (a first statement then pays as before).
   */
  async warmUpPlans(sessions = 2): Promise<number> {
    const started = Date.now();
    try {
      const catalog = this.catalog;
      await this.withSession(async (session) => {
        for (const s of catalog.schemas.slice(0, WARM_DATASETS)) {
          // Written as people write it (a shape is text: sql/statementShape.ts), so their first count(*) fills from it.
          const sql = `SELECT count(*) FROM ${identifier(s.id)} WHERE ${identifier(s.timeField)} >= 0 AND ${identifier(s.timeField)} < 1`;
          const plan = await this.planIn(session, sql, [], catalog);
          await this.namingOf(session, sql);
          for (const read of plan.reads) await this.registerRead(session, read.schema, this.settings.projectColumns === false ? undefined : read.columns);
          const schema = (await session.query(sql)).schema;
          if (plan.aggregate && catalog === this.current) this.aggregateCache.expected.set(plan, this.parseTrees.known(sql)?.schemaKey, schema);
          await this.deserialize(session, plan.aggregate?.outerTree ?? (await this.parseTrees.parse(sql, (t) => serialize(session, t))).tree);
        }
      });
      // One aggregate of an empty window (the second 0) through the Storage Nodes: the fetch path's
      // connections and code are ready for the first statement; nothing is read.
      const first = catalog.schemas[0];
      const plan = first && this.plans.touch(`SELECT count(*) FROM ${identifier(first.id)} WHERE ${identifier(first.timeField)} >= 0 AND ${identifier(first.timeField)} < 1`);
      const read = plan?.reads[0];
      if (this.settings.warmUpFetch !== false && plan?.aggregate && read && this.fetcher.fetchAggregate) {
        await this.fetcher.fetchAggregate(read, plan.aggregate.spec, () => undefined, { deadline: Date.now() + WARM_FETCH_MS, qos: this.settings.qos }).catch(() => undefined);
      }
      // Sessions the first concurrent statements take instead of opening them.
      const open = await Promise.all(Array.from({ length: Math.max(0, sessions - this.pool.idleCount) }, () => this.pool.take()));
      await Promise.all(open.map((x) => this.pool.release(x)));
    } catch {
      // Best effort: whatever failed here, the first statement does again (and reports).
    }
    return Date.now() - started;
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
      // The statement's span (docs/observability.md, "Traces"): plan, fetch and evaluation are its children.
      return await inSpan('sql.statement', () => this.withSession(async (session) => {
        // Rows streamed to the door go out under PostgreSQL's column names too, named before the first one.
        const rows = opts.rows;
        const naming = rows ? await this.namingOf(session, sql) : undefined;
        const named: ExecuteOptions = rows && naming ? { ...opts, rows: { begin: (schema) => rows.begin(schemaWithNames(schema, naming.namesFor(schema.fields.map((f) => f.name)))), rows: (b) => rows.rows(b) } } : opts;
        const r = await this.executeIn(session, sql, named, deadline);
        // PostgreSQL's column names, whichever path answered (sql/resultNames.ts).
        return { ...r, table: withNames(r.table, (naming ?? (await this.namingOf(session, sql))).namesFor(r.table.schema.fields.map((f) => f.name))) };
      }), { attributes: { 'db.system.name': 'hd', 'db.query.text': sql.length > 2048 ? `${sql.slice(0, 2048)}…` : sql } });
    } catch (err) {
      throw toSqlError(err, opts.signal);
    }
  }

  /** How PostgreSQL names the result columns of `sql` (kept per statement text, as the parse trees are). */
  private async namingOf(session: LocalSqlSession, sql: string): Promise<ResultNaming> {
    const known = this.namings.touch(sql);
    if (known) return known;
    // The text DuckDB parsed (PostgreSQL spellings rewritten, as planAfresh does): the tree's locations point into it.
    const { tree, text } = await this.parseTrees.parse(sql, (t) => serialize(session, t));
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
    const planned = await inSpan('sql.plan', () => this.planIn(session, sql, opts.params ?? [], catalog));
    const plan: Plan = this.settings.projectColumns === false ? { ...planned, reads: planned.reads.map((r): DatasetRead => ({ schema: r.schema, startTime: r.startTime, endTime: r.endTime, subQueries: r.subQueries })) } : planned;
    const notices = [...plan.notices];
    if (plan.usesCatalog) await registerCatalogTables(session, PgModel.of(catalog), plan.catalogRelations, plan.showTables);
    for (const read of plan.reads) await this.registerRead(session, read.schema, read.columns);
    // Statements whose texts differ only in WHERE integers share what the paths keep (sql/planKeyed.ts); bound parameters can type the result.
    const schemaKey = (opts.params ?? []).length > 0 || catalog !== this.current ? undefined : this.parseTrees.known(sql)?.schemaKey;
    const run: StatementRun = { session, sql, plan, opts, deadline, settings: this.settings, fetcher: this.fetcher, notices, info: [], deserialize: (tree) => this.deserialize(session, tree), ...(schemaKey !== undefined ? { schemaKey } : {}) };
    if (this.settings.explainPushdown) run.info.push(...plan.reads.map(pushdownNotice));
    if (plan.aggregate && this.fetcher.fetchAggregate) {
      const pushed = await runAggregate(run, plan.aggregate, this.aggregateCache);
      if (pushed) return pushed;
    } else if (plan.noAggregate !== undefined && this.settings.explainPushdown) run.info.push(`${plan.reads[0]?.schema.id ?? 'statement'}: aggregate not pushed down: ${plan.noAggregate}`);
    if (plan.passthrough && plan.reads.length === 1) return runPassthrough(run, plan.passthrough, this.passSchemas);
    const limits = runLimits(run);
    // Fetched rows are loaded in a transaction the pool rolls back afterwards: no commit per batch,
    // and the rows (and their memory) are gone before the session serves another statement.
    if (plan.reads.some((read) => read.startTime <= read.endTime)) await beforeLoading(run);
    for (const read of plan.reads) {
      if (read.startTime > read.endTime) continue;
      const loader = new BatchLoader((group) => session.append(read.schema.id, group, limits));
      const out = await this.fetcher.fetch(read, (b) => loader.add(projected(b, read.columns)), { ...limits, qos: this.settings.qos });
      await loader.flush();
      // A batch no node holds is an interval nobody ingested: absent, not a failure. Only failed batches make the answer incomplete.
      noteFailedBatches(run, read.schema.id, out);
    }
    // HD_SQL_MAX_ROWS is applied while DuckDB produces the rows: it streams them and stops one row
    // past the cap (that row says the cap applied), instead of materialising the whole result first.
    const max = this.settings.maxRows;
    return answer(run, await inSpan('sql.evaluate', async () => session.query(await statementText(run), { ...limits, ...(max > 0 ? { maxRows: max } : {}), ...paramsOf(run) })));
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
    // PostgreSQL spellings DuckDB cannot parse (`OPERATOR(pg_catalog.~)`) are rewritten first (sql/pgcatalog/pgSyntax.ts);
    // a new text of a known shape gets its tree from the shape's template, without DuckDB (sql/parseTrees.ts).
    const { tree, changed } = await this.parseTrees.parse(sql, (t) => serialize(session, t));
    // planStatement parses the text afresh each time (it rewrites its own copy), so a cached tree is never shared.
    const aggregateFunctions = this.settings.aggregatePushdown === false || !this.fetcher.fetchAggregate ? undefined : await this.aggregateFunctions(session);
    // Rewritten select items keep DuckDB's names for them as written (sql/addressPins.ts).
    return withPinnedNames(planStatement(tree, catalog, { now: this.now(), lookbackSec: this.settings.lookbackSec, params, textRewritten: changed, rowPassthrough: this.settings.rowPassthrough !== false, topPushdown: this.settings.topPushdown !== false, ...(aggregateFunctions ? { aggregateFunctions } : {}) }), session);
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

/** `name` as an SQL identifier: bare when it can be, else quoted. */
function identifier(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/** DuckDB's parse tree of `text` (`json_serialize_sql`). @throws SqlError when DuckDB fails it */
async function serialize(session: LocalSqlSession, text: string): Promise<string> {
  try {
    const t = await session.query(`SELECT json_serialize_sql('${text.replace(/'/g, "''")}')::VARCHAR AS tree`);
    return String(t.getChildAt(0)?.get(0));
  } catch (err) {
    throw new SqlError('invalid_statement', `cannot parse the statement: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** The pushdown notice of one read (HD_SQL_EXPLAIN_PUSHDOWN). */
function pushdownNotice(read: DatasetRead): string {
  const filters = read.subQueries.map((q) => q.filters.map((f) => `${f.field} ${f.op} ${f.value ?? `[${(f.values ?? []).join(', ')}]`}`).join(' AND ')).join(' OR ');
  return `${read.schema.id}: pushed down: ${read.startTime <= read.endTime ? `window ${read.startTime}..${read.endTime}` : 'nothing can match'}${filters ? `, filters ${filters}` : ''}${read.columns ? `, columns ${read.columns.join(', ')}` : ''}${read.top ? `, top ${read.top.k} by ${read.top.field} ${read.top.desc ? 'DESC' : 'ASC'} a batch` : ''}`;
}

/** `b`'s columns named `names`, in that order (apache-arrow's `select` misplaces the children). */
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
