/**
 * The served catalog relations as Arrow tables (built once per model) and their registration in a
 * DuckDB session: a statement that reads `pg_catalog.pg_class` reads the session table
 * `hdcat_pg_class`, registered from the Catalog the statement started with. Column types follow the
 * catalog's (oid and int8 as BIGINT, int2 SMALLINT, name and char as VARCHAR, arrays and int2vector
 * as lists). An oidvector (`pg_proc.proargtypes`) is text as PostgreSQL prints it, OIDs separated
 * by spaces: drivers split that text (pgjdbc's getFunctionColumns).
 */
import * as arrow from 'apache-arrow';
import type { LocalSqlSession } from '../../local/localSqlSession';
import { rowsOf } from './catalogRows';
import type { PgModel } from './pgModel';
import { sessionTableOf, type CatalogColumnType, type CatalogRelation } from './relations';

const list = (t: arrow.DataType): arrow.DataType => new arrow.List(new arrow.Field('item', t, true));

/** The Arrow type of a catalog column type. */
function arrowTypeOf(t: CatalogColumnType): arrow.DataType {
  switch (t) {
    case 'oid':
    case 'int8':
    case 'xid':
      return new arrow.Int64();
    case 'int2':
      return new arrow.Int16();
    case 'int4':
      return new arrow.Int32();
    case 'float4':
      return new arrow.Float32();
    case 'float8':
      return new arrow.Float64();
    case 'bool':
      return new arrow.Bool();
    case 'oid[]':
      return list(new arrow.Int64());
    case 'int2[]':
    case 'int2v':
      return list(new arrow.Int16());
    case 'acl':
    case 'text[]':
    case 'name[]':
    case 'char[]':
      return list(new arrow.Utf8());
    default:
      return new arrow.Utf8(); // text, name, char, regproc, oidvector, pg_node_tree, timestamptz (always NULL here)
  }
}

/** A value as the Arrow builder of `t` takes it (Int64 wants bigints). */
function valueFor(t: arrow.DataType, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (arrow.DataType.isInt(t) && t.bitWidth === 64) return BigInt(v as number);
  if (arrow.DataType.isList(t)) return (v as unknown[]).map((x) => valueFor((t.children[0] as arrow.Field).type, x));
  if (Array.isArray(v)) return v.join(' '); // an oidvector
  return v;
}

/** A table of `r`'s columns from each column's values (one batch, even with no rows). */
function tableOf(r: CatalogRelation, values: (type: arrow.DataType, name: string) => unknown[]): arrow.Table {
  const fields = r.columns.map((c) => new arrow.Field(c.name, arrowTypeOf(c.type), true));
  const columns = fields.map((f) => arrow.vectorFromArray(values(f.type, f.name), f.type).data[0] as arrow.Data);
  const schema = new arrow.Schema(fields);
  const data = arrow.makeData({ type: new arrow.Struct(fields), length: columns[0]?.length ?? 0, nullCount: 0, children: columns });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
}

/** Relation `r` with no rows (what the macros that read it are created against). */
export function emptyArrowTable(r: CatalogRelation): arrow.Table {
  return tableOf(r, () => []);
}

const tables = new WeakMap<PgModel, Map<string, arrow.Table>>();

/** The Arrow table of relation `r` in model `m` (built on first use, then kept with the model). */
export function arrowTableOf(m: PgModel, r: CatalogRelation): arrow.Table {
  let byName = tables.get(m);
  if (!byName) tables.set(m, (byName = new Map()));
  const key = `${r.namespace}.${r.name}`;
  let t = byName.get(key);
  if (!t) {
    const rows = rowsOf(m, key);
    byName.set(key, (t = tableOf(r, (type, name) => rows.map((row) => valueFor(type, row[name])))));
  }
  return t;
}

/** The session table `SHOW TABLES` reads: one column `name`, the dataset ids. */
export const SHOW_TABLES_TABLE = 'hdcat_show_tables';

/**
 * Registers each relation of `used` in `session` under its session table name, and the
 * SHOW TABLES table when `showTables`.
 */
export async function registerCatalogTables(session: LocalSqlSession, m: PgModel, used: Iterable<CatalogRelation>, showTables = false): Promise<void> {
  if (showTables) await session.register(SHOW_TABLES_TABLE, tableOf({ oid: 0, namespace: 'public', name: 'tables', kind: 'v', columns: [{ name: 'name', type: 'text' }] }, () => m.datasets.map((r) => r.name)));
  for (const r of new Set(used)) await session.register(sessionTableOf(r), arrowTableOf(m, r));
}
