/**
 * Aggregate pushdown (issue #17, docs/sql.md "Aggregate pushdown"): from DuckDB's parse tree,
 * decide whether a statement splits into partial aggregates the Storage Nodes compute (the HDQuery
 * `aggregate` extension, docs/query.md) and an outer statement hd_sql runs over the merged groups
 * (sql/aggregateMerge.ts). A statement splits only when the split cannot change its answer: one
 * dataset, every WHERE conjunct pushed down exactly, GROUP BY keys the nodes compute exactly, and
 * only count / sum / min / max / avg over fields whose partials merge exactly. Everything else keeps
 * the record path.
 */
import type { FieldInfo, Schema } from '../engine-rs/schema';
import { parseBigJson, stringifyBigJson, type BigJsonValue } from './bigJson';
import { conjuncts, isNode, pushdownOf, type Node } from './pushdown';

/** The name the merged groups are loaded under in the session. */
export const MERGED_TABLE = 'hd_agg_groups';
/** Prefix of the merged table's measure columns (`hd_agg_m0`...). */
export const MEASURE_PREFIX = 'hd_agg_m';
/** Groups a node may return per batch before it refuses (and the statement takes the record path). */
export const MAX_GROUPS = 65_536;

/** One measure of the HDQuery `aggregate` spec: count (no field = count(*)), sum, min, max. */
export interface AggregateMeasure {
  readonly fn: 'count' | 'sum' | 'min' | 'max';
  readonly field?: string;
}

/** One group key of the spec: a field, or a time bucket `ts - ts % bucket`. */
export interface AggregateKey {
  readonly field: string;
  readonly bucket?: number;
}

/** The HDQuery `aggregate` extension, version 1 (docs/query.md, "Aggregates (v1, ours)"). */
export interface AggregateSpec {
  readonly version: 1;
  readonly group_by: readonly AggregateKey[];
  readonly measures: readonly AggregateMeasure[];
  readonly max_groups: number;
}

/** How an average is presented: DuckDB's own finalisation, reproduced (sql/aggregateMerge.ts). */
export type AvgPath = 'double' | 'longDouble';

/** One aggregate call of the statement, as the outer statement reads it back. */
export interface AggregateOutput {
  readonly fn: 'count' | 'sum' | 'min' | 'max' | 'avg';
  /** The field (absent for count(*) and count of a never-null column). */
  readonly field?: FieldInfo;
  /** Indexes into `spec.measures`: one, or [sum, count] for avg. */
  readonly measures: readonly number[];
  /** The DuckDB type the normal path gives the call (the outer statement casts to it). */
  readonly sqlType: string;
  /** For avg: DuckDB's finalisation path and the decimal scale of the input. */
  readonly avgPath?: AvgPath;
  readonly scale?: number;
}

/** A statement that splits. */
export interface AggregatePlan {
  readonly spec: AggregateSpec;
  /** The fields of `spec.group_by`, in order. */
  readonly keys: readonly FieldInfo[];
  /** Distinct aggregate calls, in the order of the merged table's measure columns. */
  readonly outputs: readonly AggregateOutput[];
  /**
   * The outer statement (`json_serialize_sql` form): FROM the merged table under the dataset's
   * alias, WHERE dropped (it was pushed whole), each aggregate call replaced by its merged value.
   * Select items that held a call and had no alias get one later: the name the normal path gives.
   */
  readonly outerTree: string;
  /** Indexes of the select items whose names the engine must pin (they held a replaced call). */
  readonly renamedItems: readonly number[];
  /** What was pushed, for the pushdown notice. */
  readonly summary: string;
}

/** Why a statement does not split (for the pushdown notice and the planner tests). */
export interface NoSplit {
  readonly reason: string;
}

const SMALLINT_TYPES = new Set(['uint8', 'int8', 'int16']);
const INTEGER_TYPES = new Set(['uint16', 'int32']);
const BIGINT_TYPES = new Set(['uint32', 'int64', 'timestamp']);
const KEY_TYPES = new Set(['uint8', 'uint16', 'uint32', 'uint64', 'int8', 'int16', 'int32', 'int64', 'boolean', 'timestamp']);
/** Types a node groups by their bytes at 1, 2, 4 or 8 bytes (docs/query.md, `group_by`). */
const BYTE_KEY_TYPES = new Set(['bytes', 'string', 'blob', 'chess_move']);
const BYTE_KEY_SIZES = new Set([1, 2, 4, 8]);
/** Types whose column is never null (count(col) = count(*)). */
const NEVER_NULL = new Set(['uint8', 'uint16', 'uint32', 'uint64', 'uint128', 'uint256', 'int8', 'int16', 'int32', 'int64', 'int128', 'int256', 'float', 'double', 'boolean', 'timestamp', 'ipv4', 'ipv6', 'string', 'bytes', 'blob']);
const SUPPORTED = new Set(['count_star', 'count', 'sum', 'min', 'max', 'avg']);

