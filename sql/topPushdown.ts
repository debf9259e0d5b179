/**
 * Top records pushdown (issue #17; docs/sql.md "Top records"): for `ORDER BY <field> [ASC|DESC]
 * [, …] LIMIT n [OFFSET m]` over one dataset whose WHERE is pushed whole, each Storage Node sends
 * only every batch's best n + m records by that field (HDQuery `top`, every record tied with the
 * last one kept), and DuckDB runs the statement as before over what arrives. The answer is the same
 * because the statement's rows are among each batch's best: a row outside its batch's best n + m
 * has n + m rows of its batch ahead of it, and ties on the first key are all sent, so later ORDER BY
 * keys still decide among them.
 *
 * Pushed only when nothing else could pick other rows: select items are columns or stars (no
 * aggregate, window or DISTINCT), no GROUP BY / HAVING / QUALIFY / SAMPLE / CTE, and the first
 * ORDER BY key is a dataset field (not a select alias of something else) of a type whose order in
 * DuckDB is its stored integer's (integers up to 128 bits that are not enumerations, numerics of
 * precision ≤ 38, floats, doubles, timestamps).
 */
import type { FieldInfo, Schema } from '../engine-rs/schema';
import { MAX_TOP_K, type TopSpec } from '../query/hdQuery';
import type { BigJsonValue } from './bigJson';
import { conjuncts, isNode, pushdownOf, type Node } from './pushdown';
import { constantInteger } from './rowPassthrough';

/** Most rows (LIMIT + OFFSET) pushed; a larger statement reads every matching record as before. */
export const MAX_PUSHED_TOP = 100_000;

const ORDERED_TYPES = new Set(['uint8', 'uint16', 'uint32', 'uint64', 'uint128', 'int8', 'int16', 'int32', 'int64', 'int128', 'float', 'double', 'timestamp', 'numeric']);

/** Whether DuckDB orders `f`'s column as the node orders its stored value. */
function orderedLikeStored(f: FieldInfo): boolean {
  if (!ORDERED_TYPES.has(f.type) || f.enum !== undefined || f.timeReference !== undefined || f.array !== undefined) return false;
  return f.type !== 'numeric' || (f.precision ?? 39) <= 38;
}

/**
 * The `top` to push for `root` (one statement of `json_serialize_sql`) reading `schema`, or
 * undefined when the statement is not of that shape. `params`: bound `$n` values.
 */
export function topOf(root: Node, schema: Schema, params: readonly unknown[] = []): TopSpec | undefined {
  const sel = root.node;
  if (!isNode(sel) || sel.type !== 'SELECT_NODE') return undefined;
  if (isNode(sel.cte_map) && Array.isArray(sel.cte_map.map) && sel.cte_map.map.length > 0) return undefined;
  const from = sel.from_table;
  if (!isNode(from) || from.type !== 'BASE_TABLE' || from.sample !== null || from.at_clause !== null || (Array.isArray(from.column_name_alias) && from.column_name_alias.length > 0)) return undefined;
  if (sel.qualify !== null || sel.sample !== null || sel.having !== null || sel.aggregate_handling !== 'STANDARD_HANDLING') return undefined;
  if ((Array.isArray(sel.group_expressions) && sel.group_expressions.length > 0) || (Array.isArray(sel.group_sets) && sel.group_sets.length > 0)) return undefined;

  const modifiers = Array.isArray(sel.modifiers) ? sel.modifiers : [];
  const [order, limit] = modifiers;
  if (modifiers.length !== 2 || !isNode(order) || order.type !== 'ORDER_MODIFIER' || !isNode(limit) || limit.type !== 'LIMIT_MODIFIER') return undefined;
  const n = constantInteger(limit.limit);
  const offset = limit.offset === null || limit.offset === undefined ? 0 : constantInteger(limit.offset);
  if (n === undefined || offset === undefined || n === 0 || n + offset > Math.min(MAX_PUSHED_TOP, MAX_TOP_K)) return undefined;

  const tableName = String(from.table_name);
  const alias = typeof from.alias === 'string' && from.alias !== '' ? from.alias : tableName;
  const qualifiers = new Set([tableName.toLowerCase(), alias.toLowerCase()]);
  const where = sel.where_clause ?? undefined;
  if (isNode(where) && pushdownOf(where, schema, qualifiers, params).filters.length !== conjuncts(where).length) return undefined;

  const first = Array.isArray(order.orders) ? order.orders[0] : undefined;
  if (!isNode(first) || !['ASCENDING', 'DESCENDING', 'ORDER_DEFAULT'].includes(String(first.type))) return undefined;
  const field = fieldOf(first.expression, schema, qualifiers);
  if (!field || !orderedLikeStored(field)) return undefined;
  // The key must be the field itself, not a select alias naming something else.
  const items = Array.isArray(sel.select_list) ? sel.select_list : [];
  for (const item of items) {
    if (!isNode(item)) return undefined;
    if (item.class === 'STAR') {
      if (item.columns !== false || (item.expr ?? null) !== null) return undefined;
      continue;
    }
    if (item.class !== 'COLUMN_REF') return undefined;
    const named = typeof item.alias === 'string' && item.alias !== '' ? item.alias : undefined;
    if (named !== undefined && named.toLowerCase() === field.name.toLowerCase() && fieldOf(item, schema, qualifiers) !== field) return undefined;
  }
  if (items.length === 0) return undefined;
  return { field: field.name, k: n + offset, desc: first.type === 'DESCENDING' };
}

/** The dataset field a `COLUMN_REF` names (`x` or `t.x`), else undefined. */
function fieldOf(v: BigJsonValue | undefined, schema: Schema, qualifiers: ReadonlySet<string>): FieldInfo | undefined {
  if (!isNode(v) || v.class !== 'COLUMN_REF' || !Array.isArray(v.column_names)) return undefined;
  const names = v.column_names.map(String);
  if (names.length > 2 || (names.length === 2 && !qualifiers.has(names[0]!.toLowerCase()))) return undefined;
  const written = names[names.length - 1]!.toLowerCase();
  return schema.fields.find((f) => f.name.toLowerCase() === written);
}
