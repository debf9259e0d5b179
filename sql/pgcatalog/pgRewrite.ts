/**
 * PostgreSQL's catalog dialect on DuckDB's parse tree (`json_serialize_sql`), rewritten before the
 * statement guard judges it and before it runs:
 * - calls of the functions clients use on the catalog (`pg_get_userbyid`, `format_type`,
 *   `pg_catalog.obj_description`...) go to our macros (sql/pgcatalog/pgFunctions.ts); a
 *   `pg_catalog.` or `information_schema.` qualifier on any other function is dropped;
 * - `version()`, `current_database()`, `current_schema()` and the `current_setting` / `set_config`
 *   of the client settings (sql/pgcatalog/clientSettings.ts) become constants, and `SELECT ... FROM
 *   pg_settings WHERE name = '<client setting>'` reads them — nothing else of these is allowed (the
 *   guard still refuses `current_setting('temp_directory')` and any other pg_settings read);
 * - `::regclass`, `::regtype`, `::regnamespace`, `::regrole` of a literal become the OID it names
 *   (42P01 when there is no such relation); of anything else, the OID itself, or its name where
 *   the value is shown (a select item, or cast on to text); `::name` and the other catalog types
 *   become DuckDB types;
 * - `COLLATE pg_catalog.default` / `"C"` / `POSIX` are dropped (DuckDB compares bytes, as C does);
 * - `~*` / `!~*` match case-insensitively.
 * Relations are renamed by the planner (`catalogRelationRef`); in a statement that reads the
 * catalog, `~` then matches anywhere in the text, as in PostgreSQL (`pgRegexSemantics`).
 */
import type { BigJsonValue } from '../bigJson';
import { isNode, type Node } from '../pushdown';
import { SqlError } from '../sqlError';
import { DATABASE, NAMESPACES, OWNER, type NamespaceName } from './oids';
import { macroOf } from './pgFunctions';
import type { PgModel } from './pgModel';
import { pgTypeByName } from './pgTypes';
import { clientSetting } from './clientSettings';
import { catalogRelation, PG_SETTINGS, sessionTableOf, type CatalogRelation } from './relations';

/** What `version()` answers: PostgreSQL's form, which drivers parse for the version number. */
export const PG_VERSION_TEXT = 'PostgreSQL 16.0 (hd_sql), served by hd_sql (DuckDB inside)';

/** What a statement's expressions needed: catalog relations their macros read, and whether anything changed. */
export interface ExpressionRewrite {
  readonly reads: Set<CatalogRelation>;
  /** Table references this pass already renamed to session tables (the planner leaves them). */
  readonly renamed: Set<Node>;
  changed: boolean;
}

const REG_TYPES = new Set(['regclass', 'regtype', 'regproc', 'regprocedure', 'regnamespace', 'regrole', 'regoper', 'regoperator', 'regconfig', 'regdictionary', 'regcollation']);
/** Catalog column types DuckDB does not know, as the DuckDB type they are read as. */
const TYPE_FOR: Readonly<Record<string, BigJsonValue>> = {
  name: { id: 'VARCHAR', type_info: null }, bpchar: { id: 'VARCHAR', type_info: null }, aclitem: { id: 'VARCHAR', type_info: null },
  pg_node_tree: { id: 'VARCHAR', type_info: null }, sql_identifier: { id: 'VARCHAR', type_info: null }, character_data: { id: 'VARCHAR', type_info: null },
  yes_or_no: { id: 'VARCHAR', type_info: null }, cardinal_number: { id: 'INTEGER', type_info: null }, xid: { id: 'BIGINT', type_info: null },
  int2vector: listOf('SMALLINT'), oidvector: listOf('BIGINT'),
};
const DROPPED_COLLATIONS = new Set(['default', 'pg_catalog.default', 'c', 'pg_catalog.c', '"c"', 'posix', 'pg_catalog.posix', 'ucs_basic']);

function listOf(id: string): BigJsonValue {
  return { id: 'LIST', type_info: { type: 'LIST_TYPE_INFO', alias: '', extension_info: null, child_type: { id, type_info: null } } };
}