/** The DuckDB type hd_sql loads a field as (docs/decoding.md), for the fields measures may read. */
function sqlTypeOf(f: FieldInfo): string | undefined {
  if (f.type === 'numeric') return f.precision !== undefined && f.precision <= 38 ? `DECIMAL(${f.precision},${f.scale ?? 0})` : undefined;
  if (SMALLINT_TYPES.has(f.type)) return 'SMALLINT';
  if (INTEGER_TYPES.has(f.type)) return 'INTEGER';
  if (BIGINT_TYPES.has(f.type)) return 'BIGINT';
  if (f.type === 'uint64') return 'UBIGINT';
  return undefined;
}

/** A plain field (no enum, no delta time, no array) whose values the nodes sum / compare exactly. */
function numericField(f: FieldInfo): boolean {
  return !f.enum && !f.timeReference && !f.array && sqlTypeOf(f) !== undefined;
}

/**
 * Whether GROUP BY `f` splits as a key the nodes read as its bytes and the merge decodes back
 * (sql/aggregateMerge.ts): bytes (arrays too), strings, blobs and chess moves of 1, 2, 4 or 8 bytes.
 * Their value is a function of those bytes alone, so writing a key's bytes into an empty record and
 * decoding it gives the record path's value exactly. Not arrays of floats or doubles: DuckDB groups
 * -0 with 0 (and NaNs together), so which of the byte patterns a group shows is not the merge's to
 * know. Not ipv4 (the node's key is its address): the outer statement would order and compare the
 * inet text, where the record path's address rewrite (sql/addressRewrite.ts) uses the address.
 */
export function isByteKey(f: FieldInfo): boolean {
  return BYTE_KEY_TYPES.has(f.type) && BYTE_KEY_SIZES.has(f.size) && !f.timeReference && (f.array === undefined || (f.array.element !== 'float' && f.array.element !== 'double'));
}

/** DuckDB's avg finalisation for `f` (avg.cpp: int16 inputs in double, wider ones in long double). */
function avgPathOf(f: FieldInfo): AvgPath | undefined {
  if (f.type === 'numeric') return (f.precision ?? 39) <= 4 ? 'double' : 'longDouble';
  if (SMALLINT_TYPES.has(f.type)) return 'double';
  if (INTEGER_TYPES.has(f.type) || f.type === 'uint32' || f.type === 'int64') return 'longDouble';
  return undefined; // uint64 (avg over UBIGINT casts each value), timestamp (not a measure of the contract)
}

/** The JSON of a type for a CAST node (the shape `json_serialize_sql` writes). */
function castType(sqlType: string): BigJsonValue {
  const d = /^DECIMAL\((\d+),(\d+)\)$/.exec(sqlType);
  if (d) return { id: 'DECIMAL', type_info: { type: 'DECIMAL_TYPE_INFO', alias: '', extension_info: null, width: Number(d[1]), scale: Number(d[2]) } };
  return { id: sqlType, type_info: null };
}

function columnRef(name: string): Node {
  return { class: 'COLUMN_REF', type: 'COLUMN_REF', alias: '', query_location: 0, column_names: [name] } as Node;
}

/** `CAST(first(hd_agg_mI) AS type)`: the merged value of one call, typed as the normal path types it. */
function mergedValue(i: number, sqlType: string, alias: string): Node {
  const first: Node = { class: 'FUNCTION', type: 'FUNCTION', alias: '', query_location: 0, function_name: 'first', schema: '', children: [columnRef(`${MEASURE_PREFIX}${i}`)], filter: null, order_bys: { type: 'ORDER_MODIFIER', orders: [] }, distinct: false, is_operator: false, export_state: false, catalog: '' } as Node;
  return { class: 'CAST', type: 'OPERATOR_CAST', alias, query_location: 0, child: first, cast_type: castType(sqlType), try_cast: false } as Node;
}

