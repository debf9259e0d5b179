/**
 * The aggregate path of a statement (docs/sql.md, "Aggregate pushdown"): the Storage Nodes'
 * partials merged exactly (sql/aggregateMerge.ts), then the outer statement over the merged groups —
 * evaluated by hd_sql itself when its shape is simple (sql/aggregateOuterShape.ts: keys and merged
 * values, ORDER BY, LIMIT), so such a statement runs nothing in DuckDB; otherwise the groups are
 * loaded as a small table and DuckDB runs it. What the statement answers over the empty dataset
 * table (its result schema), the outer statement's shape and its text are kept per plan: a
 * repeated statement pays none of them again.
 */
import * as arrow from 'apache-arrow';
import { failSpan, inSpan, type Span } from '../lib/tracing/spans';
import { LocalSqlError } from '../local/localSqlError';
import { AggregateMerger } from './aggregateMerge';
import { evaluateOuter as evaluateOuterHere } from './aggregateOuterEval';
import { outerShapeOf, type OuterInDuckDb, type OuterShape } from './aggregateOuterShape';
import { MERGED_TABLE, type AggregatePlan } from './aggregatePushdown';
import { stringifyBigJson } from './bigJson';
import type { FetchOutcome } from './datasetFetcher';
import type { SqlResult } from './engineTypes';
import { PlanKeyed } from './planKeyed';
import type { DatasetRead } from './planner';
import { statementsOf } from './planner';
import { isNode } from './pushdown';
import { SqlError } from './sqlError';
import { answer, beforeLoading, noteFailedBatches, paramsOf, runLimits, type StatementRun } from './statementRun';

/**
 * What the aggregate path keeps per plan, or per schema key (sql/planKeyed.ts): none of it depends
 * on WHERE, which the outer statement drops (pushed whole) and which names and types nothing.
 */
export interface AggregateRunCache {
  /** The statement's result schema over the empty dataset table (what the record path answers with). */
  readonly expected: PlanKeyed<arrow.Schema>;
  /** The outer statement's SQL text. */
  readonly outer: PlanKeyed<string>;
  /** The outer statement's shape when hd_sql evaluates it, or why DuckDB runs it. */
  readonly shapes: PlanKeyed<OuterShape | OuterInDuckDb>;
  /** Forgets what is kept per key (a new catalog). */
  clear(): void;
}

/** An empty cache. */
export function aggregateRunCache(): AggregateRunCache {
  const c = { expected: new PlanKeyed<arrow.Schema>(), outer: new PlanKeyed<string>(), shapes: new PlanKeyed<OuterShape | OuterInDuckDb>() };
  return { ...c, clear: () => [c.expected, c.outer, c.shapes].forEach((x) => x.clear()) };
}

/** The outer statement's answer, and where it was evaluated. */
interface Evaluated {
  readonly table: arrow.Table;
  /** Null: evaluated in hd_sql; else why DuckDB ran it. */
  readonly duckdbBecause: string | null;
}

/**
 * Runs `agg` for `r`'s plan. Undefined when the statement must take the record path instead — a
 * node refused the aggregate, a partial did not fit, or the outer statement's columns would differ
 * from the record path's (names and types checked against the statement over the empty dataset
 * table). Timeouts, cancels and an unreachable upstream are errors, not fallbacks.
 */
export async function runAggregate(r: StatementRun, agg: AggregatePlan, cache: AggregateRunCache): Promise<SqlResult | undefined> {
  const read = r.plan.reads[0] as DatasetRead;
  const s = read.schema;
  const limits = runLimits(r);
  const fallback = (why: string): undefined => {
    if (r.settings.explainPushdown) r.info.push(`${s.id}: aggregate pushdown fell back to the record path: ${why}`);
    return undefined;
  };
  let expected = cache.expected.get(r.plan, r.schemaKey);
  if (!expected) {
    try {
      expected = (await r.session.query(r.sql, { ...limits, ...paramsOf(r) })).schema;
    } catch {
      return fallback('the statement does not run over the dataset table as written'); // the record path reports DuckDB's error
    }
    cache.expected.set(r.plan, r.schemaKey, expected);
  }
  const merger = new AggregateMerger(agg, s);
  let mergeError: Error | undefined;
  let partials = 0;
  let out: FetchOutcome = { batchErrors: [], missingBatches: 0 };
  const started = Date.now();
  if (read.startTime <= read.endTime && r.fetcher.fetchAggregate) {
    try {
      out = await r.fetcher.fetchAggregate(read, agg.spec, (p) => {
        if (mergeError) return;
        partials++;
        try {
          merger.add(p);
        } catch (err) {
          mergeError = err instanceof Error ? err : new Error(String(err));
        }
      }, { ...limits, qos: r.settings.qos });
    } catch (err) {
      if (err instanceof SqlError && (err.kind === 'query_timeout' || err.kind === 'upstream_unavailable')) throw err;
      return fallback(err instanceof Error ? err.message : String(err));
    }
  }
  if (mergeError) return fallback(mergeError.message);
  // The outer statement over the merged partials is this path's local evaluation: the same
  // `sql.evaluate` span as the record path's (sql/sqlEngine.ts), marked as the aggregate path's,
  // so a trace shows where the statement's last step went whichever path answered.
  const evaluated = await inSpan('sql.evaluate', (span) => evaluateOuter(r, agg, expected, merger, cache, span), { attributes: { 'hd.dataset': s.id, 'hd.aggregate': true, 'hd.partials': partials, 'hd.groups': merger.size } });
  if (typeof evaluated === 'string') return fallback(evaluated);
  noteFailedBatches(r, s.id, out);
  if (r.settings.explainPushdown) {
    const where = evaluated.duckdbBecause === null ? 'outer statement evaluated in hd_sql (DuckDB not run)' : `outer statement run in DuckDB (${evaluated.duckdbBecause})`;
    r.info.push(`${s.id}: ${agg.summary}; ${merger.size} group(s) merged from ${partials} partial(s) in ${Date.now() - started} ms; ${where}`);
  }
  return answer(r, evaluated.table, { aggregatePushed: true, outerInHdSql: evaluated.duckdbBecause === null });
}

