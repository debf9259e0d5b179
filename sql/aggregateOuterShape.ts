/**
 * Whether hd_sql can answer an aggregate plan's outer statement itself (issue #17; docs/sql.md,
 * "Aggregate pushdown"), and how: the outer statement (sql/aggregatePushdown.ts) runs over the merged
 * groups, one row per group, so when its select list holds only group keys and merged values (each
 * `CAST(first(hd_agg_mI) AS type)`), with at most ORDER BY, LIMIT and OFFSET, its answer is those
 * values in that order (sql/aggregateOuterEval.ts). Anything else — HAVING, DISTINCT, an expression
 * over a value, an ORDER BY that leaves ties where a LIMIT could cut between them — keeps DuckDB.
 */
import type { FieldInfo } from '../engine-rs/schema';
import type { BigJsonValue } from './bigJson';
import { isByteKey, keyOf, MEASURE_PREFIX, type AggregatePlan } from './aggregatePushdown';
import { statementsOf } from './planner';
import { isNode, type Node } from './pushdown';

/** A column of the outer statement's answer (or a sort term): a group key, or a merged aggregate call. */
export type OuterValue = { readonly key: number } | { readonly output: number };

/** One ORDER BY term. */
export interface OuterOrder {
  readonly value: OuterValue;
  readonly desc: boolean;
  readonly nullsFirst: boolean;
}

/** An outer statement hd_sql evaluates itself. */
export interface OuterShape {
  /** The answer's columns, in select-list order. */
  readonly columns: readonly OuterValue[];
  readonly order: readonly OuterOrder[];
  /** Rows skipped first (OFFSET), then at most `limit` rows (LIMIT; absent: all). */
  readonly offset: number;
  readonly limit?: number;
}

/** Why the outer statement stays DuckDB's. */
export interface OuterInDuckDb {
  readonly reason: string;
}

const ASCII = /^[\x20-\x7e]*$/;

/**
 * The shape of `agg`'s outer statement when hd_sql can evaluate it exactly, else why not. Computed
 * once per plan. Group keys must be plain integer, enum, boolean or timestamp fields or time
 * buckets (byte keys, which decode to text or lists, keep DuckDB's comparison rules).
 */
export function outerShapeOf(agg: AggregatePlan): OuterShape | OuterInDuckDb {
  const no = (reason: string): OuterInDuckDb => ({ reason });
  if (agg.keys.some(isByteKey)) return no('a group key read as its bytes');
  const top = statementsOf(agg.outerTree)[0];
  const sel = top && isNode(top.node) ? top.node : undefined;
  if (!sel || sel.type !== 'SELECT_NODE') return no('not a simple SELECT');
  if (sel.having !== null && sel.having !== undefined) return no('HAVING');
  const from = isNode(sel.from_table) ? sel.from_table : undefined;
  const alias = from && typeof from.alias === 'string' ? from.alias : '';
  const fieldOf = (n: BigJsonValue | undefined): FieldInfo | undefined => {
    if (!isNode(n) || n.type !== 'COLUMN_REF' || !Array.isArray(n.column_names)) return undefined;
    const names = n.column_names.map(String);
    if (!names.every((x) => ASCII.test(x))) return undefined;
    if (names.length > 2 || (names.length === 2 && names[0]!.toLowerCase() !== alias.toLowerCase())) return undefined;
    const last = names[names.length - 1]!.toLowerCase();
    return agg.keys.find((k) => k.name.toLowerCase() === last);
  };
  const keyIndex = (n: BigJsonValue | undefined): number | undefined => {
    if (!isNode(n)) return undefined;
    const k = keyOf(n, fieldOf);
    if (!k) return undefined;
    const i = agg.keys.indexOf(k.field);
    const spec = agg.spec.group_by[i];
    return spec && spec.bucket === k.bucket ? i : undefined;
  };
  const valueOf = (n: BigJsonValue | undefined): OuterValue | undefined => {
    const output = mergedOutput(n, agg);
    if (output !== undefined) return { output };
    const key = keyIndex(n);
    return key === undefined ? undefined : { key };
  };

  const items = Array.isArray(sel.select_list) ? sel.select_list : [];
  const columns: OuterValue[] = [];
  for (const item of items) {
    const v = valueOf(item);
    if (!v) return no('a select item that is not a group key or an aggregate call');
    columns.push(v);
  }
  const aliases = items.map((i) => (isNode(i) && typeof i.alias === 'string' ? i.alias : ''));
  if (!aliases.every((a) => ASCII.test(a))) return no('a select item named outside ASCII');

  const order: OuterOrder[] = [];
  let offset = 0;
  let limit: number | undefined;
  for (const m of Array.isArray(sel.modifiers) ? sel.modifiers : []) {
    if (!isNode(m)) return no('a modifier it does not know');
    if (m.type === 'ORDER_MODIFIER' && Array.isArray(m.orders)) {
      for (const o of m.orders) {
        if (!isNode(o)) return no('an ORDER BY term it does not know');
        const v = orderValue(o.expression, columns, aliases, valueOf);
        if (!v) return no('an ORDER BY term that is not a result column, group key or aggregate call');
        const dir = String(o.type);
        const nulls = String(o.null_order);
        if (!['ASCENDING', 'DESCENDING', 'ORDER_DEFAULT'].includes(dir) || !['ORDER_DEFAULT', 'NULLS FIRST', 'NULLS_FIRST', 'NULLS LAST', 'NULLS_LAST'].includes(nulls)) return no(`ORDER BY ${dir} ${nulls}`);
        // DuckDB's defaults (locked in hd_sql's sandbox): ascending, NULLS LAST either way.
        order.push({ value: v, desc: dir === 'DESCENDING', nullsFirst: nulls === 'NULLS FIRST' || nulls === 'NULLS_FIRST' });
      }
    } else if (m.type === 'LIMIT_MODIFIER') {
      const l = m.limit === null ? undefined : count(m.limit);
      const off = m.offset === null ? 0 : count(m.offset);
      if (l === null || off === null) return no('LIMIT or OFFSET that is not a non-negative integer');
      limit = l;
      offset = off;
    } else return no(`${String(m.type).toLowerCase().replace(/_modifier$/, '')} modifier`);
  }
  // Rows are one per group, distinct in their keys: ordered by every key, no two tie. Otherwise
  // DuckDB's order among ties is its own, and a LIMIT or OFFSET could cut between them.
  const total = agg.keys.length === 0 || agg.keys.every((_, i) => order.some((o) => 'key' in o.value && o.value.key === i));
  if (!total && (order.length > 0 || limit !== undefined || offset > 0)) return no('ORDER BY that leaves ties (not every group key is sorted on)');
  return { columns, order, offset, ...(limit !== undefined ? { limit } : {}) };
}