const constant = (v: string | number | boolean, like: Node): Node => ({
  class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: like.alias ?? '', query_location: like.query_location ?? 0,
  value: { type: { id: typeof v === 'string' ? 'VARCHAR' : typeof v === 'boolean' ? 'BOOLEAN' : 'BIGINT', type_info: null }, is_null: false, value: v },
});
/** An OID literal, typed BIGINT as the catalog's oid columns are (a bare literal would read INTEGER). */
const oidConstant = (oid: number, like: Node): Node => cast({ ...constant(oid, like), alias: '' }, { id: 'BIGINT', type_info: null }, like);
const call = (name: string, children: BigJsonValue[], like: Node): Node => ({
  class: 'FUNCTION', type: 'FUNCTION', alias: like.alias ?? '', query_location: like.query_location ?? 0, function_name: name, schema: '', children,
  filter: null, order_bys: { type: 'ORDER_MODIFIER', orders: [] }, distinct: false, is_operator: false, export_state: false, catalog: '',
});
const cast = (child: BigJsonValue, type: BigJsonValue, like: Node): Node => ({ class: 'CAST', type: 'OPERATOR_CAST', alias: like.alias ?? '', query_location: like.query_location ?? 0, child, cast_type: type, try_cast: false });

/** The text of a VARCHAR constant node, if it is one. */
function textConstant(v: BigJsonValue | undefined): string | undefined {
  if (!isNode(v) || v.class !== 'CONSTANT' || !isNode(v.value) || v.value.is_null === true) return undefined;
  const t = v.value.type;
  return isNode(t) && t.id === 'VARCHAR' && typeof v.value.value === 'string' ? v.value.value : undefined;
}
const castName = (n: Node): string | undefined => {
  const t = n.cast_type;
  if (!isNode(t) || t.id !== 'UNBOUND' || !isNode(t.type_info)) return undefined;
  return String(t.type_info.name ?? '').toLowerCase();
};
const isVarcharCast = (n: Node): boolean => n.class === 'CAST' && isNode(n.cast_type) && n.cast_type.id === 'VARCHAR';

/**
 * Rewrites the expressions of statement `root` in place (see the file comment) against `model`.
 * @throws SqlError unknown_dataset for `'x'::regclass` naming no relation; query_failed for a type,
 *   schema or role that does not exist.
 */
