/**
 * Result column names as PostgreSQL derives them (FigureColname, parse_target.c), from DuckDB's
 * parse tree of the statement (`json_serialize_sql`) and its text, so every door answers `count`,
 * `sum`, `?column?` where DuckDB would say `count_star()`, `sum("level")`, `(a + 1)`.
 *
 * The rule, per item of the statement's select list (the leftmost branch of a set operation):
 * an alias wins; a column reference is named by its last part; a function call (aggregates and
 * window functions too) by the function's name (`count(*)` → `count`; SQL syntax DuckDB turns into
 * a function keeps PostgreSQL's name: `EXTRACT` → `extract`, `trim(x)` → `btrim`, `ARRAY[...]` →
 * `array`); a cast by what it casts, or, when that has no name, by the target type's PostgreSQL
 * name (`1::int` → `int4`, `true` → `bool`); CASE by its ELSE, else `case`; a scalar subquery by
 * its first column; `EXISTS` → `exists`; COALESCE, GREATEST, NULLIF... by their keyword; anything
 * else (operators, constants, parameters, comparisons) `?column?`. Unquoted identifiers fold to
 * lower case (PostgreSQL's folding), quoted ones stay as written. A star keeps the names DuckDB
 * gives it, except over a subquery, CTE or VALUES list, whose own names it then carries. Only the
 * names change: the statement itself runs as written, so an outer query still refers to an inner
 * unaliased column by DuckDB's name (docs/sql.md, "Result names, types and protocol details"). Names may repeat on the
 * PostgreSQL wire, as in PostgreSQL; in Arrow results a repeat is suffixed (PG_NAME_KEY).
 */
import * as arrow from 'apache-arrow';
import { parseBigJson, type BigJsonValue } from './bigJson';
import { isNode, type Node } from './pushdown';

/** One select-list item: its PostgreSQL name, or DuckDB's name(s) kept — `many`: a star whose width is unknown here. */
export type NameEntry = { readonly name: string } | { readonly keep: 'one' | 'many' };

/** The naming of one statement's result columns. */
export class ResultNaming {
  /** Keeps every DuckDB name (a tree this module does not understand). */
  static readonly KEEP = new ResultNaming([{ keep: 'many' }]);

  constructor(readonly entries: readonly NameEntry[]) {}

  /**
   * PostgreSQL's names for a result whose columns DuckDB named `duckdb`. Items before the first and
   * after the last star of unknown width are placed from each end; columns that cannot be placed
   * keep DuckDB's names; a result whose width contradicts the select list keeps all of them.
   */
  namesFor(duckdb: readonly string[]): string[] {
    const e = this.entries;
    const n = duckdb.length;
    const out = [...duckdb];
    const first = e.findIndex((x) => 'keep' in x && x.keep === 'many');
    const place = (x: NameEntry | undefined, i: number): void => {
      if (x && 'name' in x) out[i] = x.name;
    };
    if (first < 0) {
      if (e.length !== n) return out;
      e.forEach(place);
      return out;
    }
    let last = e.length - 1;
    while (!('keep' in e[last]! && (e[last] as { keep: string }).keep === 'many')) last--;
    const suffix = e.length - 1 - last;
    if (first + suffix > n) return out;
    for (let i = 0; i < first; i++) place(e[i], i);
    for (let j = 0; j < suffix; j++) place(e[last + 1 + j], n - suffix + j);
    return out;
  }
}

/** DuckDB type ids → PostgreSQL's type name as a bare cast is named (the type hd_sql presents it as). */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  BOOLEAN: 'bool', TINYINT: 'int2', SMALLINT: 'int2', INTEGER: 'int4', BIGINT: 'int8', UTINYINT: 'int2', USMALLINT: 'int4', UINTEGER: 'int8',
  UBIGINT: 'numeric', HUGEINT: 'numeric', UHUGEINT: 'numeric', DECIMAL: 'numeric', FLOAT: 'float4', DOUBLE: 'float8', VARCHAR: 'text',
  BLOB: 'bytea', DATE: 'date', TIME: 'time', 'TIME WITH TIME ZONE': 'timetz', TIMESTAMP: 'timestamp', TIMESTAMP_S: 'timestamp', TIMESTAMP_MS: 'timestamp',
  TIMESTAMP_NS: 'timestamp', 'TIMESTAMP WITH TIME ZONE': 'timestamptz', INTERVAL: 'interval', UUID: 'uuid', BIT: 'bit',
};

