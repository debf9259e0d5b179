/**
 * The relations of hd_sql's PostgreSQL catalog: which `pg_catalog` and `information_schema` tables
 * and views are served, and their columns (PostgreSQL 16's, in its order, for the views the
 * standard's). A statement naming one reads a session table built from the datasets' schemas
 * (sql/pgcatalog/catalogRows.ts); the relations are listed in `pg_class` / `pg_attribute`
 * themselves, so `'pg_class'::regclass` and `\d pg_class` work as on PostgreSQL.
 */
import type { NamespaceName } from './oids';

/**
 * A column type of the catalog, as written in the specs below: PostgreSQL's name (`oid`, `name`,
 * `int2`, `text[]`...), with `node` for pg_node_tree, `acl` for aclitem[], `int2v`/`oidv` for the
 * vectors and `tstz` for timestamptz.
 */
export type CatalogColumnType = 'oid' | 'int2' | 'int4' | 'int8' | 'float4' | 'float8' | 'bool' | 'text' | 'name' | 'char' | 'xid' | 'regproc' | 'node' | 'acl' | 'text[]' | 'name[]' | 'oid[]' | 'int2[]' | 'char[]' | 'int2v' | 'oidv' | 'tstz';

/** The PostgreSQL type OID of each catalog column type. */
export const COLUMN_TYPE_OID: Readonly<Record<CatalogColumnType, number>> = {
  oid: 26, int2: 21, int4: 23, int8: 20, float4: 700, float8: 701, bool: 16, text: 25, name: 19, char: 18, xid: 28, regproc: 24,
  node: 194, acl: 1034, 'text[]': 1009, 'name[]': 1003, 'oid[]': 1028, 'int2[]': 1005, 'char[]': 1002, int2v: 22, oidv: 30, tstz: 1184,
};

/** One served relation. */
export interface CatalogRelation {
  /** PostgreSQL's OID for it (views of ours: 12000 up; information_schema: 13001 up). */
  readonly oid: number;
  readonly namespace: NamespaceName;
  readonly name: string;
  /** `r` a table, `v` a view (as PostgreSQL has it). */
  readonly kind: 'r' | 'v';
  readonly columns: readonly { readonly name: string; readonly type: CatalogColumnType }[];
}

const col = (spec: string): CatalogRelation['columns'] =>
  spec.split(',').map((c) => {
    const [name, type] = c.trim().split(/\s+/) as [string, CatalogColumnType];
    if (!(type in COLUMN_TYPE_OID)) throw new Error(`catalog column ${name}: unknown type ${type}`);
    return { name, type };
  });

const rel = (oid: number, namespace: NamespaceName, name: string, kind: 'r' | 'v', columns: string): CatalogRelation => ({ oid, namespace, name, kind, columns: col(columns) });
const pg = (oid: number, name: string, columns: string, kind: 'r' | 'v' = 'r'): CatalogRelation => rel(oid, 'pg_catalog', name, kind, columns);
const is = (n: number, name: string, columns: string): CatalogRelation => rel(13000 + n, 'information_schema', name, 'v', columns);

