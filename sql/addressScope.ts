/**
 * Which expressions of a statement are addresses (or 256-bit integers), from DuckDB's parse tree:
 * the relations each SELECT reads, the columns each exposes, and name resolution as DuckDB binds
 * names (FROM columns first, then select-list aliases, then the enclosing query; a lambda's
 * parameters shadow columns). It serves sql/addressRewrite.ts, which only changes what it can
 * place with certainty: a name this scope cannot resolve is "not an address" and keeps DuckDB's
 * own semantics.
 */
import type { FieldInfo, Schema } from '../engine-rs/schema';
import type { BigJsonValue } from './bigJson';
import type { AddressKind } from './inetAddress';
import { isNode, type Node } from './pushdown';

/** How a column compares beyond DuckDB's own rules: an address (on its integer) or a 256-bit integer. */
export type OrderKind = AddressKind | 'int256';

/** One column a relation or query exposes: its lower-cased name and, where it applies, its kind. */
export interface Column {
  readonly name: string;
  readonly kind?: OrderKind;
}

/** A relation of a FROM clause: the names it is qualified by and its columns (undefined: not known here). */
export interface Relation {
  readonly names: ReadonlySet<string>;
  readonly columns?: readonly Column[];
}

/** What resolving a name in one scope found: a column (of `kind`, if any), or nothing here. */
type Binding = { readonly kind?: OrderKind } | undefined;

/** The kind of a dataset field, or undefined for every field that compares as DuckDB compares it. */
export function kindOfField(f: FieldInfo): OrderKind | undefined {
  if (f.array) return undefined;
  if (f.type === 'ipv4' || f.type === 'ipv6') return f.type;
  if (f.type === 'uint256' || f.type === 'int256') return 'int256';
  return undefined;
}

/** The columns of a dataset's table, in schema order. */
export function datasetColumns(schema: Schema): Column[] {
  return schema.fields.map((f) => {
    const kind = kindOfField(f);
    return { name: f.name.toLowerCase(), ...(kind ? { kind } : {}) };
  });
}

/** `columns` renamed by position (`t(a, b)`, a CTE's column list); undefined when unknown. */
export function renamed(columns: readonly Column[] | undefined, names: BigJsonValue | undefined): Column[] | undefined {
  if (!columns) return undefined;
  const list = Array.isArray(names) ? names.map((n) => String(n).toLowerCase()) : [];
  if (list.length > columns.length) return undefined;
  return columns.map((c, i) => (i < list.length ? { ...c, name: list[i] as string } : c));
}

/** Names resolved the way DuckDB binds them inside one SELECT (and, failing that, its enclosing ones). */
export class Scope {
  /** Select-list outputs (their aliases and column names), bound after the FROM columns. */
  aliases: readonly Column[] = [];

  constructor(
    readonly relations: readonly Relation[],
    readonly parent?: Scope,
    private readonly lambdas: ReadonlySet<string> = new Set(),
  ) {}

  /** This scope with lambda parameters that shadow columns. */
  withLambdas(names: readonly string[]): Scope {
    const s = new Scope(this.relations, this.parent, new Set([...this.lambdas, ...names.map((n) => n.toLowerCase())]));
    s.aliases = this.aliases;
    return s;
  }

  /** The kind of the column a COLUMN_REF's `parts` name, or undefined (none, unknown, or several kinds). */
  kindOf(parts: readonly string[]): OrderKind | undefined {
    const p = parts.map((x) => x.toLowerCase());
    for (let s: Scope | undefined = this; s; s = s.parent) {
      const b = s.bind(p);
      if (b) return b.kind;
    }
    return undefined;
  }

