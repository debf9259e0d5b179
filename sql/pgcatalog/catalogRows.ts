/**
 * The rows of each served catalog relation (sql/pgcatalog/relations.ts), computed from the model:
 * the datasets as tables of `public`, their columns typed per the type mapping, their descriptions,
 * HD's functions, one database and one role. A relation with no rows here is served empty
 * (`pg_index`, `pg_constraint`, `pg_inherits`...: datasets have no indexes, keys or inheritance).
 */
import { CLIENT_SETTINGS } from './clientSettings';
import { DATABASE, NAMESPACES, OWNER } from './oids';
import { HD_FUNCTIONS } from './hdFunctions';
import { formatType, PG_TYPES, pgTypeByOid } from './pgTypes';
import type { PgColumn, PgModel, PgRelation } from './pgModel';

/** One row: column name → value (absent columns are NULL). Integers may be numbers. */
export type Row = Readonly<Record<string, unknown>>;

const COLLATION_DEFAULT = 100;
/** Every relation may be read (SELECT, `r`) by anyone, written by no one: hd_sql is read-only. */
const READ_ONLY_ACL = [`${OWNER.name}=r/${OWNER.name}`, `=r/${OWNER.name}`];
const textLike = (oid: number): boolean => [25, 1043, 1042, 19].includes(oid) || [1009, 1015, 1014, 1003].includes(oid);
const byValue = (len: number): boolean => len === 1 || len === 2 || len === 4 || len === 8;
const align = (len: number): string => (len === 8 ? 'd' : len === 4 ? 'i' : len === 2 ? 's' : len === 1 ? 'c' : 'i');
const nsOid = (r: PgRelation): number => NAMESPACES[r.namespace];

function classRow(r: PgRelation): Row {
  return {
    oid: r.oid, relname: r.name, relnamespace: nsOid(r), reltype: 0, reloftype: 0, relowner: OWNER.oid, relam: 0, relfilenode: 0, reltablespace: 0,
    relpages: 0, reltuples: -1, relallvisible: 0, reltoastrelid: 0, relhasindex: false, relisshared: false, relpersistence: 'p', relkind: r.kind,
    relnatts: r.columns.length, relchecks: 0, relhasrules: false, relhastriggers: false, relhassubclass: false, relrowsecurity: false,
    relforcerowsecurity: false, relispopulated: true, relreplident: 'd', relispartition: false, relrewrite: 0, relfrozenxid: 0, relminmxid: 0,
    relacl: READ_ONLY_ACL,
  };
}

function attributeRow(r: PgRelation, c: PgColumn): Row {
  const t = pgTypeByOid(c.typeOid);
  const len = t?.len ?? -1;
  return {
    attrelid: r.oid, attname: c.name, atttypid: c.typeOid, attlen: len, attnum: c.num, attcacheoff: -1, atttypmod: c.typmod,
    attndims: t?.category === 'A' ? 1 : 0, attbyval: byValue(len), attalign: align(len), attstorage: len === -1 ? 'x' : 'p', attcompression: '',
    attnotnull: false, atthasdef: false, atthasmissing: false, attidentity: '', attgenerated: '', attisdropped: false, attislocal: true,
    attinhcount: 0, attstattarget: -1, attcollation: textLike(c.typeOid) ? COLLATION_DEFAULT : 0,
  };
}

function typeRow(oid: number): Row {
  const t = pgTypeByOid(oid)!;
  const isArray = t.category === 'A' && t.name.startsWith('_');
  return {
    oid: t.oid, typname: t.name, typnamespace: NAMESPACES.pg_catalog, typowner: OWNER.oid, typlen: t.len, typbyval: byValue(t.len), typtype: t.kind,
    typcategory: t.category, typispreferred: ['text', 'float8', 'bool', 'timestamptz', 'oid', 'inet'].includes(t.name), typisdefined: true, typdelim: ',',
    typrelid: 0, typsubscript: isArray ? 'array_subscript_handler' : '-', typelem: t.elem, typarray: t.array, typinput: isArray ? 'array_in' : `${t.name}in`,
    typoutput: isArray ? 'array_out' : `${t.name}out`, typreceive: isArray ? 'array_recv' : `${t.name}recv`, typsend: isArray ? 'array_send' : `${t.name}send`,
    typmodin: '-', typmodout: '-', typanalyze: '-', typalign: isArray ? 'i' : align(t.len), typstorage: t.len === -1 ? 'x' : 'p', typnotnull: false,
    typbasetype: 0, typtypmod: -1, typndims: 0, typcollation: textLike(t.oid) ? COLLATION_DEFAULT : 0,
  };
}

