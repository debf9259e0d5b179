/**
 * The PostgreSQL functions clients call on the catalog (psql, pgjdbc, DBeaver, Metabase...), as
 * DuckDB macros named `hdpg_<name>`, created once per DuckDB instance. The statement rewrite
 * (sql/pgcatalog/pgRewrite.ts) renames a call of `<name>` or `pg_catalog.<name>` to its macro, so
 * DuckDB's own `pg_catalog` macros of the same names (which describe DuckDB's tables) are never
 * reached. A macro that reads the catalog names the relations it reads: the rewrite registers
 * them with the statement; inside a body, tables are aliased `hdpg_*`, so a caller's `p.oid` is
 * never captured by the body's own `p`.
 */
import type { LocalSqlSession } from '../../local/localSqlSession';
import { emptyArrowTable } from './catalogTables';
import { NAMESPACES, OWNER } from './oids';
import { formatTypeSql } from './pgTypes';
import { catalogRelation, sessionTableOf, type CatalogRelation } from './relations';

/** One function: its overloads (argument names, DuckDB body) and the catalog relations its body reads. */
interface PgFunction {
  readonly overloads: readonly (readonly [args: string, body: string])[];
  readonly reads?: readonly string[];
}

const NULL_TEXT = 'CAST(NULL AS VARCHAR)';
/** True for a privilege list naming one a reader has (PostgreSQL: true when any listed one is held). */
const READ_PRIVILEGE = (p: string): string => `regexp_matches(upper(${p}), 'SELECT|USAGE|CONNECT|EXECUTE|MEMBER')`;
const visible = (): PgFunction => ({ overloads: [['o', 'CASE WHEN o IS NULL THEN NULL ELSE true END']] });
const noDefinition = (...arities: string[]): PgFunction => ({ overloads: arities.map((a) => [a, NULL_TEXT] as const) });
/** A privilege check: `(object, privilege)` and `(user, object, privilege)` (columns: one argument more). */
const privilege = (column = false): PgFunction => ({
  overloads: column
    ? [['t, c, p', READ_PRIVILEGE('p')], ['u, t, c, p', READ_PRIVILEGE('p')]]
    : [['o, p', READ_PRIVILEGE('p')], ['u, o, p', READ_PRIVILEGE('p')]],
});
/** The catalog a description's `obj_description(oid, 'pg_class')` names, as its OID. */
const CLASS_OID = "CASE c WHEN 'pg_class' THEN 1259 WHEN 'pg_proc' THEN 1255 WHEN 'pg_namespace' THEN 2615 WHEN 'pg_type' THEN 1247 WHEN 'pg_database' THEN 1262 WHEN 'pg_constraint' THEN 2606 ELSE 0 END";
// proargtypes is an oidvector: its text, OIDs separated by spaces.
const ARGUMENTS = "(SELECT array_to_string(list_transform(range(1, hdpg_p.pronargs + 1), lambda i: coalesce(hdpg_p.proargnames[i] || ' ', '') || hdpg_format_type(CAST(string_split(hdpg_p.proargtypes, ' ')[i] AS BIGINT), NULL)), ', ') FROM hdcat_pg_proc hdpg_p WHERE hdpg_p.oid = o)";