  private bind(p: readonly string[]): Binding {
    if (p.length === 1) {
      const x = p[0] as string;
      if (this.lambdas.has(x)) return {};
      const kinds = this.relations.flatMap((r) => r.columns?.filter((c) => c.name === x).map((c) => c.kind) ?? []);
      if (kinds.length > 0) return kinds.every((k) => k === kinds[0]) && kinds[0] ? { kind: kinds[0] } : {};
      if (this.relations.some((r) => !r.columns)) return {}; // it may be a column of a relation not known here
      const alias = this.aliases.find((c) => c.name === x);
      return alias ? (alias.kind ? { kind: alias.kind } : {}) : undefined;
    }
    const [q, x] = p.slice(-2) as [string, string];
    const rel = this.relations.find((r) => r.names.has(q));
    if (rel) {
      const k = rel.columns?.find((c) => c.name === x)?.kind;
      return k ? { kind: k } : {};
    }
    // A struct's field (`col.field`), or a name of a relation not known here.
    if (this.relations.some((r) => !r.columns || r.columns.some((c) => c.name === q))) return {};
    return undefined;
  }
}

/** Aggregates and window functions whose value is one of their first argument's values. */
const VALUE_OF_FIRST = new Set(['min', 'max', 'first', 'last', 'any_value', 'arbitrary', 'arg_min', 'arg_max', 'min_by', 'max_by', 'argmin', 'argmax', 'mode', 'first_value', 'last_value', 'nth_value', 'lead', 'lag']);

/** What resolving `expr` needs besides its scope: the columns of a scalar subquery. */
export type SubqueryColumns = (subqueryExpr: Node, scope: Scope) => readonly Column[] | undefined;

/**
 * The kind of an expression's value: a column of that kind, an aggregate or window function taking
 * one of its values, or a COALESCE / CASE / NULLIF whose every branch is one (or NULL, or a
 * literal that is already the text such a column presents: `isPresented`). A CAST or COLLATE makes
 * the value plain text. Undefined for anything else.
 */
export function kindOfExpr(e: BigJsonValue | undefined, scope: Scope, sub: SubqueryColumns, isPresented: (k: OrderKind, text: string) => boolean): OrderKind | undefined {
  if (!isNode(e)) return undefined;
  const again = (x: BigJsonValue | undefined): OrderKind | undefined => kindOfExpr(x, scope, sub, isPresented);
  const branches = (xs: readonly BigJsonValue[]): OrderKind | undefined => {
    const kinds = xs.map(again).filter((k): k is OrderKind => k !== undefined);
    const k = kinds[0];
    if (!k || kinds.some((x) => x !== k)) return undefined;
    const ok = xs.every((x) => again(x) === k || isNullConstant(x) || (k !== 'int256' && isNode(x) && x.type === 'VALUE_CONSTANT' && isNode(x.value) && typeof x.value.value === 'string' && isPresented(k, x.value.value)));
    return ok ? k : undefined;
  };
  switch (e.type) {
    case 'COLUMN_REF':
      return Array.isArray(e.column_names) ? scope.kindOf(e.column_names.map(String)) : undefined;
    case 'OPERATOR_COALESCE':
      return Array.isArray(e.children) ? branches(e.children) : undefined;
    case 'CASE_EXPR': {
      const checks = Array.isArray(e.case_checks) ? e.case_checks.filter(isNode).map((c) => c.then_expr ?? null) : [];
      return branches([...checks, e.else_expr ?? null]);
    }
    case 'SUBQUERY':
      return e.subquery_type === 'SCALAR' ? sub(e, scope)?.[0]?.kind : undefined;
    default:
      break;
  }
  if ((e.class === 'FUNCTION' || e.class === 'WINDOW') && Array.isArray(e.children) && e.children.length > 0) {
    const name = String(e.function_name).toLowerCase();
    if (String(e.schema ?? '') !== '' && String(e.schema) !== 'main') return undefined;
    if (VALUE_OF_FIRST.has(name)) return again(e.children[0]);
    if (name === 'nullif') return again(e.children[0]);
    if (name === 'ifnull' || name === 'coalesce') return branches(e.children);
  }
  return undefined;
}

/** True for a NULL constant. */
export function isNullConstant(x: BigJsonValue | undefined): boolean {
  return isNode(x) && x.type === 'VALUE_CONSTANT' && isNode(x.value) && x.value.is_null === true;
}
