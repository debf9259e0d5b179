/**
 * Address and 256-bit integer semantics (docs/sql.md, "Addresses and wide integers"): ipv4 / ipv6
 * columns reach DuckDB as the text clients see, and this rewrite of DuckDB's parse tree makes them
 * compare, sort and aggregate on the integer they store:
 *
 * - comparisons, BETWEEN, IN with literals, parameters or other addresses (sql/addressCompare.ts);
 * - `ORDER BY` (of a SELECT, a set operation, a window, an aggregate's own ORDER BY) sorts by the
 *   key `hd_inet4_key(col)` / `hd_inet6_key(col)` (sql/addressFunctions.ts);
 * - `min(col)` / `max(col)` become `arg_min(col, key)` / `arg_max(col, key)`: the address whose
 *   integer is least / greatest, still as its text.
 *
 * Which expressions are addresses is resolved as DuckDB binds names (sql/addressScope.ts); a name
 * that cannot be placed with certainty is left alone. A select item whose text changed keeps the
 * name DuckDB gives the item as written: it gets an alias placeholder, and the engine asks DuckDB
 * for the original's name (sql/addressPins.ts). 256-bit integers are BIGNUM in DuckDB
 * (local/bignum.ts), which compares them exactly; here only inexact literals are refused.
 */
import type { Schema } from '../engine-rs/schema';
import { parseBigJson, stringifyBigJson, type BigJsonValue } from './bigJson';
import { comparedOperands } from './addressCompare';
import { columnRef, copyOf, keyCall, oneItemStatement, selectStarFrom } from './addressNodes';
import { datasetColumns, kindOfExpr, renamed, Scope, type Column, type OrderKind, type Relation } from './addressScope';
import { addressLiteral, type AddressKind } from './inetAddress';
import { isNode, type Node } from './pushdown';

/** The alias placeholder of pinned select item `i` (replaced by DuckDB's name before the statement runs). */
export const PIN_PREFIX = 'hd\u0001pin ';

/** What the rewrite did to a statement. */
export interface AddressRewrite {
  /** True when the tree changed (it must run as rewritten). */
  readonly changed: boolean;
  /** One-item statements (`json_serialize_sql` form) whose names the placeholders `PIN_PREFIX + i` stand for. */
  readonly pins: readonly string[];
}

const EQUALITY = new Set(['COMPARE_EQUAL', 'COMPARE_NOTEQUAL', 'COMPARE_DISTINCT_FROM', 'COMPARE_NOT_DISTINCT_FROM']);
const ORDERING = new Set(['COMPARE_LESSTHAN', 'COMPARE_GREATERTHAN', 'COMPARE_LESSTHANOREQUALTO', 'COMPARE_GREATERTHANOREQUALTO']);
const ADDRESS = (k: OrderKind | undefined): k is AddressKind => k === 'ipv4' || k === 'ipv6';

/** CTE names in scope → their columns (undefined: unknown). */
type Ctes = ReadonlyMap<string, readonly Column[] | undefined>;

/**
 * Rewrites `statement` (one statement of `json_serialize_sql`, in place). `datasetOf` names the
 * dataset a BASE_TABLE node reads (the planner's resolution); `params` are the bound values of
 * `$n`, empty when unknown (a Describe).
 * @throws SqlError `query_failed` for a literal or parameter that is not an address of the column's kind.
 */
export function rewriteAddressSemantics(statement: Node, datasetOf: (table: Node) => Schema | undefined, params: readonly unknown[]): AddressRewrite {
  const before = stringifyBigJson(statement);
  const r = new Rewriter(datasetOf, params);
  if (isNode(statement.node)) statement.node = r.query(statement.node, undefined, new Map()).node;
  return { changed: stringifyBigJson(statement) !== before, pins: r.pins };
}

class Rewriter {
  readonly pins: string[] = [];
  private readonly subqueries = new WeakMap<Node, readonly Column[] | undefined>();
  /** The CTEs in scope of each SELECT's scope (a subquery expression sees them too). */
  private readonly ctesOf = new WeakMap<Scope, Ctes>();

  constructor(
    private readonly datasetOf: (table: Node) => Schema | undefined,
    private readonly params: readonly unknown[],
  ) {}