/** Options of {@link aggregatePlanOf}. */
export interface AggregatePlanOptions {
  /** Bound values of `$n` placeholders (the WHERE pushes them like literals). */
  readonly params?: readonly unknown[];
  /**
   * Lower-cased names of every aggregate function and macro DuckDB knows: an unsupported one
   * anywhere in the statement keeps the record path (over the merged groups it would aggregate
   * the wrong rows).
   */
  readonly aggregateFunctions: ReadonlySet<string>;
}

/**
 * The split of `root` (one statement of `json_serialize_sql`, not modified) reading `schema`, or
 * why it does not split.
 * @example
 * const a = aggregatePlanOf(statementsOf(tree)[0], schema, { aggregateFunctions });
 * if (!('reason' in a)) query.aggregate = a.spec;
 */
export function aggregatePlanOf(root: Node, schema: Schema, opts: AggregatePlanOptions): AggregatePlan | NoSplit {
  const no = (reason: string): NoSplit => ({ reason });
  const top = parseBigJson(stringifyBigJson(root)) as Node; // our own copy to rewrite
  const sel = top.node;
  if (!isNode(sel) || sel.type !== 'SELECT_NODE') return no('not a simple SELECT (set operation or other statement)');
  if (isNode(sel.cte_map) && Array.isArray(sel.cte_map.map) && sel.cte_map.map.length > 0) return no('a WITH clause');
  const from = sel.from_table;
  if (!isNode(from) || from.type !== 'BASE_TABLE' || from.sample !== null || from.at_clause !== null || (Array.isArray(from.column_name_alias) && from.column_name_alias.length > 0)) return no('FROM is not one plain dataset');
  if (sel.qualify !== null || sel.sample !== null) return no('QUALIFY or SAMPLE');
  if (sel.aggregate_handling !== 'STANDARD_HANDLING') return no('GROUP BY ALL');
  if (schema.fields.some((f) => f.name.toLowerCase().startsWith(MEASURE_PREFIX))) return no(`a field named ${MEASURE_PREFIX}*`);
  const tableName = String(from.table_name);
  const alias = typeof from.alias === 'string' && from.alias !== '' ? from.alias : tableName;
  const qualifiers = new Set([tableName.toLowerCase(), alias.toLowerCase()]);
  const field = (n: BigJsonValue | undefined): FieldInfo | undefined => {
    if (!isNode(n) || n.type !== 'COLUMN_REF' || !Array.isArray(n.column_names)) return undefined;
    const names = n.column_names.map(String);
    if (names.length > 2 || (names.length === 2 && !qualifiers.has(names[0]!.toLowerCase()))) return undefined;
    const last = names[names.length - 1]!;
    return schema.fields.find((f) => f.name.toLowerCase() === last.toLowerCase());
  };

  // WHERE: pushed whole, or no split (a conjunct evaluated locally would change the aggregate).
  const where = sel.where_clause ?? undefined;
  if (isNode(where)) {
    if (hasType(where, (n) => n.class === 'SUBQUERY')) return no('a subquery in WHERE');
    const pushed = pushdownOf(where, schema, qualifiers, opts.params ?? []);
    const all = conjuncts(where);
    if (pushed.filters.length !== all.length) return no(`WHERE has ${all.length - pushed.filters.length} conjunct(s) the Storage Nodes cannot evaluate exactly`);
  }

  // Everything but WHERE and FROM is evaluated again over the merged groups.
  const outerParts: BigJsonValue[] = [sel.select_list ?? null, sel.having ?? null, sel.modifiers ?? null, sel.group_expressions ?? null];
  for (const p of outerParts) {
    const bad = findNode(p, (n) => n.class === 'SUBQUERY' || n.class === 'WINDOW' || n.class === 'STAR' || n.type === 'STAR' || n.type === 'VALUE_PARAMETER' || n.type === 'POSITIONAL_REFERENCE' || n.class === 'LAMBDA');
    if (bad) return no(`${String(bad.class ?? bad.type).toLowerCase()} outside WHERE`);
  }

  // GROUP BY keys.
  const selectList = Array.isArray(sel.select_list) ? sel.select_list.filter(isNode) : [];
  const groupExprs = Array.isArray(sel.group_expressions) ? sel.group_expressions.filter(isNode) : [];
  const sets = Array.isArray(sel.group_sets) ? sel.group_sets : [];
  if (sets.length > 1 || (sets.length === 1 && (!Array.isArray(sets[0]) || sets[0].length !== groupExprs.length))) return no('GROUPING SETS, ROLLUP or CUBE');
  if (groupExprs.length > 4) return no('more than 4 GROUP BY keys');
  const keys: FieldInfo[] = [];
  const groupBy: AggregateKey[] = [];
  for (const g0 of groupExprs) {
    let g: Node = g0;
    // GROUP BY 1 / GROUP BY alias: the select item it names.
    if (g.type === 'VALUE_CONSTANT' && isNode(g.value) && typeof g.value.value === 'number') {
      const item = selectList[g.value.value - 1];
      if (!item) return no('GROUP BY position out of range');
      g = item;
    } else if (g.type === 'COLUMN_REF' && !field(g) && Array.isArray(g.column_names) && g.column_names.length === 1) {
      const name = String(g.column_names[0]).toLowerCase();
      const item = selectList.find((s) => String(s.alias).toLowerCase() === name);
      if (!item) return no(`GROUP BY ${name}`);
      g = item;
    }
    const key = keyOf(g, field);
    if (!key) return no('a GROUP BY key that is not an integer, enum, boolean or timestamp field, a bytes, string, blob or chess_move field of 1, 2, 4 or 8 bytes, or a `ts - ts % N` bucket');
    if (keys.some((k) => k.name === key.field.name)) return no(`field ${key.field.name} in two GROUP BY keys`);
    keys.push(key.field);
    groupBy.push({ field: key.field.name, ...(key.bucket !== undefined ? { bucket: key.bucket } : {}) });
  }

  // Aggregate calls: replaced in place by their merged value.
  const measures: AggregateMeasure[] = [{ fn: 'count' }];
  const measureIndex = (m: AggregateMeasure): number => {
    const i = measures.findIndex((x) => x.fn === m.fn && x.field === m.field);
    if (i >= 0) return i;
    measures.push(m);
    return measures.length - 1;
  };
  const outputs: AggregateOutput[] = [];
  const outputKeys: string[] = [];
  let refusal: string | undefined;
  const outputOf = (fn: Node): number | undefined => {
    const name = String(fn.function_name).toLowerCase();
    const children = Array.isArray(fn.children) ? fn.children : [];
    if (fn.distinct === true || fn.filter !== null || fn.export_state === true || (isNode(fn.order_bys) && Array.isArray(fn.order_bys.orders) && fn.order_bys.orders.length > 0)) return void (refusal = `${name} with DISTINCT, FILTER or ORDER BY`);
    if (String(fn.schema ?? '') !== '') return void (refusal = `${name} with a schema`);
    let out: AggregateOutput;
    if (name === 'count_star' && children.length === 0) out = { fn: 'count', measures: [0], sqlType: 'BIGINT' };
    else {
      const f = children.length === 1 ? field(children[0]) : undefined;
      if (!f) return void (refusal = `${name} over an expression that is not a dataset field`);
      if (name === 'count') {
        if (!NEVER_NULL.has(f.type) || f.timeReference || f.array) return void (refusal = `count(${f.name}): ${f.type} may be null`);
        out = { fn: 'count', measures: [0], sqlType: 'BIGINT' };
      } else {
        const t = numericField(f) ? sqlTypeOf(f) : undefined;
        if (!t) return void (refusal = `${name}(${f.name}): ${f.enum ? 'an enum' : f.type} is not summed or compared by the Storage Nodes`);
        if (name === 'sum') {
          if (f.type === 'timestamp') return void (refusal = `sum(${f.name}): a timestamp`);
          out = { fn: 'sum', field: f, measures: [measureIndex({ fn: 'sum', field: f.name })], sqlType: f.type === 'numeric' ? `DECIMAL(38,${f.scale ?? 0})` : 'HUGEINT' };
        } else if (name === 'avg') {
          const path = avgPathOf(f);
          if (!path) return void (refusal = `avg(${f.name}): DuckDB averages ${f.type} in a way the merge does not reproduce`);
          out = { fn: 'avg', field: f, measures: [measureIndex({ fn: 'sum', field: f.name }), 0], sqlType: 'DOUBLE', avgPath: path, ...(f.type === 'numeric' ? { scale: f.scale ?? 0 } : {}) };
        } else {
          const fnName = name as 'min' | 'max';
          out = { fn: fnName, field: f, measures: [measureIndex({ fn: fnName, field: f.name })], sqlType: t };
        }
      }
    }
    const id = `${out.fn}:${out.field?.name ?? ''}:${out.sqlType}`;
    const known = outputKeys.indexOf(id);
    if (known >= 0) return known;
    outputKeys.push(id);
    outputs.push(out);
    return outputs.length - 1;
  };
  const renamed = new Set<number>();
  const rewrite = (v: BigJsonValue, item?: number): BigJsonValue => {
    if (refusal) return v;
    if (Array.isArray(v)) return v.map((x) => rewrite(x, item));
    if (!isNode(v)) return v;
    if (v.class === 'FUNCTION' || v.class === 'AGGREGATE') {
      const name = String(v.function_name).toLowerCase();
      if (SUPPORTED.has(name)) {
        const i = outputOf(v);
        if (i === undefined) return v;
        if (item !== undefined) renamed.add(item);
        return mergedValue(i, (outputs[i] as AggregateOutput).sqlType, String(v.alias ?? ''));
      }
      if (opts.aggregateFunctions.has(name)) {
        refusal = `${name}() is not pushed down`;
        return v;
      }
    }
    if (v.type === 'COLUMN_REF') {
      const f = field(v);
      if (f && !keys.includes(f)) refusal = `${f.name} is read outside an aggregate but is not a GROUP BY key`;
      return v;
    }
    const out: Node = {};
    for (const [k, x] of Object.entries(v)) out[k] = rewrite(x, item);
    return out;
  };
  sel.select_list = selectList.map((s, i) => rewrite(s, i));
  sel.having = rewrite(sel.having ?? null);
  sel.modifiers = rewrite(sel.modifiers ?? null);
  if (refusal) return no(refusal);
  if (outputs.length === 0 && keys.length === 0) return no('no aggregate');
  if (measures.length > 32) return no('more than 32 measures');
  sel.where_clause = null;
  sel.from_table = { ...from, table_name: MERGED_TABLE, schema_name: '', catalog_name: '', alias };
  const spec: AggregateSpec = { version: 1, group_by: groupBy, measures, max_groups: MAX_GROUPS };
  const summary = `aggregate pushed to the Storage Nodes: ${measures.map((m) => `${m.fn}(${m.field ?? '*'})`).join(', ')}${groupBy.length > 0 ? ` grouped by ${groupBy.map((k) => (k.bucket !== undefined ? `${k.field} - ${k.field} % ${k.bucket}` : k.field)).join(', ')}` : ''}`;
  return { spec, keys, outputs, outerTree: stringifyBigJson({ error: false, statements: [top] }), renamedItems: [...renamed].sort((a, b) => a - b), summary };
}