/** The udt facts information_schema.columns gives for a column. */
function numericFacts(c: PgColumn): Row {
  switch (c.typeOid) {
    case 21:
      return { numeric_precision: 16, numeric_precision_radix: 2, numeric_scale: 0 };
    case 23:
      return { numeric_precision: 32, numeric_precision_radix: 2, numeric_scale: 0 };
    case 20:
      return { numeric_precision: 64, numeric_precision_radix: 2, numeric_scale: 0 };
    case 700:
      return { numeric_precision: 24, numeric_precision_radix: 2 };
    case 701:
      return { numeric_precision: 53, numeric_precision_radix: 2 };
    case 1700:
      return c.typmod >= 4 ? { numeric_precision: (c.typmod - 4) >> 16, numeric_precision_radix: 10, numeric_scale: (c.typmod - 4) & 0xffff } : { numeric_precision_radix: 10 };
    default:
      return {};
  }
}

const empty = (): Row[] => [];
const catalogAndPublic = (m: PgModel): PgRelation[] => m.relations.filter((r) => r.namespace !== 'information_schema');

/** The rows of each relation with rows, by `namespace.name`; the others are empty. */
const ROWS: Readonly<Record<string, (m: PgModel) => Row[]>> = {
  'pg_catalog.pg_class': (m) => m.relations.map(classRow),
  'pg_catalog.pg_attribute': (m) => m.relations.flatMap((r) => r.columns.map((c) => attributeRow(r, c))),
  'pg_catalog.pg_namespace': () => Object.entries(NAMESPACES).map(([nspname, oid]) => ({ oid, nspname, nspowner: OWNER.oid })),
  'pg_catalog.pg_type': () => PG_TYPES.map((t) => typeRow(t.oid)),
  'pg_catalog.pg_database': () => [{ oid: DATABASE.oid, datname: DATABASE.name, datdba: OWNER.oid, encoding: 6, datlocprovider: 'c', datistemplate: false, datallowconn: true, datconnlimit: -1, datfrozenxid: 0, datminmxid: 1, dattablespace: 1663, datcollate: 'C', datctype: 'C' }],
  'pg_catalog.pg_roles': () => [{ rolname: OWNER.name, rolsuper: false, rolinherit: true, rolcreaterole: false, rolcreatedb: false, rolcanlogin: true, rolreplication: false, rolconnlimit: -1, rolpassword: '********', rolbypassrls: false, oid: OWNER.oid }],
  'pg_catalog.pg_user': () => [{ usename: OWNER.name, usesysid: OWNER.oid, usecreatedb: false, usesuper: false, userepl: false, usebypassrls: false, passwd: '********' }],
  'pg_catalog.pg_proc': () =>
    HD_FUNCTIONS.map((f) => ({
      oid: f.oid, proname: f.name, pronamespace: NAMESPACES.public, proowner: OWNER.oid, prolang: 14, procost: 100, prorows: 0, provariadic: 0, prosupport: '-',
      prokind: 'f', prosecdef: false, proleakproof: false, proisstrict: false, proretset: false, provolatile: 'i', proparallel: 's', pronargs: f.args.length,
      pronargdefaults: 0, prorettype: f.result, proargtypes: f.args.map(([, t]) => t), proargnames: f.args.map(([n]) => n), prosrc: 'DuckDB macro (sql/chessFunctions.ts)',
    })),
  'pg_catalog.pg_description': (m) => [
    ...m.relations.flatMap((r) => [...(r.description !== undefined ? [{ objoid: r.oid, classoid: 1259, objsubid: 0, description: r.description }] : []), ...r.columns.filter((c) => c.description !== undefined).map((c) => ({ objoid: r.oid, classoid: 1259, objsubid: c.num, description: c.description }))]),
    ...HD_FUNCTIONS.map((f) => ({ objoid: f.oid, classoid: 1255, objsubid: 0, description: f.description })),
    { objoid: NAMESPACES.public, classoid: 2615, objsubid: 0, description: 'the datasets, one table each' },
    { objoid: NAMESPACES.pg_catalog, classoid: 2615, objsubid: 0, description: 'system catalog schema' },
  ],
  'pg_catalog.pg_am': () => [[2, 'heap', 'heap_tableam_handler', 't'], [403, 'btree', 'bthandler', 'i'], [405, 'hash', 'hashhandler', 'i']].map(([oid, amname, amhandler, amtype]) => ({ oid, amname, amhandler, amtype })),
  'pg_catalog.pg_collation': () => [
    { oid: COLLATION_DEFAULT, collname: 'default', collnamespace: NAMESPACES.pg_catalog, collowner: OWNER.oid, collprovider: 'd', collisdeterministic: true, collencoding: -1 },
    { oid: 950, collname: 'C', collnamespace: NAMESPACES.pg_catalog, collowner: OWNER.oid, collprovider: 'c', collisdeterministic: true, collencoding: -1, collcollate: 'C', collctype: 'C' },
    { oid: 951, collname: 'POSIX', collnamespace: NAMESPACES.pg_catalog, collowner: OWNER.oid, collprovider: 'c', collisdeterministic: true, collencoding: -1, collcollate: 'POSIX', collctype: 'POSIX' },
  ],
  'pg_catalog.pg_language': () => [[12, 'internal'], [13, 'c'], [14, 'sql']].map(([oid, lanname]) => ({ oid, lanname, lanowner: OWNER.oid, lanispl: false, lanpltrusted: lanname === 'sql', lanplcallfoid: 0, laninline: 0, lanvalidator: 0 })),
  'pg_catalog.pg_tablespace': () => [{ oid: 1663, spcname: 'pg_default', spcowner: OWNER.oid }, { oid: 1664, spcname: 'pg_global', spcowner: OWNER.oid }],
  'pg_catalog.pg_tables': (m) => catalogAndPublic(m).filter((r) => r.kind === 'r').map((r) => ({ schemaname: r.namespace, tablename: r.name, tableowner: OWNER.name, hasindexes: false, hasrules: false, hastriggers: false, rowsecurity: false })),
  'pg_catalog.pg_views': (m) => m.relations.filter((r) => r.kind === 'v').map((r) => ({ schemaname: r.namespace, viewname: r.name, viewowner: OWNER.name })),
  'pg_catalog.pg_settings': () => Object.entries(CLIENT_SETTINGS).map(([name, setting]) => ({ name, setting, context: 'user', vartype: 'string', source: 'default', boot_val: setting, reset_val: setting, pending_restart: false })),
  'information_schema.schemata': () => Object.keys(NAMESPACES).map((schema_name) => ({ catalog_name: DATABASE.name, schema_name, schema_owner: OWNER.name })),
  'information_schema.tables': (m) => m.datasets.map((r) => ({ table_catalog: DATABASE.name, table_schema: 'public', table_name: r.name, table_type: 'BASE TABLE', is_insertable_into: 'NO', is_typed: 'NO', hd_name: r.dataset?.name ?? r.name })),
  'information_schema.columns': (m) =>
    m.datasets.flatMap((r) =>
      r.columns.map((c) => ({
        table_catalog: DATABASE.name, table_schema: 'public', table_name: r.name, column_name: c.name, ordinal_position: c.num, is_nullable: 'YES', data_type: c.sqlType,
        ...numericFacts(c), udt_catalog: DATABASE.name, udt_schema: 'pg_catalog', udt_name: pgTypeByOid(c.typeOid)?.name ?? 'text', is_identity: 'NO', is_generated: 'NEVER', is_updatable: 'NO', hd_type: c.hdType ?? null,
      })),
    ),
  'information_schema.routines': () =>
    HD_FUNCTIONS.map((f) => ({
      specific_catalog: DATABASE.name, specific_schema: 'public', specific_name: `${f.name}_${f.oid}`, routine_catalog: DATABASE.name, routine_schema: 'public', routine_name: f.name,
      routine_type: 'FUNCTION', data_type: formatType(f.result, -1), type_udt_name: pgTypeByOid(f.result)?.name ?? null, routine_body: 'SQL', external_language: 'SQL', is_deterministic: 'YES',
    })),
};

/** The rows of the served relation `namespace.name` in model `m` (empty for relations with none). */
export function rowsOf(m: PgModel, qualifiedName: string): Row[] {
  return (ROWS[qualifiedName] ?? empty)(m);
}