  /** Rewrites a query node; gives it (or its replacement) and its output columns. */
  query(node: Node, outer: Scope | undefined, ctes: Ctes): { node: Node; columns?: readonly Column[] } {
    const mine = this.ctes(node, outer, ctes);
    if (node.type === 'SELECT_NODE') return { node, ...this.select(node, outer, mine) };
    if (node.type === 'SET_OPERATION_NODE') return this.setOperation(node, outer, mine);
    if (node.type === 'RECURSIVE_CTE_NODE' && isNode(node.left) && isNode(node.right)) {
      const left = this.query(node.left, outer, mine);
      node.left = left.node;
      const self = left.columns?.map((c) => ({ name: c.name }));
      node.right = this.query(node.right, outer, new Map([...mine, [String(node.cte_name).toLowerCase(), self]])).node;
      return { node, ...(self ? { columns: self } : {}) };
    }
    return { node };
  }

  /** The CTEs a node defines, each rewritten with the ones before it in scope. */
  private ctes(node: Node, outer: Scope | undefined, ctes: Ctes): Ctes {
    const list = isNode(node.cte_map) && Array.isArray(node.cte_map.map) ? node.cte_map.map.filter(isNode) : [];
    if (list.length === 0) return ctes;
    const out = new Map(ctes);
    for (const e of list) {
      const v = e.value;
      const q = isNode(v) && isNode(v.query) ? v.query : undefined;
      const name = String(e.key).toLowerCase();
      if (!q || !isNode(q.node)) {
        out.set(name, undefined);
        continue;
      }
      const r = this.query(q.node, outer, new Map([...out, [name, undefined]]));
      q.node = r.node;
      out.set(name, renamed(r.columns, isNode(v) ? v.aliases : undefined));
    }
    return out;
  }

  private select(node: Node, outer: Scope | undefined, ctes: Ctes): { columns?: readonly Column[] } {
    const relations = this.from(node.from_table, outer, ctes);
    const scope = new Scope(relations, outer);
    this.ctesOf.set(scope, ctes);
    const items = Array.isArray(node.select_list) ? node.select_list : [];
    const perItem = items.map((it, i) => this.itemColumns(it, i, relations, scope));
    scope.aliases = perItem.flatMap((c) => c ?? []);
    const rewritten = items.map((it) => this.selectItem(it, scope));
    node.select_list = rewritten;
    for (const key of ['where_clause', 'having', 'qualify', 'group_expressions'] as const) node[key] = this.expr(node[key] ?? null, scope);
    const columns = perItem.every((c) => c !== undefined) ? (perItem as Column[][]).flat() : undefined;
    const mods = Array.isArray(node.modifiers) ? node.modifiers.filter(isNode) : [];
    for (const m of mods) {
      if (m.type === 'ORDER_MODIFIER' && Array.isArray(m.orders)) {
        for (const o of m.orders.filter(isNode)) o.expression = this.selectOrderKey(o.expression ?? null, scope, rewritten, perItem);
      } else for (const [k, x] of Object.entries(m)) if (k !== 'type') m[k] = this.expr(x, scope);
    }
    return columns ? { columns } : {};
  }

  /** The columns one select item gives (a star: those it expands to), undefined when unknown. */
  private itemColumns(it: BigJsonValue, i: number, relations: readonly Relation[], scope: Scope): Column[] | undefined {
    if (!isNode(it)) return undefined;
    if (it.class !== 'STAR') {
      const name = it.alias ? String(it.alias).toLowerCase() : it.type === 'COLUMN_REF' && Array.isArray(it.column_names) ? String(it.column_names[it.column_names.length - 1]).toLowerCase() : `\u0000${i}`;
      const kind = this.kindOf(it, scope);
      return [{ name, ...(kind ? { kind } : {}) }];
    }
    if (it.columns === true || isNode(it.expr)) return undefined;
    const rel = typeof it.relation_name === 'string' && it.relation_name !== '' ? relations.filter((r) => r.names.has(String(it.relation_name).toLowerCase())) : relations;
    if (rel.length === 0 || rel.some((r) => !r.columns || merged.has(r))) return undefined;
    const excluded = new Set([...(Array.isArray(it.exclude_list) ? it.exclude_list : []), ...(Array.isArray(it.qualified_exclude_list) ? it.qualified_exclude_list.map((q) => (isNode(q) ? q.column : null)) : [])].map((x) => String(x).toLowerCase()));
    const replaced = new Map((Array.isArray(it.replace_list) ? it.replace_list.filter(isNode) : []).map((r) => [String(r.key).toLowerCase(), this.kindOf(r.value, scope)]));
    const renames = new Map((Array.isArray(it.rename_list) ? it.rename_list.filter(isNode) : []).map((r) => [String(isNode(r.key) ? r.key.column : r.key).toLowerCase(), String(r.value).toLowerCase()]));
    return rel
      .flatMap((r) => r.columns ?? [])
      .filter((c) => !excluded.has(c.name))
      .map((c) => {
        const kind = replaced.has(c.name) ? replaced.get(c.name) : c.kind;
        return { name: renames.get(c.name) ?? c.name, ...(kind ? { kind } : {}) };
      });
  }