/** Functions DuckDB's parser makes of SQL syntax (schema `main`), by the name PostgreSQL gives that syntax. */
const SYNTAX_NAMES: Readonly<Record<string, string>> = { date_part: 'extract', trim: 'btrim', list_value: 'array', struct_pack: 'row' };

/** Operators DuckDB's tree keeps as operators but PostgreSQL names by their keyword. */
const OPERATOR_NAMES: Readonly<Record<string, string>> = { OPERATOR_COALESCE: 'coalesce', GROUPING_FUNCTION: 'grouping', ARRAY_CONSTRUCTOR: 'array' };

const UNNAMED = '?column?';

/** A name and how strongly it holds (PostgreSQL's strength: 0 none, 1 a type name or `case`, 2 a real name). */
type Figured = readonly [string, 0 | 1 | 2];

/** Names every result column of `serialized` (json_serialize_sql's output for `sql`); KEEP when it cannot. */
export function resultNamingOf(serialized: string, sql: string): ResultNaming {
  try {
    const doc = parseBigJson(serialized);
    if (!isNode(doc) || doc.error === true || !Array.isArray(doc.statements) || doc.statements.length !== 1) return ResultNaming.KEEP;
    const st = doc.statements[0];
    if (!isNode(st) || !isNode(st.node)) return ResultNaming.KEEP;
    return new ResultNaming(new Namer(sql).ofQuery(st.node, new Map(), 0));
  } catch {
    return ResultNaming.KEEP;
  }
}

/**
 * Field metadata holding a column's PostgreSQL name where its Arrow name differs: Arrow's JS
 * implementation merges fields of equal names, so the second `count` of a result is the Arrow field
 * `count_1` and the PostgreSQL wire door names it `count` again from here.
 */
export const PG_NAME_KEY = 'hd.pg_name';

/** `table` with its columns renamed to `names` (same data, types and metadata; repeated names made unique, see PG_NAME_KEY). */
export function withNames(table: arrow.Table, names: readonly string[]): arrow.Table {
  const schema = schemaWithNames(table.schema, names);
  if (schema === table.schema) return table;
  const type = new arrow.Struct(schema.fields);
  return new arrow.Table(schema, table.batches.map((b) => new arrow.RecordBatch(schema, arrow.makeData({ type, length: b.numRows, nullCount: 0, children: b.data.children }))));
}

/** `schema` with its fields renamed to `names` (the same object when nothing changes; repeated names made unique, see PG_NAME_KEY). */
export function schemaWithNames(schema: arrow.Schema, names: readonly string[]): arrow.Schema {
  if (names.length !== schema.fields.length) return schema;
  // A statement answered again with the same schema object (a plan's cached one) is renamed once.
  const key = names.join('\u0000');
  const known = renamed.get(schema);
  if (known?.key === key) return known.schema;
  const out = renamedSchema(schema, names);
  renamed.set(schema, { key, schema: out });
  return out;
}

/** The last renaming of each schema object (sql/aggregateOuterEval.ts answers with the plan's). */
const renamed = new WeakMap<arrow.Schema, { readonly key: string; readonly schema: arrow.Schema }>();

function renamedSchema(schema: arrow.Schema, names: readonly string[]): arrow.Schema {
  const unique = uniqueNames(names);
  if (schema.fields.every((f, i) => f.name === unique[i] && !f.metadata.has(PG_NAME_KEY))) return schema;
  return new arrow.Schema(
    schema.fields.map((f, i) => {
      const metadata = new Map(f.metadata);
      metadata.delete(PG_NAME_KEY);
      if (unique[i] !== names[i]) metadata.set(PG_NAME_KEY, names[i]!);
      return new arrow.Field(unique[i]!, f.type, f.nullable, metadata);
    }),
    schema.metadata,
  );
}

/** The PostgreSQL name of a result field: its own name, or the one PG_NAME_KEY keeps. */
export function pgNameOf(field: arrow.Field): string {
  return field.metadata.get(PG_NAME_KEY) ?? field.name;
}

/** `names` with each repeat suffixed `_1`, `_2`... (skipping names the list already holds), as DuckDB makes a subquery's names unique. */
function uniqueNames(names: readonly string[]): string[] {
  const taken = new Set(names);
  const seen = new Set<string>();
  return names.map((n) => {
    if (!seen.has(n)) {
      seen.add(n);
      return n;
    }
    let k = 1;
    while (taken.has(`${n}_${k}`)) k++;
    const u = `${n}_${k}`;
    taken.add(u);
    return u;
  });
}