/** The output index of `CAST(first(hd_agg_mI) AS type)` with the type the plan gives output I, else undefined. */
function mergedOutput(n: BigJsonValue | undefined, agg: AggregatePlan): number | undefined {
  if (!isNode(n) || n.class !== 'CAST' || n.try_cast !== false || !isNode(n.child) || !isNode(n.cast_type)) return undefined;
  const f = n.child;
  if (f.class !== 'FUNCTION' || f.function_name !== 'first' || !Array.isArray(f.children) || f.children.length !== 1) return undefined;
  const ref = f.children[0];
  if (!isNode(ref) || ref.type !== 'COLUMN_REF' || !Array.isArray(ref.column_names) || ref.column_names.length !== 1) return undefined;
  const name = String(ref.column_names[0]);
  if (!name.startsWith(MEASURE_PREFIX)) return undefined;
  const i = Number(name.slice(MEASURE_PREFIX.length));
  const out = agg.outputs[i];
  if (!out || String(i) !== name.slice(MEASURE_PREFIX.length)) return undefined;
  return castTypeText(n.cast_type) === out.sqlType ? i : undefined;
}

/** A CAST node's type as the plan writes it (`BIGINT`, `DECIMAL(38,2)`). */
function castTypeText(t: Node): string {
  const info = isNode(t.type_info) ? t.type_info : undefined;
  return t.id === 'DECIMAL' && info ? `DECIMAL(${String(info.width)},${String(info.scale)})` : String(t.id);
}

/**
 * An ORDER BY term's value as DuckDB binds it: a positional constant names a result column; an
 * unqualified name an alias of the select list (case-insensitive; two items of that alias: not
 * ours to pick); otherwise the expression itself, a key or an aggregate call.
 */
function orderValue(e: BigJsonValue | undefined, columns: readonly OuterValue[], aliases: readonly string[], valueOf: (n: BigJsonValue | undefined) => OuterValue | undefined): OuterValue | undefined {
  if (!isNode(e)) return undefined;
  if (e.type === 'VALUE_CONSTANT') {
    const v = isNode(e.value) ? e.value : undefined;
    const t = v && isNode(v.type) ? String(v.type.id) : '';
    if (!v || v.is_null !== false || !['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT'].includes(t)) return undefined;
    const k = Number(v.value);
    return Number.isInteger(k) && k >= 1 ? columns[k - 1] : undefined;
  }
  if (e.type === 'COLUMN_REF' && Array.isArray(e.column_names) && e.column_names.length === 1) {
    const name = String(e.column_names[0]);
    if (!ASCII.test(name)) return undefined;
    const hits = aliases.flatMap((a, i) => (a !== '' && a.toLowerCase() === name.toLowerCase() ? [i] : []));
    if (hits.length > 1) return undefined;
    if (hits.length === 1) return columns[hits[0]!];
  }
  return valueOf(e);
}

/** A LIMIT / OFFSET constant: a non-negative integer (null when it is anything else). */
function count(n: BigJsonValue | undefined): number | null {
  if (!isNode(n) || n.type !== 'VALUE_CONSTANT' || !isNode(n.value) || n.value.is_null !== false || !isNode(n.value.type)) return null;
  if (!['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'HUGEINT'].includes(String(n.value.type.id))) return null;
  const raw = n.value.value;
  const v = typeof raw === 'bigint' ? raw : typeof raw === 'number' && Number.isInteger(raw) ? BigInt(raw) : typeof raw === 'string' && /^\d+$/.test(raw) ? BigInt(raw) : -1n;
  if (v < 0n) return null;
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}