  /** A select item rewritten; one whose text changed keeps its name (a pin), unless it has an alias. */
  private selectItem(it: BigJsonValue, scope: Scope): BigJsonValue {
    if (!isNode(it) || it.class === 'STAR') return this.expr(it, scope);
    const before = stringifyBigJson(it);
    const after = this.expr(it, scope);
    if (isNode(after) && !after.alias && stringifyBigJson(after) !== before) {
      after.alias = `${PIN_PREFIX}${this.pins.length}`;
      this.pins.push(oneItemStatement(parseBigJson(before) as Node));
    }
    return after;
  }

  /** A SELECT's ORDER BY term: a bare name or a position names a select item first (as DuckDB binds it). */
  private selectOrderKey(e: BigJsonValue, scope: Scope, items: readonly BigJsonValue[], perItem: readonly (Column[] | undefined)[]): BigJsonValue {
    // Inside an expression DuckDB binds FROM columns before aliases: sort by the item's own expression.
    let at = -1;
    if (isNode(e) && e.type === 'COLUMN_REF' && Array.isArray(e.column_names) && e.column_names.length === 1) {
      const name = String(e.column_names[0]).toLowerCase();
      at = items.findIndex((it, j) => isNode(it) && it.class !== 'STAR' && perItem[j]?.[0]?.name === name);
      const star = at < 0 ? items.findIndex((it, j) => isNode(it) && it.class === 'STAR' && perItem[j]?.some((c) => c.name === name)) : -1;
      if (star >= 0) {
        // A star's column: the FROM column itself, unless the star REPLACEs it (then leave it as written).
        const it = items[star] as Node;
        const replaced = Array.isArray(it.replace_list) && it.replace_list.some((r) => isNode(r) && String(r.key).toLowerCase() === name);
        const kind = perItem[star]?.find((c) => c.name === name)?.kind;
        return !replaced && ADDRESS(kind) ? keyCall(kind, e) : e;
      }
    } else if (isNode(e) && e.type === 'VALUE_CONSTANT' && isNode(e.value) && typeof e.value.value === 'number' && isNode(e.value.type) && e.value.type.id === 'INTEGER') {
      const n = e.value.value;
      if (n >= 1 && n <= items.length && items.slice(0, n).every((it) => isNode(it) && it.class !== 'STAR')) at = n - 1;
    }
    const item = items[at];
    if (!isNode(item)) return this.orderKey(e, scope);
    const kind = perItem[at]?.[0]?.kind;
    if (!ADDRESS(kind)) return e;
    const copy = copyOf(item);
    copy.alias = '';
    return keyCall(kind, copy); // the rewritten item (arg_min for min ...), sorted by its key
  }

  /** An ORDER BY term of a window, an aggregate or a SELECT: by its key when it is an address. */
  private orderKey(e: BigJsonValue, scope: Scope): BigJsonValue {
    const kind = this.kindOf(e, scope);
    const out = this.expr(e, scope);
    return ADDRESS(kind) ? keyCall(kind, out) : out;
  }

  private setOperation(node: Node, outer: Scope | undefined, ctes: Ctes): { node: Node; columns?: readonly Column[] } {
    const sides = [node.left, node.right].map((x) => (isNode(x) ? this.query(x, outer, ctes) : undefined));
    node.left = sides[0]?.node ?? node.left ?? null;
    node.right = sides[1]?.node ?? node.right ?? null;
    const [l, r] = sides.map((s) => s?.columns);
    const byName = String(node.setop_type) === 'UNION_BY_NAME';
    const columns = l?.map((c, i) => (!byName && c.kind && r?.[i]?.kind === c.kind ? c : { name: c.name }));
    const mods = Array.isArray(node.modifiers) ? node.modifiers.filter(isNode) : [];
    const order = mods.find((m) => m.type === 'ORDER_MODIFIER');
    if (!columns || !order || !Array.isArray(order.orders)) return { node, ...(columns ? { columns } : {}) };
    // DuckDB sorts a set operation by its output columns only: sort a SELECT over it instead.
    const orders = order.orders.filter(isNode);
    const keyed = orders.map((o) => {
      const e = o.expression;
      let c: Column | undefined;
      if (isNode(e) && e.type === 'COLUMN_REF' && Array.isArray(e.column_names) && e.column_names.length === 1) c = columns.find((x) => x.name === String((e.column_names as BigJsonValue[])[0]).toLowerCase());
      else if (isNode(e) && e.type === 'VALUE_CONSTANT' && isNode(e.value) && typeof e.value.value === 'number') c = columns[e.value.value - 1];
      return c && ADDRESS(c.kind) && !c.name.startsWith('\u0000') ? { ...o, expression: keyCall(c.kind, columnRef(c.name)) } : o;
    });
    if (keyed.every((o, i) => o === orders[i])) return { node, columns };
    node.modifiers = [];
    return { node: selectStarFrom(node, 'hd_sorted', mods.map((m) => (m === order ? { ...m, orders: keyed } : m))), columns };
  }