/** CTE names in scope → the entries of their queries. */
type Ctes = ReadonlyMap<string, () => readonly NameEntry[]>;

/** Deep enough for any statement a client writes; past it a star keeps DuckDB's names. */
const MAX_DEPTH = 32;

class Namer {
  /** The statement's UTF-8 bytes: query_location is a byte offset. */
  private readonly text: Buffer;

  constructor(private readonly sql: string) {
    this.text = Buffer.from(sql, 'utf8');
  }

  /** The entries of a query node (SELECT, set operation, recursive CTE). */
  ofQuery(node: Node, outer: Ctes, depth: number): readonly NameEntry[] {
    if (depth > MAX_DEPTH) return [{ keep: 'many' }];
    const ctes = this.scope(node, outer, depth);
    if (node.type === 'SET_OPERATION_NODE') return node.setop_type === 'UNION_BY_NAME' || !isNode(node.left) ? [{ keep: 'many' }] : this.ofQuery(node.left, ctes, depth + 1);
    if (node.type === 'RECURSIVE_CTE_NODE') return isNode(node.left) ? this.ofQuery(node.left, ctes, depth + 1) : [{ keep: 'many' }];
    if (node.type !== 'SELECT_NODE' || !Array.isArray(node.select_list)) return [{ keep: 'many' }];
    const out: NameEntry[] = [];
    for (const item of node.select_list) {
      if (!isNode(item)) return [{ keep: 'many' }];
      if (typeof item.alias === 'string' && item.alias !== '') out.push({ name: this.fold(item.alias) });
      else if (item.class === 'STAR') out.push(...this.ofStar(item, node.from_table, ctes, depth));
      else if (item.class === 'POSITIONAL_REFERENCE') out.push({ keep: 'one' });
      else out.push({ name: this.figure(item, ctes, depth)[0] });
    }
    return out;
  }

  /** The CTEs `node` defines, added to those of the enclosing queries (each named lazily, once). */
  private scope(node: Node, outer: Ctes, depth: number): Ctes {
    const map = isNode(node.cte_map) && Array.isArray(node.cte_map.map) ? node.cte_map.map : [];
    if (map.length === 0) return outer;
    const ctes = new Map(outer);
    for (const e of map) {
      if (!isNode(e) || typeof e.key !== 'string' || !isNode(e.value) || !isNode(e.value.query) || !isNode(e.value.query.node)) continue;
      const query = e.value.query.node;
      const aliases = Array.isArray(e.value.aliases) ? e.value.aliases.filter((a): a is string => typeof a === 'string') : [];
      let named: readonly NameEntry[] | undefined;
      // A CTE sees the ones before it (and, recursive, itself: the depth bound stops that).
      const visible = new Map(ctes);
      ctes.set(e.key.toLowerCase(), () => (named ??= withAliases(this.ofQuery(query, visible, depth + 1), aliases.map((a) => this.fold(a)))));
      visible.set(e.key.toLowerCase(), ctes.get(e.key.toLowerCase())!);
    }
    return ctes;
  }

  /** A star: the names of what it expands, where known. */
  private ofStar(star: Node, from: BigJsonValue | undefined, ctes: Ctes, depth: number): readonly NameEntry[] {
    const plain = star.columns !== true && star.expr == null && ['exclude_list', 'replace_list', 'qualified_exclude_list', 'rename_list'].every((k) => !Array.isArray(star[k]) || (star[k] as unknown[]).length === 0);
    if (!plain || !isNode(from)) return [{ keep: 'many' }];
    const relation = typeof star.relation_name === 'string' ? star.relation_name.toLowerCase() : '';
    return this.ofTable(from, relation, ctes, depth);
  }

