/**
 * The PostgreSQL types hd_sql's catalog speaks of (`pg_type`): the types of the datasets' columns
 * per the reference's type mapping (sql/catalog.ts `sqlTypeOf`), the types of the catalog's own
 * columns, and their array types, with PostgreSQL's OIDs, so `format_type`, `::regtype` and
 * drivers' type caches (pgjdbc's TypeInfoCache) resolve them as on a real server.
 */

/** One row of `pg_type`. */
export interface PgType {
  readonly oid: number;
  /** `typname` (`int4`, `_int4` for its array). */
  readonly name: string;
  /** What `format_type` prints (`integer`, `integer[]`). */
  readonly display: string;
  /** `typlen`: bytes, or -1 for variable length. */
  readonly len: number;
  /** `typcategory` (N numeric, S string, A array, B boolean, D date/time, I network, U user, P pseudo, Z internal). */
  readonly category: string;
  /** `typtype`: b base, p pseudo. */
  readonly kind: 'b' | 'p';
  /** `typelem` (arrays and vectors: the element's OID; else 0). */
  readonly elem: number;
  /** `typarray`: the OID of its array type (0: none). */
  readonly array: number;
  /** Other spellings `::regtype` accepts (`integer`, `int`). */
  readonly aliases?: readonly string[];
}

/** [oid, name, display, len, category, array oid, aliases]: the base types. */
const BASE: readonly [number, string, string, number, string, number, string[]?][] = [
  [16, 'bool', 'boolean', 1, 'B', 1000, ['boolean']],
  [17, 'bytea', 'bytea', -1, 'U', 1001],
  [18, 'char', '"char"', 1, 'Z', 1002],
  [19, 'name', 'name', 64, 'S', 1003],
  [20, 'int8', 'bigint', 8, 'N', 1016, ['bigint']],
  [21, 'int2', 'smallint', 2, 'N', 1005, ['smallint']],
  [23, 'int4', 'integer', 4, 'N', 1007, ['integer', 'int']],
  [24, 'regproc', 'regproc', 4, 'N', 1008],
  [25, 'text', 'text', -1, 'S', 1009],
  [26, 'oid', 'oid', 4, 'N', 1028],
  [28, 'xid', 'xid', 4, 'U', 1011],
  [114, 'json', 'json', -1, 'U', 199],
  [194, 'pg_node_tree', 'pg_node_tree', -1, 'Z', 0],
  [700, 'float4', 'real', 4, 'N', 1021, ['real']],
  [701, 'float8', 'double precision', 8, 'N', 1022, ['double precision', 'double']],
  [869, 'inet', 'inet', -1, 'I', 1041],
  [1033, 'aclitem', 'aclitem', 12, 'U', 1034],
  [1042, 'bpchar', 'character', -1, 'S', 1014, ['character', 'char']],
  [1043, 'varchar', 'character varying', -1, 'S', 1015, ['character varying']],
  [1082, 'date', 'date', 4, 'D', 1182],
  [1083, 'time', 'time without time zone', 8, 'D', 1183, ['time without time zone']],
  [1114, 'timestamp', 'timestamp without time zone', 8, 'D', 1115, ['timestamp without time zone']],
  [1184, 'timestamptz', 'timestamp with time zone', 8, 'D', 1185, ['timestamp with time zone']],
  [1186, 'interval', 'interval', 16, 'T', 1187],
  [1266, 'timetz', 'time with time zone', 12, 'D', 1270, ['time with time zone']],
  [1700, 'numeric', 'numeric', -1, 'N', 1231, ['decimal']],
  [2205, 'regclass', 'regclass', 4, 'N', 2210],
  [2206, 'regtype', 'regtype', 4, 'N', 2211],
  [2950, 'uuid', 'uuid', 16, 'U', 2951],
  [3802, 'jsonb', 'jsonb', -1, 'U', 3807],
  [4089, 'regnamespace', 'regnamespace', 4, 'N', 4090],
  [4096, 'regrole', 'regrole', 4, 'N', 4097],
];

/** Vectors (arrays PostgreSQL stores with their own type) and pseudo types. */
const SPECIAL: readonly PgType[] = [
  { oid: 22, name: 'int2vector', display: 'int2vector', len: -1, category: 'A', kind: 'b', elem: 21, array: 1006 },
  { oid: 30, name: 'oidvector', display: 'oidvector', len: -1, category: 'A', kind: 'b', elem: 26, array: 1013 },
  { oid: 1006, name: '_int2vector', display: 'int2vector[]', len: -1, category: 'A', kind: 'b', elem: 22, array: 0 },
  { oid: 1013, name: '_oidvector', display: 'oidvector[]', len: -1, category: 'A', kind: 'b', elem: 30, array: 0 },
  { oid: 2249, name: 'record', display: 'record', len: -1, category: 'P', kind: 'p', elem: 0, array: 2287 },
  { oid: 2276, name: 'any', display: '"any"', len: 4, category: 'P', kind: 'p', elem: 0, array: 0 },
  { oid: 2277, name: 'anyarray', display: 'anyarray', len: -1, category: 'P', kind: 'p', elem: 0, array: 0 },
  { oid: 2278, name: 'void', display: 'void', len: 4, category: 'P', kind: 'p', elem: 0, array: 0 },
];