  /** The relations of a FROM clause; subqueries and join conditions are rewritten on the way. */
  private from(ref: BigJsonValue | undefined, outer: Scope | undefined, ctes: Ctes): Relation[] {
    if (!isNode(ref)) return [];
    const names = (n: BigJsonValue | undefined): Set<string> => new Set(typeof n === 'string' && n !== '' ? [n.toLowerCase()] : []);
    switch (ref.type) {
      case 'BASE_TABLE': {
        const table = String(ref.table_name).toLowerCase();
        const s = this.datasetOf(ref);
        const cte = String(ref.schema_name ?? '') === '' && ctes.has(table) ? ctes.get(table) : undefined;
        const columns = s ? renamed(datasetColumns(s), ref.column_name_alias) : renamed(cte, ref.column_name_alias);
        return [{ names: names(ref.alias || ref.table_name), ...(columns ? { columns } : {}) }];
      }
      case 'SUBQUERY': {
        const sub = isNode(ref.subquery) && isNode(ref.subquery.node) ? ref.subquery : undefined;
        if (!sub) return [{ names: names(ref.alias) }];
        const r = this.query(sub.node as Node, outer, ctes);
        sub.node = r.node;
        const columns = renamed(r.columns, ref.column_name_alias);
        return [{ names: names(ref.alias), ...(columns ? { columns } : {}) }];
      }
      case 'JOIN': {
        const left = this.from(ref.left, outer, ctes);
        // A subquery on the right may read the left's columns (DuckDB makes it LATERAL when it does).
        const right = this.from(ref.right, new Scope(left, outer), ctes);
        const all = [...left, ...right];
        if (ref.ref_type === 'NATURAL' || (Array.isArray(ref.using_columns) && ref.using_columns.length > 0)) for (const r of all) merged.add(r);
        ref.condition = this.expr(ref.condition ?? null, new Scope(all, outer));
        return all;
      }
      case 'EMPTY':
        return [];
      default:
        return [{ names: names(ref.alias) }];
    }
  }

  /** The kind of an expression's value. */
  private kindOf(e: BigJsonValue | undefined, scope: Scope): OrderKind | undefined {
    return kindOfExpr(e, scope, (x, s) => this.subquery(x, s), (k, text) => k !== 'int256' && addressLiteral(k, text)?.text === text);
  }

  /** A subquery expression's query, rewritten once; its columns. */
  private subquery(e: Node, scope: Scope): readonly Column[] | undefined {
    if (this.subqueries.has(e)) return this.subqueries.get(e);
    const sub = isNode(e.subquery) && isNode(e.subquery.node) ? e.subquery : undefined;
    const r = sub ? this.query(sub.node as Node, scope, this.ctesOf.get(scope) ?? new Map()) : undefined;
    if (sub && r) sub.node = r.node;
    this.subqueries.set(e, r?.columns);
    return r?.columns;
  }