  /** The columns a table reference contributes to a star (`relation`: only the reference so named). */
  private ofTable(ref: Node, relation: string, ctes: Ctes, depth: number): readonly NameEntry[] {
    if (ref.type === 'JOIN') {
      const sides = [ref.left, ref.right].filter(isNode);
      if (relation !== '') {
        const named = sides.find((s) => refNames(s).has(relation) || (s.type === 'JOIN' && joinHolds(s, relation)));
        return named ? this.ofTable(named, relation, ctes, depth) : [{ keep: 'many' }];
      }
      // USING and NATURAL merge the join columns: DuckDB's names stand.
      if (ref.ref_type === 'NATURAL' || (Array.isArray(ref.using_columns) && ref.using_columns.length > 0) || sides.length !== 2) return [{ keep: 'many' }];
      return sides.flatMap((s) => this.ofTable(s, '', ctes, depth));
    }
    if (relation !== '' && !refNames(ref).has(relation)) return [{ keep: 'many' }];
    const aliases = (Array.isArray(ref.column_name_alias) ? ref.column_name_alias : []).filter((a): a is string => typeof a === 'string').map((a) => this.fold(a));
    if (ref.type === 'SUBQUERY' && isNode(ref.subquery) && isNode(ref.subquery.node)) return withAliases(this.ofQuery(ref.subquery.node, ctes, depth + 1), aliases);
    if (ref.type === 'EXPRESSION_LIST' && Array.isArray(ref.values) && Array.isArray(ref.values[0])) {
      const given = Array.isArray(ref.expected_names) ? ref.expected_names.filter((a): a is string => typeof a === 'string') : [];
      return withAliases(ref.values[0].map((_, i) => ({ name: `column${i + 1}` })), given.length > 0 ? given : aliases);
    }
    if (ref.type === 'BASE_TABLE' && (ref.schema_name ?? '') === '' && typeof ref.table_name === 'string') {
      const cte = ctes.get(ref.table_name.toLowerCase());
      if (cte) return withAliases(cte(), aliases);
    }
    return [{ keep: 'many' }];
  }

  /** PostgreSQL's name of an expression (FigureColnameInternal). */
  private figure(e: BigJsonValue | undefined, ctes: Ctes, depth: number): Figured {
    if (!isNode(e)) return [UNNAMED, 0];
    switch (e.class) {
      case 'COLUMN_REF': {
        const parts = Array.isArray(e.column_names) ? e.column_names : [];
        const last = parts[parts.length - 1];
        if (typeof last !== 'string') return [UNNAMED, 0];
        const written = this.chainAt(e.query_location);
        const quoted = written.length === parts.length && written.every((w, i) => w.text.toLowerCase() === String(parts[i]).toLowerCase()) ? written[written.length - 1]!.quoted : undefined;
        return [quoted === true ? last : quoted === false ? lower(last) : this.fold(last), 2];
      }
      case 'FUNCTION':
      case 'WINDOW':
        return this.ofFunction(e);
      case 'CAST': {
        const inner = this.figure(e.child, ctes, depth);
        return inner[1] > 1 ? inner : [typeName(e.cast_type, (s) => this.fold(s)), 1];
      }
      case 'COLLATE':
        return this.figure(e.child, ctes, depth);
      case 'CASE': {
        const inner = this.figure(e.else_expr, ctes, depth);
        return inner[1] > 1 ? inner : ['case', 1];
      }
      case 'OPERATOR': {
        const kids = Array.isArray(e.children) ? e.children : [];
        if (typeof e.type === 'string' && OPERATOR_NAMES[e.type]) return [OPERATOR_NAMES[e.type]!, 2];
        // A subscript names as what it subscripts; a field access by the field.
        if (e.type === 'ARRAY_EXTRACT' || e.type === 'ARRAY_SLICE') return this.figure(kids[0], ctes, depth);
        if (e.type === 'STRUCT_EXTRACT' && isNode(kids[1]) && isNode(kids[1].value) && typeof kids[1].value.value === 'string') return [kids[1].value.value, 2];
        return [UNNAMED, 0];
      }
      case 'SUBQUERY': {
        if (e.subquery_type === 'EXISTS') return ['exists', 2];
        if (e.subquery_type !== 'SCALAR' || !isNode(e.subquery) || !isNode(e.subquery.node)) return [UNNAMED, 0];
        const first = this.ofQuery(e.subquery.node, ctes, depth + 1)[0];
        return [first && 'name' in first ? first.name : UNNAMED, 2];
      }
      default:
        return [UNNAMED, 0];
    }
  }

  private ofFunction(e: Node): Figured {
    const fn = typeof e.function_name === 'string' ? e.function_name.toLowerCase() : '';
    if (e.is_operator === true || fn === '') return [UNNAMED, 0];
    const base = fn === 'count_star' ? 'count' : fn;
    // SQL syntax DuckDB's parser made a function of (schema `main`): PostgreSQL's name for that syntax.
    if (e.schema === 'main') return [SYNTAX_NAMES[fn] ?? fn, 2];
    // The name as written (a quoted name stays as it is).
    const written = this.chainAt(e.query_location).pop();
    if (written && written.text.toLowerCase() === base) return [written.quoted ? written.text : base, 2];
    // Written otherwise: an operator DuckDB's parser made a function of (`~`, SIMILAR TO), unnamed as in PostgreSQL.
    return typeof e.query_location === 'number' && e.query_location < this.text.length ? [UNNAMED, 0] : [base, 2];
  }