/** Every type of the catalog, base types followed by their arrays, then the special ones. */
export const PG_TYPES: readonly PgType[] = [
  ...BASE.map(([oid, name, display, len, category, array, aliases]): PgType => ({ oid, name, display, len, category, kind: 'b', elem: 0, array, ...(aliases ? { aliases } : {}) })),
  ...BASE.filter(([, , , , , array]) => array !== 0).map(([oid, name, display, , , array]): PgType => ({ oid: array, name: `_${name}`, display: `${display}[]`, len: -1, category: 'A', kind: 'b', elem: oid, array: 0 })),
  ...SPECIAL,
];

const byOid = new Map(PG_TYPES.map((t) => [t.oid, t]));
const byName = new Map<string, PgType>();
for (const t of PG_TYPES) for (const n of [t.name, t.display, ...(t.aliases ?? [])]) if (!byName.has(n)) byName.set(n, t);

/** The type of an OID. */
export const pgTypeByOid = (oid: number): PgType | undefined => byOid.get(oid);

/** OIDs the catalog uses by name. */
export const TYPE_OID = { bool: 16, int2: 21, int4: 23, int8: 20, text: 25, oid: 26, numeric: 1700, name: 19, char: 18 } as const;

/**
 * The type a name means, as `'...'::regtype` reads it: `int4`, `integer`, `pg_catalog.int4`,
 * `character varying(10)`, `_int4` or `integer[]`. Undefined when unknown.
 */
export function pgTypeByName(text: string): PgType | undefined {
  let n = text.trim().toLowerCase().replace(/^"?pg_catalog"?\./, '').replace(/\s+/g, ' ');
  n = n.replace(/\s*\(\s*\d+\s*(,\s*\d+\s*)?\)/, ''); // typmods do not change the type
  if (n.endsWith('[]')) {
    const e = pgTypeByName(n.slice(0, -2));
    return e && e.array !== 0 ? byOid.get(e.array) : undefined;
  }
  return byName.get(n.replace(/^"(.*)"$/, '$1'));
}

/** A column's type: OID and typmod (-1: none), as `pg_attribute.atttypid` / `atttypmod` hold them. */
export interface PgColumnType {
  readonly oid: number;
  readonly typmod: number;
}

/**
 * The PostgreSQL type of a SQL type text of the type mapping (`sqlTypeOf`: `bigint`, `inet`,
 * `numeric(20,4)`, `text[]`...): numeric's precision and scale become its typmod.
 * @throws Error for a type the mapping does not produce (a bug: the catalog would lie).
 */
export function pgColumnType(sqlType: string): PgColumnType {
  const m = /^numeric\((\d+),(\d+)\)(\[\])?$/.exec(sqlType);
  const typmod = m ? ((Number(m[1]) << 16) | Number(m[2])) + 4 : -1;
  const t = pgTypeByName(m ? `numeric${m[3] ?? ''}` : sqlType);
  if (!t) throw new Error(`no PostgreSQL type for the SQL type ${JSON.stringify(sqlType)}`);
  return { oid: t.oid, typmod };
}

/** What `format_type(oid, typmod)` answers (PostgreSQL's rules for numeric and varchar typmods). */
export function formatType(oid: number, typmod: number | null): string {
  const t = byOid.get(oid);
  if (!t) return '???';
  const elem = t.category === 'A' && t.name.startsWith('_') ? byOid.get(t.elem) : undefined;
  const base = elem ?? t;
  let out = base.display;
  if (typmod !== null && typmod >= 4) {
    if (base.oid === 1700) out = `numeric(${(typmod - 4) >> 16},${(typmod - 4) & 0xffff})`;
    else if (base.oid === 1043 || base.oid === 1042) out = `${base.display}(${typmod - 4})`;
  }
  return elem ? `${out}[]` : out;
}

/**
 * `format_type` as a DuckDB macro body over `t` (OID) and `m` (typmod): the same answers as
 * `formatType`, as one CASE (no table: it works in any statement).
 */
export function formatTypeSql(): string {
  const names = PG_TYPES.map((t) => `WHEN ${t.oid} THEN '${formatType(t.oid, null).replace(/'/g, "''")}'`).join(' ');
  const mod = (display: string): string => `'${display}(' || CAST(((m - 4) >> 16) AS VARCHAR) || ',' || CAST(((m - 4) & 65535) AS VARCHAR) || ')'`;
  return [
    'CASE WHEN t IS NULL THEN NULL',
    `WHEN t = 1700 AND m >= 4 THEN ${mod('numeric')}`,
    `WHEN t = 1231 AND m >= 4 THEN ${mod('numeric')} || '[]'`,
    "WHEN t IN (1043, 1042) AND m >= 4 THEN (CASE t WHEN 1043 THEN 'character varying(' ELSE 'character(' END) || CAST(m - 4 AS VARCHAR) || ')'",
    `ELSE coalesce(CASE t ${names} END, '???') END`,
  ].join(' ');
}