  /** Rewrites every comparison, ORDER BY and min / max inside an expression. */
  private expr(e: BigJsonValue, scope: Scope): BigJsonValue {
    if (Array.isArray(e)) return e.map((x) => this.expr(x, scope));
    if (!isNode(e)) return e;
    const type = String(e.type);
    if (type === 'SUBQUERY') return this.subqueryExpr(e, scope);
    if (type === 'LAMBDA') {
      const lhs = e.lhs;
      const params = isNode(lhs) && lhs.type === 'COLUMN_REF' ? [lhs] : isNode(lhs) && Array.isArray(lhs.children) ? lhs.children : [];
      e.expr = this.expr(e.expr ?? null, scope.withLambdas(params.filter(isNode).flatMap((p) => (Array.isArray(p.column_names) ? p.column_names.map(String) : []))));
      return e;
    }
    if (EQUALITY.has(type) || ORDERING.has(type)) return this.compare(e, ['left', 'right'], scope, EQUALITY.has(type));
    if (type === 'COMPARE_BETWEEN') return this.compare(e, ['input', 'lower', 'upper'], scope, false);
    if ((type === 'COMPARE_IN' || type === 'COMPARE_NOT_IN') && Array.isArray(e.children)) return this.inList(e, scope);
    if (e.class === 'FUNCTION' || e.class === 'WINDOW') return this.call(e, scope);
    for (const [k, x] of Object.entries(e)) if (typeof x === 'object' && x !== null) e[k] = this.expr(x, scope);
    return e;
  }

  private compare(e: Node, keys: readonly string[], scope: Scope, equality: boolean): Node {
    const kinds = keys.map((k) => this.kindOf(e[k], scope));
    for (const k of keys) e[k] = this.expr(e[k] ?? null, scope);
    const kind = kinds.find((k) => k !== undefined);
    if (!kind || kinds.some((k) => k !== undefined && k !== kind)) return e;
    if (equality && kinds.every((k) => k === kind)) return e; // presented text is one per integer
    const out = comparedOperands(kind, keys.map((k) => e[k] ?? null), kinds, equality, this.params);
    if (out) keys.forEach((k, i) => (e[k] = out[i] ?? null));
    return e;
  }

  private inList(e: Node, scope: Scope): Node {
    const children = e.children as BigJsonValue[];
    const kinds = children.map((c) => this.kindOf(c, scope));
    e.children = children.map((c) => this.expr(c, scope));
    const kind = kinds[0];
    if (!kind || kinds.some((k) => k !== undefined && k !== kind)) return e;
    const out = comparedOperands(kind, e.children, kinds, true, this.params);
    if (out) e.children = out;
    return e;
  }

  /** A function or window call: its ORDER BY keys, and min / max of an address as arg_min / arg_max. */
  private call(e: Node, scope: Scope): Node {
    const name = String(e.function_name).toLowerCase();
    const children = Array.isArray(e.children) ? e.children : [];
    const kind = (name === 'min' || name === 'max') && children.length === 1 && String(e.schema ?? '') === '' ? this.kindOf(children[0], scope) : undefined;
    const ordersOf = (o: BigJsonValue | undefined): Node[] => (Array.isArray(o) ? o.filter(isNode) : isNode(o) && Array.isArray(o.orders) ? o.orders.filter(isNode) : []);
    const orderKeys = ['order_bys', 'orders', 'arg_orders'];
    for (const o of orderKeys.flatMap((k) => ordersOf(e[k]))) o.expression = this.orderKey(o.expression ?? null, scope);
    for (const [k, x] of Object.entries(e)) if (!orderKeys.includes(k) && typeof x === 'object' && x !== null) e[k] = this.expr(x, scope);
    if (ADDRESS(kind)) {
      const child = e.children as BigJsonValue[];
      e.function_name = name === 'min' ? 'arg_min' : 'arg_max';
      e.children = [child[0] ?? null, keyCall(kind, copyOf(child[0] ?? null))];
      e.distinct = false; // min(DISTINCT x) is min(x)
    }
    return e;
  }

  /** A subquery expression: its query rewritten; `x < ANY (SELECT y ...)` on addresses compares keys. */
  private subqueryExpr(e: Node, scope: Scope): Node {
    const childKind = this.kindOf(e.child ?? null, scope);
    const columns = this.subquery(e, scope);
    e.child = this.expr(e.child ?? null, scope);
    const node = isNode(e.subquery) && isNode(e.subquery.node) ? e.subquery.node : undefined;
    const items = node?.type === 'SELECT_NODE' && Array.isArray(node.select_list) ? node.select_list : [];
    if (e.subquery_type === 'ANY' && ORDERING.has(String(e.comparison_type)) && ADDRESS(childKind) && columns?.length === 1 && columns[0]?.kind === childKind && items.length === 1 && isNode(items[0]) && items[0].class !== 'STAR') {
      e.child = keyCall(childKind, e.child);
      items[0] = keyCall(childKind, items[0]);
    }
    return e;
  }
}

/** Relations of a NATURAL or USING join: a star over them is not expanded here (DuckDB merges columns). */
const merged = new WeakSet<Relation>();
