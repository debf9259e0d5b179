/**
 * The SQL planner: DuckDB parses the statement (`json_serialize_sql`); from its tree come the
 * datasets read, each one's time window and the filters pushed to the Storage Nodes. The statement
 * itself then runs unchanged in DuckDB over the fetched rows (catalog tables renamed to ours).
 * A statement that would read files, URLs or the server's settings is refused first (statementGuard).
 */
import type { Schema } from '../engine-rs/schema';
import type { SubQuery } from '../query/filter';
import { parseBigJson, stringifyBigJson, type BigJsonValue } from './bigJson';
import { aggregatePlanOf, type AggregatePlan } from './aggregatePushdown';
import { rewriteAddressSemantics } from './addressRewrite';
import type { Catalog } from './catalog';
import { columnUse, fieldsToRead } from './columnUse';
import { PgModel } from './pgcatalog/pgModel';
import { catalogRelationRef, pgRegexSemantics, pgTableFunction, rewritePgExpressions } from './pgcatalog/pgRewrite';
import type { CatalogRelation } from './pgcatalog/relations';
import { SHOW_TABLES_TABLE } from './pgcatalog/catalogTables';
import { isNode, pushdownOf, type Node, type Pushdown } from './pushdown';
import { SqlError } from './sqlError';
import type { TopSpec } from '../query/hdQuery';
import { passthroughOf, type PassthroughPlan } from './rowPassthrough';
import { topOf } from './topPushdown';
import { DENIED_RELATIONS, guardStatement } from './statementGuard';

/** What to read of one dataset. */
export interface DatasetRead {
  readonly schema: Schema;
  /** Inclusive window in Unix seconds; start > end means nothing can match (nothing is read). */
  readonly startTime: number;
  readonly endTime: number;
  /** OR-ed filter groups pushed to the Storage Nodes; empty: every record of the window. */
  readonly subQueries: SubQuery[];
  /**
   * The fields to decode and load (schema order; `sql/columnUse.ts`): those the statement can
   * read. Absent: every field (a star, or anything that reads columns without naming them).
   */
  readonly columns?: readonly string[];
  /** Each batch sends only its best records by one field (HDQuery `top`; sql/topPushdown.ts). */
  readonly top?: TopSpec;
}

/** The plan of one statement. */
export interface Plan {
  /** When catalog tables were renamed: the rewritten tree for `json_deserialize_sql`; else the statement runs as given. */
  readonly rewrittenTree?: string;
  readonly reads: DatasetRead[];
  /** True when the statement reads our catalog tables (`catalogRelations`, or SHOW TABLES). */
  readonly usesCatalog: boolean;
  /** The catalog relations the statement reads (sql/pgcatalog/relations.ts), registered with it. */
  readonly catalogRelations: readonly CatalogRelation[];
  /** True for SHOW TABLES (its session table lists the dataset ids). */
  readonly showTables: boolean;
  /**
   * True when the plan depends on the clock (a dataset reference without an upper time bound reads
   * up to now) or on bound parameters: it cannot be reused for the same text later.
   */
  readonly volatile: boolean;
  /** Why the answer may not be exactly what was asked (e.g. the default lookback applied). */
  readonly notices: string[];
  /**
   * The statement's split into aggregates the Storage Nodes compute and an outer statement over the
   * merged groups (sql/aggregatePushdown.ts); absent when it does not split (`noAggregate` says why).
   */
  readonly aggregate?: AggregatePlan;
  readonly noAggregate?: string;
  /**
   * The statement only picks columns of one dataset, its WHERE pushed whole: the fetched batches
   * are its answer (sql/rowPassthrough.ts). Absent otherwise, or when not asked for.
   */
  readonly passthrough?: PassthroughPlan;
  /**
   * Select items the address rewrite changed (sql/addressRewrite.ts) carry alias placeholders in
   * `rewrittenTree`; these one-item statements give DuckDB's names for them (sql/addressPins.ts).
   */
  readonly namePins?: readonly string[];
}

/** Settings of planning. */
export interface PlanOptions {
  /** Unix seconds "now" (windows without an upper bound end here). */
  readonly now: number;
  /** HD_SQL_DEFAULT_LOOKBACK_SEC. */
  readonly lookbackSec: number;
  /** Bound values of `$n` placeholders, when known: they push down like literals. */
  readonly params?: readonly unknown[];
  /**
   * Lower-cased names of DuckDB's aggregate functions and macros: given, a statement over one
   * dataset is considered for aggregate pushdown (sql/aggregatePushdown.ts).
   */
  readonly aggregateFunctions?: ReadonlySet<string>;
  /** Push `ORDER BY <field> LIMIT n` as each batch's best n records (HD_SQL_TOP_PUSHDOWN). */
  readonly topPushdown?: boolean;
  /** Consider answering the statement from the fetched batches (HD_SQL_ROW_PASSTHROUGH). */
  readonly rowPassthrough?: boolean;
  /** True when the text was rewritten before parsing (sql/pgcatalog/pgSyntax.ts): the tree must run, not the text. */
  readonly textRewritten?: boolean;
}