  /** The dotted identifier chain written at byte offset `at` (`t."Col"` → t, Col). */
  private chainAt(at: BigJsonValue | undefined): { text: string; quoted: boolean }[] {
    const b = this.text;
    if (typeof at !== 'number' || at < 0 || at >= b.length) return [];
    const out: { text: string; quoted: boolean }[] = [];
    let i = at;
    for (;;) {
      if (b[i] === 0x22) {
        let s = '';
        let j = i + 1;
        for (;;) {
          const end = b.indexOf(0x22, j);
          if (end < 0) return out;
          s += b.toString('utf8', j, end);
          if (b[end + 1] === 0x22) {
            s += '"';
            j = end + 2;
          } else {
            i = end + 1;
            break;
          }
        }
        out.push({ text: s, quoted: true });
      } else {
        let j = i;
        while (j < b.length && (isIdentByte(b[j]!) || (j > i && b[j]! >= 0x30 && b[j]! <= 0x39) || (j > i && b[j] === 0x24))) j++;
        if (j === i) return out;
        out.push({ text: b.toString('utf8', i, j), quoted: false });
        i = j;
      }
      let k = i;
      while (b[k] === 0x20 || b[k] === 0x0a || b[k] === 0x09 || b[k] === 0x0d) k++;
      if (b[k] !== 0x2e) return out;
      k++;
      while (b[k] === 0x20 || b[k] === 0x0a || b[k] === 0x09 || b[k] === 0x0d) k++;
      i = k;
    }
  }

  /**
   * PostgreSQL folds unquoted identifiers to lower case; DuckDB keeps them as written. Where the
   * tree does not say how a name was written (aliases), it stays as is only if the statement holds
   * it double-quoted.
   */
  private fold(name: string): string {
    if (!/[A-Z]/.test(name)) return name;
    return this.sql.includes(`"${name.replace(/"/g, '""')}"`) ? name : lower(name);
  }
}

/** Letters, underscore and any byte of a multi-byte UTF-8 character start (and continue) an identifier. */
function isIdentByte(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c >= 0x80;
}

/** ASCII lower case (PostgreSQL's identifier folding leaves other letters alone). */
function lower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** The names a table reference answers to in a qualified star (`t.*`): its alias, else its name. */
function refNames(ref: Node): Set<string> {
  const out = new Set<string>();
  if (typeof ref.alias === 'string' && ref.alias !== '') out.add(ref.alias.toLowerCase());
  else if (typeof ref.table_name === 'string') out.add(ref.table_name.toLowerCase());
  return out;
}

function joinHolds(join: Node, relation: string): boolean {
  return [join.left, join.right].some((s) => isNode(s) && (refNames(s).has(relation) || (s.type === 'JOIN' && joinHolds(s, relation))));
}

/** Column aliases (`AS t(a, b)`) replace the first names. */
function withAliases(entries: readonly NameEntry[], aliases: readonly string[]): readonly NameEntry[] {
  if (aliases.length === 0) return entries;
  // Past a star of unknown width the aliases cannot be placed: DuckDB's names stand for the rest.
  const out: NameEntry[] = [];
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if ('keep' in e && e.keep === 'many') return [...out, ...entries.slice(i)];
    out.push(i < aliases.length ? { name: aliases[i]! } : e);
  }
  return out;
}

/** The PostgreSQL name of a DuckDB type (a list: its element's, as PostgreSQL names `::int[]` `int4`). */
function typeName(t: BigJsonValue | undefined, fold: (s: string) => string): string {
  if (!isNode(t) || typeof t.id !== 'string') return UNNAMED;
  const info = isNode(t.type_info) ? t.type_info : undefined;
  if ((t.id === 'LIST' || t.id === 'ARRAY') && info) return typeName(info.child_type, fold);
  if ((t.id === 'UNBOUND' || t.id === 'USER') && info && typeof info.name === 'string') return fold(info.name);
  return TYPE_NAMES[t.id] ?? t.id.toLowerCase();
}