/** The outer statement's shape for hd_sql to evaluate, or why DuckDB runs it (kept per plan). */
function shapeFor(r: StatementRun, agg: AggregatePlan, cache: AggregateRunCache): OuterShape | OuterInDuckDb {
  if (r.settings.aggregateOuterInHdSql === false) return { reason: 'off in the settings' };
  let shape = cache.shapes.get(r.plan, r.schemaKey);
  if (!shape) cache.shapes.set(r.plan, r.schemaKey, (shape = outerShapeOf(agg)));
  return shape;
}

/**
 * The outer statement over the merged partials, inside the `sql.evaluate` span: evaluated here when
 * its shape allows, else the partials registered and DuckDB runs it. A string says why the
 * statement must take the record path instead (the span then carries it as `hd.fallback`, and an
 * error status when DuckDB failed the statement).
 */
async function evaluateOuter(r: StatementRun, agg: AggregatePlan, expected: arrow.Schema, merger: AggregateMerger, cache: AggregateRunCache, span: Span): Promise<Evaluated | string> {
  const limits = runLimits(r);
  const fallback = (why: string, err?: unknown): string => {
    span.setAttribute('hd.fallback', why);
    if (err !== undefined) failSpan(span, err);
    return why;
  };
  const max = r.settings.maxRows;
  const shape = shapeFor(r, agg, cache);
  let why = 'reason' in shape ? shape.reason : '';
  if (!('reason' in shape)) {
    const here = evaluateOuterHere(shape, { plan: agg, groups: merger.mergedGroups(), expected, dictionaryOf: (name) => merger.keyDictionary(name), ...(max > 0 ? { maxRows: max } : {}) });
    if (here instanceof arrow.Table) {
      span.setAttribute('hd.rows', here.numRows);
      span.setAttribute('hd.outer', 'hd_sql');
      return { table: here, duckdbBecause: null };
    }
    why = here.reason;
  }
  span.setAttribute('hd.outer', 'duckdb');
  let outerSql = cache.outer.get(r.plan, r.schemaKey);
  // The merged table is loaded in the statement's transaction: the pool's rollback discards it.
  await beforeLoading(r);
  try {
    await r.session.register(MERGED_TABLE, merger.table(), { ...limits, dictionaries: merger.keyDictionaries });
    if (outerSql === undefined) {
      outerSql = await outerStatement(r, agg, expected);
      cache.outer.set(r.plan, r.schemaKey, outerSql);
    }
  } catch (err) {
    return fallback(err instanceof Error ? err.message : String(err));
  }
  let table: arrow.Table;
  try {
    table = await r.session.query(outerSql, { ...limits, ...(max > 0 ? { maxRows: max } : {}) });
  } catch (err) {
    if (err instanceof LocalSqlError && err.code === 'ERR_SQL_INTERRUPTED') throw err;
    return fallback(`the outer statement failed: ${err instanceof Error ? err.message : String(err)}`, err);
  }
  const got = table.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');
  const want = expected.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');
  if (got !== want) return fallback(`the outer statement's columns (${got}) differ from the statement's (${want})`);
  span.setAttribute('hd.rows', table.numRows);
  return { table, duckdbBecause: why };
}

/** The outer statement's text, its replaced select items named as the statement names them. */
async function outerStatement(r: StatementRun, agg: AggregatePlan, expected: arrow.Schema): Promise<string> {
  const top = statementsOf(agg.outerTree)[0]!;
  const items = isNode(top.node) && Array.isArray(top.node.select_list) ? top.node.select_list : [];
  for (const i of agg.renamedItems) {
    const item = items[i];
    const name = expected.fields[i]?.name;
    if (isNode(item) && item.alias === '' && name !== undefined) item.alias = name;
  }
  return r.deserialize(stringifyBigJson({ error: false, statements: [top] }));
}