/** The tree's statement nodes, or the SqlError the parse result stands for. */
export function statementsOf(serialized: string): Node[] {
  const doc = parseBigJson(serialized);
  if (!isNode(doc)) throw new SqlError('internal', 'the parser returned no tree');
  if (doc.error === true) {
    const msg = String(doc.error_message ?? 'cannot parse the statement');
    if (doc.error_type === 'parser') {
      const pos = doc.position === undefined ? undefined : Number(doc.position) + 1;
      throw new SqlError('invalid_statement', `syntax error: ${msg}`, pos === undefined || Number.isNaN(pos) ? {} : { position: pos });
    }
    // json_serialize_sql serializes SELECTs only: every other statement (and a text holding one) lands here.
    throw new SqlError('unsupported_statement', 'only SELECT statements are supported: HD SQL is read-only and sandboxed (no INSERT, UPDATE, DELETE, DDL, COPY, ATTACH, INSTALL, LOAD, SET, RESET, PRAGMA, CALL, EXPORT/IMPORT DATABASE, CREATE SECRET, transactions with effects)');
  }
  const st = doc.statements;
  if (!Array.isArray(st) || st.length === 0) throw new SqlError('invalid_statement', 'empty statement');
  return st.filter(isNode);
}

/** Plans one serialized statement (the text of `json_serialize_sql`). */
export function planStatement(serialized: string, catalog: Catalog, opts: PlanOptions): Plan {
  const statements = statementsOf(serialized);
  if (statements.length > 1) throw new SqlError('unsupported_statement', `one statement at a time, got ${statements.length}`);
  const root = statements[0] as Node;
  // PostgreSQL's catalog functions, casts and settings (sql/pgcatalog/pgRewrite.ts), before the guard judges the statement.
  const model = PgModel.of(catalog);
  const expressions = rewritePgExpressions(root, model);
  const isDataset = (name: string): boolean => catalog.resolve(name) !== undefined;
  // Refused before anything is resolved or run: files, URLs, settings (sql/statementGuard.ts).
  guardStatement(root, isDataset);
  const cteNames = new Set<string>();
  const refs = new Map<Node, Schema>();
  const analysed = new Map<Node, Pushdown>();
  const catalogRelations = new Set<CatalogRelation>();
  let showTables = false;
  let rewritten = expressions.changed || opts.textRewritten === true;
  const visit = (v: BigJsonValue | undefined, parent?: Node, key?: string): void => {
    if (Array.isArray(v)) return v.forEach((x) => visit(x));
    if (!isNode(v)) return;
    if (isNode(v.cte_map) && Array.isArray(v.cte_map.map)) for (const e of v.cte_map.map) if (isNode(e)) cteNames.add(String(e.key).toLowerCase());
    if (v.type === 'SHOW_REF' && parent && key) {
      if (String(v.table_name).replace(/"/g, '').toLowerCase() !== 'tables') throw new SqlError('unsupported_statement', 'of the SHOW statements only SHOW TABLES is supported; information_schema.columns describes columns');
      parent[key] = baseTable(SHOW_TABLES_TABLE);
      showTables = rewritten = true;
      return;
    }
    if (v.type === 'TABLE_FUNCTION' && pgTableFunction(v)) rewritten = true;
    if (v.type === 'BASE_TABLE') {
      const schemaName = String(v.schema_name ?? '').toLowerCase();
      const table = String(v.table_name);
      if ((schemaName === '' && cteNames.has(table.toLowerCase())) || expressions.renamed.has(v)) return;
      // pg_catalog and information_schema relations (drivers name pg_catalog's unqualified: pg_namespace, pg_type...) read our catalog.
      const served = catalogRelationRef(v, isDataset, DENIED_RELATIONS);
      if (served) {
        catalogRelations.add(served);
        rewritten = true;
        return;
      }
      if (schemaName === 'pg_catalog') return;
      if (schemaName !== '' && schemaName !== 'main' && schemaName !== 'public') throw new SqlError('unknown_dataset', `unknown table ${schemaName}.${table}: datasets are tables of the public schema`);
      const s = catalog.resolve(table);
      if (!s) throw new SqlError('unknown_dataset', `unknown table ${JSON.stringify(table)}: SHOW TABLES lists the datasets (${catalog.schemas.map((x) => x.id).join(', ') || 'none loaded'})`);
      refs.set(v, s);
      return;
    }
    if (v.type === 'SELECT_NODE' && isNode(v.from_table) && v.from_table.type === 'BASE_TABLE') {
      const from = v.from_table;
      const s = String(from.schema_name ?? '') === '' || ['main', 'public'].includes(String(from.schema_name).toLowerCase()) ? catalog.resolve(String(from.table_name)) : undefined;
      if (s && !cteNames.has(String(from.table_name).toLowerCase())) {
        const qualifiers = new Set([String(from.table_name).toLowerCase(), ...(from.alias ? [String(from.alias).toLowerCase()] : [])]);
        analysed.set(from, pushdownOf(v.where_clause, s, qualifiers, opts.params));
      }
    }
    for (const [k, x] of Object.entries(v)) visit(x, v, k);
  };
  visit(root);
  // The relations the rewritten functions read; in a statement over the catalog, `~` as PostgreSQL matches.
  for (const r of expressions.reads) catalogRelations.add(r);
  if (catalogRelations.size > 0 && pgRegexSemantics(root)) rewritten = true;
  const relations = new Set<string>();
  for (const n of refs.keys()) for (const r of [n.table_name, n.alias]) if (typeof r === 'string' && r !== '') relations.add(r.toLowerCase());
  const use = columnUse(root, relations);
  const notices: string[] = [];
  const reads: DatasetRead[] = [];
  let volatile = (opts.params ?? []).length > 0;
  for (const s of new Set(refs.values())) {
    const mine = [...refs.entries()].filter(([, x]) => x === s).map(([n]) => analysed.get(n) ?? { filters: [] });
    let start = Infinity;
    let end = -Infinity;
    let defaulted = false;
    for (const p of mine) {
      if (p.timeTo === undefined) volatile = true;
      const to = p.timeTo ?? (p.timeFrom !== undefined ? Math.max(opts.now, p.timeFrom) : opts.now);
      const from = p.timeFrom ?? to - opts.lookbackSec + 1;
      if (p.timeFrom === undefined) defaulted = true;
      if (from > to) continue; // this reference can match nothing
      start = Math.min(start, from);
      end = Math.max(end, to);
    }
    if (defaulted) notices.push(`${s.id}: no lower time bound on ${s.timeField}; read the last ${opts.lookbackSec} s up to ${end === -Infinity ? opts.now : end} (HD_SQL_DEFAULT_LOOKBACK_SEC)`);
    const groups = mine.every((p) => p.filters.length > 0) ? [...new Map(mine.map((p) => [JSON.stringify(p.filters), { filters: p.filters }])).values()] : [];
    const columns = fieldsToRead(s, use);
    reads.push({ schema: s, startTime: start === Infinity ? 1 : start, endTime: end === -Infinity ? 0 : end, subQueries: groups.length <= 16 ? groups : [], ...(columns ? { columns } : {}) });
  }
  const split = !opts.aggregateFunctions ? undefined : rewritten || refs.size !== 1 || reads.length !== 1 ? { reason: 'not one reference to one dataset' } : aggregatePlanOf(root, reads[0]!.schema, { aggregateFunctions: opts.aggregateFunctions, ...(opts.params ? { params: opts.params } : {}) });
  const aggregate = split === undefined ? {} : 'reason' in split ? { noAggregate: split.reason } : { aggregate: split };
  const pass = !opts.rowPassthrough || rewritten || refs.size !== 1 || reads.length !== 1 ? undefined : passthroughOf(root, reads[0]!.schema, opts.params ?? []);
  const passthrough = pass === undefined || 'reason' in pass ? {} : { passthrough: pass };
  // Top records: before the address rewrite below, which changes how ORDER BY reads an address.
  const top = !opts.topPushdown || rewritten || refs.size !== 1 || reads.length !== 1 ? undefined : topOf(root, reads[0]!.schema, opts.params ?? []);
  if (top) reads[0] = { ...reads[0]!, top };
  // ipv4 / ipv6 compare, sort and aggregate on their integers; after the split, which reads the tree as written.
  const addresses = rewriteAddressSemantics(root, (n) => refs.get(n), opts.params ?? []);
  return {
    ...(rewritten || addresses.changed ? { rewrittenTree: stringifyBigJson({ error: false, statements: [root] }) } : {}),
    ...(addresses.pins.length > 0 ? { namePins: addresses.pins } : {}),
    reads,
    usesCatalog: catalogRelations.size > 0 || showTables,
    catalogRelations: [...catalogRelations],
    showTables,
    notices,
    volatile,
    ...aggregate,
    ...passthrough,
  };
}

function baseTable(name: string): Node {
  return { class: 'TABLE', type: 'BASE_TABLE', alias: '', query_location: 0, sample: null, schema_name: '', table_name: name, column_name_alias: [], catalog_name: '', at_clause: null } as unknown as Node;
}
