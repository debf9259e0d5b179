/**
 * Row passthrough (issue #17): a statement that only picks columns of one dataset's records, every
 * WHERE conjunct pushed down exactly, is answered by the fetched batches themselves — the Storage
 * Nodes already filtered the rows and decoded the columns in the types DuckDB would answer with —
 * without loading them into DuckDB and running the statement again over them (for a selective
 * one-batch read that load and run were half of hd_sql's time; for 400 000 rows most of it).
 *
 * `SELECT a, t.b AS c FROM ds t WHERE <pushed> [LIMIT n]` and `SELECT * FROM ds WHERE <pushed>`
 * pass; anything that computes (expressions, ORDER BY, DISTINCT, OFFSET, GROUP BY, joins, windows,
 * CTEs, subqueries, a conjunct evaluated locally) does not. The engine still checks each fetched
 * batch's column types against the statement's result schema and takes the DuckDB path when they
 * differ (sql/sqlEngine.ts), so a passthrough answer is always the one DuckDB would give.
 */
import type { Schema } from '../engine-rs/schema';
import type { BigJsonValue } from './bigJson';
import { conjuncts, isNode, pushdownOf, type Node } from './pushdown';

/** One result column: the dataset field it is, and the name DuckDB gives it. */
export interface PassthroughColumn {
  readonly field: string;
  readonly name: string;
}

/** How a statement passes through: its columns in order, and a row limit. */
export interface PassthroughPlan {
  readonly columns: readonly PassthroughColumn[];
  /** `LIMIT n` (no OFFSET): the first n rows in arrival order, as DuckDB's insertion order gives them. */
  readonly limit?: number;
}

/** Why a statement does not pass through. */
export interface NoPassthrough {
  readonly reason: string;
}

/**
 * The passthrough of `root` (one statement of `json_serialize_sql`) reading `schema`, or why not.
 * `params`: bound `$n` values (a WHERE with them pushes like literals).
 */
export function passthroughOf(root: Node, schema: Schema, params: readonly unknown[] = []): PassthroughPlan | NoPassthrough {
  const no = (reason: string): NoPassthrough => ({ reason });
  const sel = root.node;
  if (!isNode(sel) || sel.type !== 'SELECT_NODE') return no('not a simple SELECT');
  if (isNode(sel.cte_map) && Array.isArray(sel.cte_map.map) && sel.cte_map.map.length > 0) return no('a WITH clause');
  const from = sel.from_table;
  if (!isNode(from) || from.type !== 'BASE_TABLE' || from.sample !== null || from.at_clause !== null || (Array.isArray(from.column_name_alias) && from.column_name_alias.length > 0)) return no('FROM is not one plain dataset');
  if (sel.qualify !== null || sel.sample !== null || sel.having !== null) return no('HAVING, QUALIFY or SAMPLE');
  if (sel.aggregate_handling !== 'STANDARD_HANDLING') return no('GROUP BY ALL');
  if ((Array.isArray(sel.group_expressions) && sel.group_expressions.length > 0) || (Array.isArray(sel.group_sets) && sel.group_sets.length > 0)) return no('GROUP BY');

  let limit: number | undefined;
  const modifiers = Array.isArray(sel.modifiers) ? sel.modifiers : [];
  for (const m of modifiers) {
    if (!isNode(m) || m.type !== 'LIMIT_MODIFIER' || m.offset !== null || limit !== undefined) return no('ORDER BY, DISTINCT or OFFSET');
    const n = constantInteger(m.limit);
    if (n === undefined) return no('a LIMIT that is not a constant');
    limit = n;
  }

  const tableName = String(from.table_name);
  const alias = typeof from.alias === 'string' && from.alias !== '' ? from.alias : tableName;
  const qualifiers = new Set([tableName.toLowerCase(), alias.toLowerCase()]);
  const where = sel.where_clause ?? undefined;
  if (isNode(where)) {
    const pushed = pushdownOf(where, schema, qualifiers, params);
    if (pushed.filters.length !== conjuncts(where).length) return no('a WHERE conjunct the Storage Nodes cannot evaluate exactly');
  }

  const items = Array.isArray(sel.select_list) ? sel.select_list : [];
  const columns: PassthroughColumn[] = [];
  for (const item of items) {
    if (!isNode(item)) return no('an unreadable select item');
    if (item.class === 'STAR') {
      if (!plainStar(item, qualifiers)) return no('a star with EXCLUDE, REPLACE, RENAME or COLUMNS');
      columns.push(...schema.fields.map((f) => ({ field: f.name, name: f.name })));
      continue;
    }
    if (item.class !== 'COLUMN_REF' || !Array.isArray(item.column_names)) return no('a select item that is not a column');
    const names = item.column_names.map(String);
    if (names.length > 2 || (names.length === 2 && !qualifiers.has(names[0]!.toLowerCase()))) return no('a column of another relation');
    const written = names[names.length - 1]!;
    const f = schema.fields.find((x) => x.name.toLowerCase() === written.toLowerCase());
    if (!f) return no(`no field ${written}`);
    columns.push({ field: f.name, name: typeof item.alias === 'string' && item.alias !== '' ? item.alias : written });
  }
  if (columns.length === 0) return no('no columns');
  // Arrow tables want distinct names; DuckDB would answer with duplicates (and PostgreSQL names them alike).
  if (new Set(columns.map((c) => c.name.toLowerCase())).size !== columns.length) return no('two result columns of one name');
  return limit === undefined ? { columns } : { columns, limit };
}

/** `*` or `t.*` with nothing excluded, replaced or renamed. */
function plainStar(n: Node, qualifiers: ReadonlySet<string>): boolean {
  const empty = (v: BigJsonValue | undefined): boolean => v === undefined || v === null || (Array.isArray(v) && v.length === 0);
  const rel = String(n.relation_name ?? '');
  return n.columns === false && (n.expr ?? null) === null && empty(n.exclude_list) && empty(n.replace_list) && empty(n.rename_list) && empty(n.qualified_exclude_list) && (rel === '' || qualifiers.has(rel.toLowerCase()));
}

/** A non-negative integer constant (LIMIT 10), else undefined. */
export function constantInteger(v: BigJsonValue | undefined): number | undefined {
  if (!isNode(v) || v.type !== 'VALUE_CONSTANT' || !isNode(v.value) || v.value.is_null !== false) return undefined;
  const n = Number(v.value.value);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}