export function rewritePgExpressions(root: Node, model: PgModel): ExpressionRewrite {
  const out: ExpressionRewrite = { reads: new Set(), renamed: new Set(), changed: false };
  const read = (name: string): void => void out.reads.add(catalogRelation('pg_catalog', name) as CatalogRelation);
  const walk = (v: BigJsonValue, shown: boolean, emptyFrom: boolean): BigJsonValue => {
    if (Array.isArray(v)) return v.map((x) => walk(x, false, emptyFrom));
    if (!isNode(v)) return v;
    const replaced = rewriteNode(v, shown, emptyFrom);
    if (replaced !== v) {
      out.changed = true;
      return replaced;
    }
    const noFrom = v.type === 'SELECT_NODE' ? isNode(v.from_table) && v.from_table.type === 'EMPTY' : emptyFrom;
    for (const [k, x] of Object.entries(v)) {
      if (v.type === 'SELECT_NODE' && k === 'select_list' && Array.isArray(x)) v[k] = x.map((item) => walk(item, true, noFrom));
      else v[k] = walk(x, false, noFrom);
    }
    return v;
  };

  /** A reg* cast of `child`, `shown` when its value is displayed (the name, as PostgreSQL prints it). */
  const regCast = (n: Node, type: string, child: BigJsonValue, shown: boolean): Node => {
    const text = textConstant(child);
    if (text !== undefined) {
      switch (type) {
        case 'regclass': {
          const r = model.relationByName(text);
          if (!r) throw new SqlError('unknown_dataset', `relation "${text}" does not exist`);
          return oidConstant(r.oid, n);
        }
        case 'regtype': {
          const t = pgTypeByName(text);
          if (!t) throw new SqlError('query_failed', `type "${text}" does not exist`);
          return oidConstant(t.oid, n);
        }
        case 'regnamespace': {
          const oid = NAMESPACES[text.replace(/^"(.*)"$/, '$1') as NamespaceName];
          if (oid === undefined) throw new SqlError('query_failed', `schema "${text}" does not exist`);
          return oidConstant(oid, n);
        }
        case 'regrole':
          if (text !== OWNER.name) throw new SqlError('query_failed', `role "${text}" does not exist`);
          return oidConstant(OWNER.oid, n);
        default:
          return constant(text.replace(/^pg_catalog\./, ''), n); // regproc and the like: the catalog holds function names as text
      }
    }
    const child2 = walk(child, false, false);
    if (type === 'regproc' || type === 'regprocedure' || type === 'regoper' || type === 'regoperator' || type === 'regconfig' || type === 'regdictionary' || type === 'regcollation') return cast(child2, { id: 'VARCHAR', type_info: null }, n);
    if (!shown) return cast(child2, { id: 'BIGINT', type_info: null }, n);
    switch (type) {
      case 'regclass':
        read('pg_class');
        return call('hdpg_regclass_out', [child2], n);
      case 'regtype':
        return call('hdpg_format_type', [child2, { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', query_location: 0, value: { type: { id: 'INTEGER', type_info: null }, is_null: true } }], n);
      case 'regnamespace':
        return call('hdpg_regnamespace_out', [child2], n);
      default:
        return call('hdpg_pg_get_userbyid', [child2], n);
    }
  };

  const rewriteNode = (n: Node, shown: boolean, emptyFrom: boolean): BigJsonValue => {
    if (n.type === 'SELECT_NODE' && isNode(n.from_table) && settingLookup(n)) {
      // `SELECT setting FROM pg_settings WHERE name = '<client setting>'` (pgjdbc's max_index_keys).
      Object.assign(n.from_table, { schema_name: '', catalog_name: '', table_name: sessionTableOf(PG_SETTINGS), alias: n.from_table.alias || 'pg_settings' });
      out.reads.add(PG_SETTINGS);
      out.renamed.add(n.from_table);
      out.changed = true;
      return n;
    }
    if (n.class === 'CAST') {
      const name = castName(n);
      if (name !== undefined && REG_TYPES.has(name)) return regCast(n, name, n.child as BigJsonValue, shown);
      if (name !== undefined && TYPE_FOR[name] !== undefined) return { ...n, child: walk(n.child as BigJsonValue, false, emptyFrom), cast_type: TYPE_FOR[name] as BigJsonValue };
      // `x::regclass::text`: the name, as PostgreSQL prints it.
      if (isVarcharCast(n) && isNode(n.child) && n.child.class === 'CAST') {
        const inner = castName(n.child);
        if (inner !== undefined && REG_TYPES.has(inner)) return { ...n, child: regCast(n.child, inner, n.child.child as BigJsonValue, true) };
      }
      return n;
    }
    if (n.class === 'COLLATE' && DROPPED_COLLATIONS.has(String(n.collation).toLowerCase())) {
      const child = walk(n.child as BigJsonValue, shown, emptyFrom);
      return isNode(child) && n.alias ? { ...child, alias: n.alias } : child;
    }
    if (n.class === 'COLUMN_REF' && emptyFrom && Array.isArray(n.column_names) && n.column_names.length === 1) {
      // `SELECT current_schema` with no FROM: DuckDB would answer its own (main, duckdb).
      const c = String(n.column_names[0]).toLowerCase();
      if (c === 'current_schema') return constant('public', n);
      if (c === 'current_catalog') return constant(DATABASE.name, n);
      if (c === 'current_user' || c === 'session_user' || c === 'current_role') return constant(OWNER.name, n);
      return n;
    }
    if (n.class !== 'FUNCTION') return n;
    const name = String(n.function_name).toLowerCase();
    const schema = String(n.schema ?? '').toLowerCase();
    const args = Array.isArray(n.children) ? n.children : [];
    if (schema !== '' && schema !== 'pg_catalog' && schema !== 'information_schema') return n;
    if (args.length === 0 && name === 'version') return constant(PG_VERSION_TEXT, n);
    if (args.length === 0 && (name === 'current_database' || name === 'current_catalog')) return constant(DATABASE.name, n);
    if (args.length === 0 && name === 'current_schema') return constant('public', n);
    if (name === 'current_setting' && (args.length === 1 || args.length === 2)) {
      const setting = textConstant(args[0]);
      const value = setting === undefined ? undefined : clientSetting(setting);
      return value === undefined ? n : constant(value, n); // anything else: the guard refuses it
    }
    if (name === 'set_config' && args.length === 3) {
      const setting = textConstant(args[0]);
      const value = textConstant(args[1]);
      // Accepted without effect, for the client settings only (pgAdmin's bytea_output, search_path).
      return setting !== undefined && value !== undefined && clientSetting(setting) !== undefined ? constant(value, n) : n;
    }
    if (n.is_operator === true && (name === '~*' || name === '!~*') && args.length === 2) {
      const match = call('regexp_matches', [walk(args[0] as BigJsonValue, false, emptyFrom), walk(args[1] as BigJsonValue, false, emptyFrom), constant('i', n)], { ...n, alias: '' });
      return name === '~*' ? { ...match, alias: n.alias ?? '' } : { class: 'OPERATOR', type: 'OPERATOR_NOT', alias: n.alias ?? '', query_location: n.query_location ?? 0, children: [match] };
    }
    const macro = macroOf(name);
    if (macro) {
      for (const r of macro.reads) read(r);
      return { ...n, function_name: macro.macro, schema: '', catalog: '', children: args.map((a) => walk(a, false, emptyFrom)) };
    }
    if (schema !== '') return { ...n, schema: '', catalog: '', children: args.map((a) => walk(a, false, emptyFrom)) };
    return n;
  };

  walk(root, false, false);
  return out;
}

/** True for `SELECT ... FROM [pg_catalog.]pg_settings WHERE name = '<a client setting>'`. */
function settingLookup(n: Node): boolean {
  const from = n.from_table as Node;
  if (from.type !== 'BASE_TABLE' || String(from.table_name).toLowerCase() !== 'pg_settings' || !['', 'pg_catalog'].includes(String(from.schema_name ?? '').toLowerCase()) || String(from.catalog_name ?? '') !== '') return false;
  const w = n.where_clause;
  if (!isNode(w) || w.type !== 'COMPARE_EQUAL') return false;
  const [col, lit] = isNode(w.left) && w.left.class === 'COLUMN_REF' ? [w.left, w.right] : [w.right, w.left];
  const names = isNode(col) && Array.isArray(col.column_names) ? col.column_names : [];
  const text = textConstant(lit);
  return String(names[names.length - 1] ?? '').toLowerCase() === 'name' && text !== undefined && clientSetting(text) !== undefined;
}

/**
 * When `ref` (a BASE_TABLE node) names a catalog relation — `pg_catalog.x`, `information_schema.x`,
 * or an unqualified `pg_x` that is not a dataset (`isDataset`) — renames it to its session table
 * (keeping the name as alias) and returns the relation; undefined for other tables. Relations the
 * statement guard refuses by name (pg_settings) are left for it.
 * @throws SqlError unknown_dataset for a catalog relation that is not served.
 */
export function catalogRelationRef(ref: Node, isDataset: (name: string) => boolean, denied: ReadonlySet<string>): CatalogRelation | undefined {
  const schema = String(ref.schema_name ?? '').toLowerCase();
  const table = String(ref.table_name ?? '');
  const lower = table.toLowerCase();
  const catalog = String(ref.catalog_name ?? '').toLowerCase();
  let namespace: NamespaceName;
  if (schema === 'information_schema') namespace = 'information_schema';
  else if (schema === 'pg_catalog') namespace = 'pg_catalog';
  else if (schema === '' && /^pg_/.test(lower) && !isDataset(table)) namespace = 'pg_catalog';
  else return undefined;
  if (denied.has(lower) || (catalog !== '' && catalog !== DATABASE.name)) return undefined;
  const r = catalogRelation(namespace, lower);
  if (!r) {
    const served = namespace === 'information_schema' ? 'information_schema.tables, columns, schemata, views, routines (and the empty constraint views) are' : 'pg_class, pg_attribute, pg_namespace, pg_type, pg_proc, pg_description, pg_database, pg_roles and the other catalogs clients read are';
    throw new SqlError('unknown_dataset', `relation "${namespace}.${lower}" does not exist: ${served} served`);
  }
  if (!ref.alias) ref.alias = lower;
  ref.schema_name = '';
  ref.catalog_name = '';
  ref.table_name = sessionTableOf(r);
  return r;
}

/**
 * PostgreSQL's `~` in a statement that reads the catalog: DuckDB parses `a ~ b` into
 * `regexp_full_match`, PostgreSQL matches anywhere (`nspname ~ '^pg_'`): every regexp_full_match
 * of the statement becomes regexp_matches. Returns whether one was found.
 */
export function pgRegexSemantics(root: BigJsonValue): boolean {
  let found = false;
  const stack: BigJsonValue[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (isNode(v)) {
      if (v.class === 'FUNCTION' && String(v.function_name).toLowerCase() === 'regexp_full_match') {
        v.function_name = 'regexp_matches';
        found = true;
      }
      for (const x of Object.values(v)) if (typeof x === 'object' && x !== null) stack.push(x);
    }
  }
  return found;
}

/** The served table functions PostgreSQL qualifies (`pg_catalog.generate_series(...) s`): alias names the column too. */
export function pgTableFunction(ref: Node): boolean {
  const fn = ref.function;
  if (!isNode(fn) || fn.class !== 'FUNCTION') return false;
  const schema = String(fn.schema ?? '').toLowerCase();
  const name = String(fn.function_name).toLowerCase();
  let changed = false;
  if (schema === 'pg_catalog' || schema === 'information_schema') {
    fn.schema = '';
    changed = true;
  }
  // In PostgreSQL `FROM generate_series(1, 3) s` names the table and its one column `s`.
  if ((name === 'generate_series' || name === 'unnest') && typeof ref.alias === 'string' && ref.alias !== '' && Array.isArray(ref.column_name_alias) && ref.column_name_alias.length === 0) {
    ref.column_name_alias = [ref.alias];
    changed = true;
  }
  return changed;
}