/** Every served relation (a `pg_catalog` relation not listed here is 42P01). */
export const CATALOG_RELATIONS: readonly CatalogRelation[] = [
  pg(1259, 'pg_class', 'oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, relacl acl, reloptions text[], relpartbound node'),
  pg(1249, 'pg_attribute', 'attrelid oid, attname name, atttypid oid, attlen int2, attnum int2, attcacheoff int4, atttypmod int4, attndims int2, attbyval bool, attalign char, attstorage char, attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int2, attstattarget int2, attcollation oid, attacl acl, attoptions text[], attfdwoptions text[], attmissingval text[]'),
  pg(2615, 'pg_namespace', 'oid oid, nspname name, nspowner oid, nspacl acl'),
  pg(1247, 'pg_type', 'oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, typsubscript regproc, typelem oid, typarray oid, typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid, typdefaultbin node, typdefault text, typacl acl'),
  pg(2610, 'pg_index', 'indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, indisreplident bool, indkey int2v, indcollation oidv, indclass oidv, indoption int2v, indexprs node, indpred node'),
  pg(2606, 'pg_constraint', 'oid oid, conname name, connamespace oid, contype char, condeferrable bool, condeferred bool, convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid, confrelid oid, confupdtype char, confdeltype char, confmatchtype char, conislocal bool, coninhcount int2, connoinherit bool, conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], conffeqop oid[], confdelsetcols int2[], conexclop oid[], conbin node'),
  pg(1262, 'pg_database', 'oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid xid, datminmxid xid, dattablespace oid, datcollate text, datctype text, daticulocale text, daticurules text, datcollversion text, datacl acl'),
  pg(12001, 'pg_roles', 'rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, rolvaliduntil tstz, rolbypassrls bool, rolconfig text[], oid oid', 'v'),
  pg(12002, 'pg_user', 'usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, usebypassrls bool, passwd text, valuntil tstz, useconfig text[]', 'v'),
  pg(1255, 'pg_proc', 'oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, prorows float4, provariadic oid, prosupport regproc, prokind char, prosecdef bool, proleakproof bool, proisstrict bool, proretset bool, provolatile char, proparallel char, pronargs int2, pronargdefaults int2, prorettype oid, proargtypes oidv, proallargtypes oid[], proargmodes char[], proargnames text[], proargdefaults node, protrftypes oid[], prosrc text, probin text, prosqlbody node, proconfig text[], proacl acl'),
  pg(2609, 'pg_description', 'objoid oid, classoid oid, objsubid int4, description text'),
  pg(2396, 'pg_shdescription', 'objoid oid, classoid oid, description text'),
  pg(2601, 'pg_am', 'oid oid, amname name, amhandler regproc, amtype char'),
  pg(2604, 'pg_attrdef', 'oid oid, adrelid oid, adnum int2, adbin node'),
  pg(3456, 'pg_collation', 'oid oid, collname name, collnamespace oid, collowner oid, collprovider char, collisdeterministic bool, collencoding int4, collcollate text, collctype text, colliculocale text, collicurules text, collversion text'),
  pg(2611, 'pg_inherits', 'inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool'),
  pg(3350, 'pg_partitioned_table', 'partrelid oid, partstrat char, partnatts int2, partdefid oid, partattrs int2v, partclass oidv, partcollation oidv, partexprs node'),
  pg(3256, 'pg_policy', 'oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], polqual node, polwithcheck node'),
  pg(3381, 'pg_statistic_ext', 'oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, stxstattarget int4, stxkeys int2v, stxkind char[], stxexprs node'),
  pg(6104, 'pg_publication', 'oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool'),
  pg(6106, 'pg_publication_rel', 'oid oid, prpubid oid, prrelid oid, prqual node, prattrs int2v'),
  pg(6237, 'pg_publication_namespace', 'oid oid, pnpubid oid, pnnspid oid'),
  pg(2620, 'pg_trigger', 'oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, tgenabled char, tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid, tgdeferrable bool, tginitdeferred bool, tgnargs int2, tgattr int2v, tgargs text, tgqual node, tgoldtable name, tgnewtable name'),
  pg(2618, 'pg_rewrite', 'oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, ev_qual node, ev_action node'),
  pg(1213, 'pg_tablespace', 'oid oid, spcname name, spcowner oid, spcacl acl, spcoptions text[]'),
  pg(2608, 'pg_depend', 'classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, refobjsubid int4, deptype char'),
  pg(3079, 'pg_extension', 'oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, extversion text, extconfig oid[], extcondition text[]'),
  pg(3501, 'pg_enum', 'oid oid, enumtypid oid, enumsortorder float4, enumlabel name'),
  pg(2612, 'pg_language', 'oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl acl'),
  pg(3118, 'pg_foreign_table', 'ftrelid oid, ftserver oid, ftoptions text[]'),
  pg(2224, 'pg_sequence', 'seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, seqmin int8, seqcache int8, seqcycle bool'),
  pg(12003, 'pg_tables', 'schemaname name, tablename name, tableowner name, tablespace name, hasindexes bool, hasrules bool, hastriggers bool, rowsecurity bool', 'v'),
  pg(12004, 'pg_views', 'schemaname name, viewname name, viewowner name, definition text', 'v'),
  pg(12005, 'pg_matviews', 'schemaname name, matviewname name, matviewowner name, tablespace name, hasindexes bool, ispopulated bool, definition text', 'v'),
  pg(12006, 'pg_indexes', 'schemaname name, tablename name, indexname name, tablespace name, indexdef text', 'v'),
  is(1, 'schemata', 'catalog_name name, schema_name name, schema_owner name, default_character_set_catalog name, default_character_set_schema name, default_character_set_name name, sql_path text'),
  is(2, 'tables', 'table_catalog name, table_schema name, table_name name, table_type text, self_referencing_column_name name, reference_generation text, user_defined_type_catalog name, user_defined_type_schema name, user_defined_type_name name, is_insertable_into text, is_typed text, commit_action text, hd_name text'),
  is(3, 'columns', 'table_catalog name, table_schema name, table_name name, column_name name, ordinal_position int4, column_default text, is_nullable text, data_type text, character_maximum_length int4, character_octet_length int4, numeric_precision int4, numeric_precision_radix int4, numeric_scale int4, datetime_precision int4, interval_type text, interval_precision int4, udt_catalog name, udt_schema name, udt_name name, is_identity text, is_generated text, is_updatable text, hd_type text'),
  is(4, 'views', 'table_catalog name, table_schema name, table_name name, view_definition text, check_option text, is_updatable text, is_insertable_into text'),
  is(5, 'table_constraints', 'constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, table_schema name, table_name name, constraint_type text, is_deferrable text, initially_deferred text, enforced text, nulls_distinct text'),
  is(6, 'key_column_usage', 'constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, table_schema name, table_name name, column_name name, ordinal_position int4, position_in_unique_constraint int4'),
  is(7, 'referential_constraints', 'constraint_catalog name, constraint_schema name, constraint_name name, unique_constraint_catalog name, unique_constraint_schema name, unique_constraint_name name, match_option text, update_rule text, delete_rule text'),
  is(8, 'routines', 'specific_catalog name, specific_schema name, specific_name name, routine_catalog name, routine_schema name, routine_name name, routine_type text, data_type text, type_udt_name name, routine_body text, external_language text, is_deterministic text'),
];

/**
 * `pg_settings` as far as it is served: the client settings (sql/pgcatalog/clientSettings.ts), read
 * only by `SELECT ... WHERE name = '<one of them>'`. Not in CATALOG_RELATIONS: not listed in
 * pg_class, and read any other way it is refused by the statement guard.
 */
export const PG_SETTINGS: CatalogRelation = pg(12100, 'pg_settings', 'name text, setting text, unit text, category text, short_desc text, extra_desc text, context text, vartype text, source text, min_val text, max_val text, enumvals text[], boot_val text, reset_val text, sourcefile text, sourceline int4, pending_restart bool', 'v');

const byQualifiedName = new Map(CATALOG_RELATIONS.map((r) => [`${r.namespace}.${r.name}`, r]));

/** The served relation `namespace.name` (name in any case), if any. */
export function catalogRelation(namespace: NamespaceName, name: string): CatalogRelation | undefined {
  return byQualifiedName.get(`${namespace}.${name.toLowerCase()}`);
}

/** The session table a served relation is read from in DuckDB (temporary, per statement). */
export function sessionTableOf(r: CatalogRelation): string {
  return `hdcat_${r.namespace === 'pg_catalog' ? '' : 'is_'}${r.name}`;
}