/** The functions by PostgreSQL name (lower case). */
export const PG_FUNCTIONS: Readonly<Record<string, PgFunction>> = {
  pg_get_userbyid: { overloads: [['o', `CASE WHEN o IS NULL THEN NULL WHEN o = ${OWNER.oid} THEN '${OWNER.name}' ELSE 'unknown (OID=' || CAST(o AS VARCHAR) || ')' END`]] },
  format_type: { overloads: [['t, m', formatTypeSql()]] },
  pg_table_is_visible: visible(),
  pg_type_is_visible: visible(),
  pg_function_is_visible: visible(),
  pg_collation_is_visible: visible(),
  pg_operator_is_visible: visible(),
  pg_opclass_is_visible: visible(),
  pg_conversion_is_visible: visible(),
  pg_statistics_obj_is_visible: visible(),
  pg_ts_config_is_visible: visible(),
  pg_ts_dict_is_visible: visible(),
  pg_ts_parser_is_visible: visible(),
  pg_ts_template_is_visible: visible(),
  pg_get_expr: noDefinition('e, r', 'e, r, p'),
  pg_get_constraintdef: noDefinition('o', 'o, p'),
  pg_get_indexdef: noDefinition('o', 'o, c, p'),
  pg_get_viewdef: noDefinition('o', 'o, p'),
  pg_get_triggerdef: noDefinition('o', 'o, p'),
  pg_get_ruledef: noDefinition('o', 'o, p'),
  pg_get_partkeydef: noDefinition('o'),
  pg_get_partition_constraintdef: noDefinition('o'),
  pg_get_statisticsobjdef_columns: noDefinition('o'),
  pg_get_serial_sequence: noDefinition('t, c'),
  pg_tablespace_location: { overloads: [['o', "''"]] },
  pg_get_function_result: { overloads: [['o', '(SELECT hdpg_format_type(hdpg_p.prorettype, NULL) FROM hdcat_pg_proc hdpg_p WHERE hdpg_p.oid = o)']], reads: ['pg_proc'] },
  pg_get_function_arguments: { overloads: [['o', ARGUMENTS]], reads: ['pg_proc'] },
  pg_get_function_identity_arguments: { overloads: [['o', ARGUMENTS]], reads: ['pg_proc'] },
  pg_encoding_to_char: { overloads: [['e', "CASE e WHEN 6 THEN 'UTF8' WHEN 0 THEN 'SQL_ASCII' ELSE '' END"]] },
  pg_char_to_encoding: { overloads: [['e', "CASE upper(e) WHEN 'UTF8' THEN 6 WHEN 'SQL_ASCII' THEN 0 ELSE -1 END"]] },
  array_upper: { overloads: [['a, d', 'CASE WHEN d = 1 AND len(a) > 0 THEN CAST(len(a) AS INTEGER) END']] },
  array_lower: { overloads: [['a, d', 'CASE WHEN d = 1 AND len(a) > 0 THEN 1 END']] },
  _pg_expandarray: { overloads: [['a', "unnest(list_transform(range(1, len(a) + 1), lambda i: {'x': a[i], 'n': CAST(i AS INTEGER)}))"]] },
  current_schemas: { overloads: [['b', "CASE WHEN b THEN ['pg_catalog', 'public'] ELSE ['public'] END"]] },
  has_table_privilege: privilege(),
  has_schema_privilege: privilege(),
  has_database_privilege: privilege(),
  has_function_privilege: privilege(),
  has_sequence_privilege: privilege(),
  has_type_privilege: privilege(),
  has_language_privilege: privilege(),
  has_tablespace_privilege: privilege(),
  has_foreign_data_wrapper_privilege: privilege(),
  has_server_privilege: privilege(),
  has_any_column_privilege: privilege(),
  has_column_privilege: privilege(true),
  pg_has_role: privilege(),
  obj_description: {
    overloads: [
      ['o, c', `(SELECT hdpg_d.description FROM hdcat_pg_description hdpg_d WHERE hdpg_d.objoid = o AND hdpg_d.classoid = ${CLASS_OID} AND hdpg_d.objsubid = 0)`],
      ['o', '(SELECT first(hdpg_d.description) FROM hdcat_pg_description hdpg_d WHERE hdpg_d.objoid = o AND hdpg_d.objsubid = 0)'],
    ],
    reads: ['pg_description'],
  },
  col_description: { overloads: [['o, n', '(SELECT hdpg_d.description FROM hdcat_pg_description hdpg_d WHERE hdpg_d.objoid = o AND hdpg_d.classoid = 1259 AND hdpg_d.objsubid = n)']], reads: ['pg_description'] },
  shobj_description: { overloads: [['o, c', '(SELECT hdpg_d.description FROM hdcat_pg_shdescription hdpg_d WHERE hdpg_d.objoid = o)']], reads: ['pg_shdescription'] },
  // Sizes are the Storage Nodes' to know, not hd_sql's: unknown (NULL), as for a foreign table.
  pg_relation_size: { overloads: [['o', 'CAST(NULL AS BIGINT)'], ['o, f', 'CAST(NULL AS BIGINT)']] },
  pg_table_size: { overloads: [['o', 'CAST(NULL AS BIGINT)']] },
  pg_total_relation_size: { overloads: [['o', 'CAST(NULL AS BIGINT)']] },
  pg_indexes_size: { overloads: [['o', 'CAST(NULL AS BIGINT)']] },
  pg_database_size: { overloads: [['o', 'CAST(NULL AS BIGINT)']] },
  pg_relation_is_publishable: { overloads: [['o', 'false']] },
  pg_is_in_recovery: { overloads: [['', 'false']] },
  // What a shown `oid::regclass` / `oid::regnamespace` prints (sql/pgcatalog/pgRewrite.ts): the name, else the number.
  regclass_out: { overloads: [['o', 'coalesce((SELECT hdpg_c.relname FROM hdcat_pg_class hdpg_c WHERE hdpg_c.oid = o), CAST(o AS VARCHAR))']], reads: ['pg_class'] },
  regnamespace_out: { overloads: [['o', `CASE o ${Object.entries(NAMESPACES).map(([n, oid]) => `WHEN ${oid} THEN '${n}'`).join(' ')} ELSE CAST(o AS VARCHAR) END`]] },
  quote_ident: { overloads: [['s', `CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_$]*') THEN s ELSE '"' || replace(s, '"', '""') || '"' END`]] },
};

/** The macro a PostgreSQL function name (any case) is rewritten to, if it is one of ours. */
export function macroOf(name: string): { macro: string; reads: readonly string[] } | undefined {
  const f = PG_FUNCTIONS[name.toLowerCase()];
  return f ? { macro: `hdpg_${name.toLowerCase()}`, reads: f.reads ?? [] } : undefined;
}

/** The CREATE MACRO statements, one per function (its overloads together). */
export const PG_MACROS: readonly string[] = Object.entries(PG_FUNCTIONS).map(([name, f]) => `CREATE OR REPLACE MACRO hdpg_${name}${f.overloads.map(([args, body]) => `(${args}) AS ${body}`).join(', ')}`);

const installed = new WeakMap<object, Promise<void>>();

/**
 * Makes sure the macros exist in the DuckDB instance `owner` (the LocalSql) stands for, creating
 * them through `session` the first time (a failed attempt is tried again next time).
 */
export async function ensurePgFunctions(owner: object, session: LocalSqlSession): Promise<void> {
  let p = installed.get(owner);
  if (!p) {
    p = (async () => {
      // DuckDB checks a macro's tables when it is created: the relations the bodies read exist
      // empty meanwhile. Each statement that calls one registers its own (same names, temporary).
      const reads = [...new Set(Object.values(PG_FUNCTIONS).flatMap((f) => f.reads ?? []))].map((n) => catalogRelation('pg_catalog', n) as CatalogRelation);
      for (const r of reads) await session.register(sessionTableOf(r), emptyArrowTable(r));
      for (const m of PG_MACROS) await session.query(m);
      for (const r of reads) await session.park(sessionTableOf(r), { dropAbove: 0 });
    })();
    installed.set(owner, p);
    p.catch(() => installed.delete(owner));
  }
  await p;
}