/** A GROUP BY key the nodes compute: a key-typed field, a byte key, or `ts - ts % N` on a timestamp field (`field` resolves column references). */
export function keyOf(g: Node, field: (n: BigJsonValue | undefined) => FieldInfo | undefined): { field: FieldInfo; bucket?: number } | undefined {
  const plain = (f: FieldInfo | undefined): f is FieldInfo => f !== undefined && KEY_TYPES.has(f.type) && !f.timeReference && !f.array;
  const direct = field(g);
  if (direct) return plain(direct) || isByteKey(direct) ? { field: direct } : undefined;
  if (g.class !== 'FUNCTION' || g.function_name !== '-' || !Array.isArray(g.children) || g.children.length !== 2) return undefined;
  const [a, mod] = g.children;
  const f = field(a);
  if (!plain(f) || f.type !== 'timestamp' || !isNode(mod) || mod.class !== 'FUNCTION' || mod.function_name !== '%' || !Array.isArray(mod.children) || mod.children.length !== 2) return undefined;
  if (field(mod.children[0]) !== f) return undefined;
  const n = mod.children[1];
  if (!isNode(n) || n.type !== 'VALUE_CONSTANT' || !isNode(n.value) || n.value.is_null !== false || !isNode(n.value.type)) return undefined;
  if (!['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT'].includes(String(n.value.type.id))) return undefined;
  const bucket = Number(n.value.value);
  return Number.isSafeInteger(bucket) && bucket > 0 ? { field: f, bucket } : undefined;
}

function findNode(v: BigJsonValue | undefined, pred: (n: Node) => boolean): Node | undefined {
  if (Array.isArray(v)) {
    for (const x of v) {
      const hit = findNode(x, pred);
      if (hit) return hit;
    }
    return undefined;
  }
  if (!isNode(v)) return undefined;
  if (pred(v)) return v;
  for (const x of Object.values(v)) {
    const hit = findNode(x, pred);
    if (hit) return hit;
  }
  return undefined;
}

function hasType(v: BigJsonValue, pred: (n: Node) => boolean): boolean {
  return findNode(v, pred) !== undefined;
}
