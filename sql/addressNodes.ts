/**
 * Parse-tree nodes the address rewrite (sql/addressRewrite.ts) builds, in the shape DuckDB's
 * `json_serialize_sql` writes and `json_deserialize_sql` reads back (DuckDB 1.5): key calls, key
 * constants, a SELECT over a subquery, and the one-item statement that asks DuckDB for a select
 * item's name.
 */
import { parseBigJson, stringifyBigJson, type BigJsonValue } from './bigJson';
import { ADDRESS_KEY_FUNCTIONS, ADDRESS_KEY_TYPES } from './addressFunctions';
import type { AddressKind } from './inetAddress';
import type { Node } from './pushdown';

/** A deep copy of a tree value. */
export function copyOf<T extends BigJsonValue>(v: T): T {
  return parseBigJson(stringifyBigJson(v)) as T;
}

/** A call of scalar function `name` (schema-less) on `children`. */
export function functionCall(name: string, children: BigJsonValue[]): Node {
  return { class: 'FUNCTION', type: 'FUNCTION', alias: '', query_location: 0, function_name: name, schema: '', children, filter: null, order_bys: { type: 'ORDER_MODIFIER', orders: [] }, distinct: false, is_operator: false, export_state: false, catalog: '' };
}

/** `hd_inet4_key(e)` / `hd_inet6_key(e)`: the integer of an address expression. */
export function keyCall(kind: AddressKind, e: BigJsonValue): Node {
  return functionCall(ADDRESS_KEY_FUNCTIONS[kind], [e]);
}

/** `CAST('<value>' AS UINTEGER | UHUGEINT)`: an address literal's integer, typed as the key. */
export function keyConstant(kind: AddressKind, value: bigint): Node {
  const text: Node = { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', query_location: 0, value: { type: { id: 'VARCHAR', type_info: null }, is_null: false, value: value.toString() } };
  return { class: 'CAST', type: 'OPERATOR_CAST', alias: '', query_location: 0, child: text, cast_type: { id: ADDRESS_KEY_TYPES[kind], type_info: null }, try_cast: false };
}

/** A column reference by one (already lower-cased or exact) name. */
export function columnRef(name: string): Node {
  return { class: 'COLUMN_REF', type: 'COLUMN_REF', alias: '', query_location: 0, column_names: [name] };
}

/** An empty SELECT_NODE over `from` with `select_list` and `modifiers`. */
function selectNode(selectList: BigJsonValue[], from: Node, modifiers: BigJsonValue[]): Node {
  return { type: 'SELECT_NODE', modifiers, cte_map: { map: [] }, select_list: selectList, from_table: from, where_clause: null, group_expressions: [], group_sets: [], aggregate_handling: 'STANDARD_HANDLING', having: null, sample: null, qualify: null };
}

const STAR: Node = { class: 'STAR', type: 'STAR', alias: '', query_location: 0, relation_name: '', exclude_list: [], replace_list: [], columns: false, expr: null, qualified_exclude_list: [], rename_list: [] };

/**
 * `SELECT * FROM (<query>) AS <alias> <modifiers>`: where a set operation's ORDER BY must sort
 * on an expression, which DuckDB only allows outside the set operation.
 */
export function selectStarFrom(query: Node, alias: string, modifiers: BigJsonValue[]): Node {
  const from: Node = { type: 'SUBQUERY', alias, sample: null, query_location: 0, subquery: { node: query, named_param_map: [] }, column_name_alias: [] };
  return selectNode([copyOf(STAR)], from, modifiers);
}

/** `SELECT <item>` as `json_deserialize_sql` takes it: DuckDB writes it back as `SELECT ` + the item's name. */
export function oneItemStatement(item: Node): string {
  const empty: Node = { type: 'EMPTY', alias: '', sample: null, query_location: 0 };
  return stringifyBigJson({ error: false, statements: [{ node: selectNode([item], empty, []), named_param_map: [] }] });
}

/**
 * `CASE WHEN $n IS NULL THEN NULL ELSE <value> END`: a bound parameter's value, converted when the
 * statement was planned with it, while `$n` stays in the statement (DuckDB binds every parameter given).
 */
export function boundParameter(param: Node, value: Node): Node {
  const isNull: Node = { class: 'OPERATOR', type: 'OPERATOR_IS_NULL', alias: '', query_location: 0, children: [copyOf(param)] };
  const nullValue: Node = { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', query_location: 0, value: { type: { id: 'NULL', type_info: null }, is_null: true } };
  return { class: 'CASE', type: 'CASE_EXPR', alias: '', query_location: 0, case_checks: [{ when_expr: isNull, then_expr: nullValue }], else_expr: value };
}

/** A VARCHAR constant. */
export function textConstant(text: string): Node {
  return { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', query_location: 0, value: { type: { id: 'VARCHAR', type_info: null }, is_null: false, value: text } };
}
