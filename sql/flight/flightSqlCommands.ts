/**
 * The Flight SQL commands the door understands, decoded from the google.protobuf.Any a client packs
 * into a FlightDescriptor, Ticket or Action body, and the catalog commands' answers (catalogs,
 * schemas, tables with their Arrow schemas, table types) over the datasets. hd_sql has one
 * catalog `hd` with one schema `public`, a table per dataset named by its id: the same tables, in
 * the same order and with the same column types as the PostgreSQL catalog lists them
 * (sql/pgcatalog/pgModel.ts), so ADBC's GetObjects / GetTableSchema agree with pgjdbc's getColumns.
 */
import * as arrow from 'apache-arrow';
import { ProtoWireError } from '../../lib/protoWire';
import type { Catalog } from '../catalog';
import { DATABASE } from '../pgcatalog/oids';
import { PgModel, type PgRelation } from '../pgcatalog/pgModel';
import { SqlError } from '../sqlError';
import { SQL_TYPE_PREFIX, SqlMessage, unpackAny } from './flightProto';
import { serializeSchema } from './ipcMessages';

/** The catalog and schema every dataset lives in. */
export const CATALOG = DATABASE.name;
/** The one database schema. */
export const DB_SCHEMA = 'public';
/** The table type of every dataset. */
export const TABLE_TYPE = 'TABLE';

/** A decoded Flight SQL command. */
export type FlightSqlCommand =
  | { readonly kind: 'statementQuery'; readonly query: string }
  | { readonly kind: 'ticketStatementQuery'; readonly handle: Buffer }
  | { readonly kind: 'preparedStatementQuery'; readonly handle: Buffer }
  | { readonly kind: 'getCatalogs' }
  | { readonly kind: 'getDbSchemas'; readonly catalog?: string; readonly schemaPattern?: string }
  | { readonly kind: 'getTables'; readonly catalog?: string; readonly schemaPattern?: string; readonly tablePattern?: string; readonly tableTypes: readonly string[]; readonly includeSchema: boolean }
  | { readonly kind: 'getTableTypes' }
  | { readonly kind: 'getSqlInfo'; readonly info: readonly number[] }
  | { readonly kind: 'createPreparedStatement'; readonly query: string }
  | { readonly kind: 'closePreparedStatement'; readonly handle: Buffer };

/** Writes answer unsupported_statement (hd_sql is read-only). */
const READ_ONLY = new Set(['CommandStatementUpdate', 'CommandPreparedStatementUpdate', 'CommandStatementIngest', 'CommandStatementSubstraitPlan', 'ActionBeginTransactionRequest', 'ActionBeginSavepointRequest', 'ActionEndTransactionRequest', 'ActionEndSavepointRequest']);

/**
 * Decodes the Any in `bytes`.
 * @throws SqlError invalid_statement (InvalidArgument) for bytes that are not an Any of a Flight SQL
 *   message; unsupported_statement (Unimplemented) for a command this server does not implement.
 */
export function decodeCommand(bytes: Uint8Array, where: string): FlightSqlCommand {
  try {
    const any = unpackAny(bytes);
    if (!any.typeUrl.startsWith(SQL_TYPE_PREFIX)) throw new SqlError('invalid_statement', `${where}: ${JSON.stringify(any.typeUrl)} is not a Flight SQL command (type URLs start with ${SQL_TYPE_PREFIX})`);
    const name = any.typeUrl.slice(SQL_TYPE_PREFIX.length);
    const m = SqlMessage.decode(any.value);
    switch (name) {
      case 'CommandStatementQuery':
        return { kind: 'statementQuery', query: m.string(1, 'query') ?? '' };
      case 'TicketStatementQuery':
        return { kind: 'ticketStatementQuery', handle: m.bytes(1, 'statement_handle') ?? Buffer.alloc(0) };
      case 'CommandPreparedStatementQuery':
        return { kind: 'preparedStatementQuery', handle: m.bytes(1, 'prepared_statement_handle') ?? Buffer.alloc(0) };
      case 'CommandGetCatalogs':
        return { kind: 'getCatalogs' };
      case 'CommandGetDbSchemas':
        return { kind: 'getDbSchemas', ...opt('catalog', m.string(1, 'catalog')), ...opt('schemaPattern', m.string(2, 'db_schema_filter_pattern')) };
      case 'CommandGetTables':
        return {
          kind: 'getTables',
          ...opt('catalog', m.string(1, 'catalog')),
          ...opt('schemaPattern', m.string(2, 'db_schema_filter_pattern')),
          ...opt('tablePattern', m.string(3, 'table_name_filter_pattern')),
          tableTypes: m.strings(4, 'table_types'),
          includeSchema: m.bool(5, 'include_schema'),
        };
      case 'CommandGetTableTypes':
        return { kind: 'getTableTypes' };
      case 'CommandGetSqlInfo':
        return { kind: 'getSqlInfo', info: m.uint32s(1) };
      case 'ActionCreatePreparedStatementRequest':
        return { kind: 'createPreparedStatement', query: m.string(1, 'query') ?? '' };
      case 'ActionClosePreparedStatementRequest':
        return { kind: 'closePreparedStatement', handle: m.bytes(1, 'prepared_statement_handle') ?? Buffer.alloc(0) };
      default:
        if (READ_ONLY.has(name)) throw new SqlError('unsupported_statement', `${where}: ${name} is not supported: hd_sql is read-only (queries only, no writes or transactions)`);
        throw new SqlError('unsupported_statement', `${where}: the Flight SQL command ${name} is not implemented by hd_sql`);
    }
  } catch (err) {
    if (err instanceof ProtoWireError) throw new SqlError('invalid_statement', `${where}: not a Flight SQL command (${err.message})`, { cause: err });
    throw err;
  }
}

const opt = <K extends string>(k: K, v: string | undefined): { [P in K]?: string } => (v === undefined ? {} : ({ [k]: v } as { [P in K]?: string }));

/** A SQL LIKE pattern (`%`, `_`, `\` escape) as an anchored, case-sensitive RegExp. */
export function likePattern(p: string): RegExp {
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i] as string;
    if (c === '\\' && i + 1 < p.length) re += (p[++i] as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (c === '%') re += '.*';
    else if (c === '_') re += '.';
    else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's');
}

const utf8 = (xs: readonly (string | null)[]): arrow.Vector => arrow.vectorFromArray([...xs], new arrow.Utf8());
const f = (name: string, type: arrow.DataType, nullable: boolean): arrow.Field => new arrow.Field(name, type, nullable);

/** The result schemas of the catalog commands (FlightSql.proto). */
export const CATALOG_SCHEMAS = {
  getCatalogs: new arrow.Schema([f('catalog_name', new arrow.Utf8(), false)]),
  getDbSchemas: new arrow.Schema([f('catalog_name', new arrow.Utf8(), true), f('db_schema_name', new arrow.Utf8(), false)]),
  getTables: new arrow.Schema([f('catalog_name', new arrow.Utf8(), true), f('db_schema_name', new arrow.Utf8(), true), f('table_name', new arrow.Utf8(), false), f('table_type', new arrow.Utf8(), false)]),
  getTablesWithSchema: new arrow.Schema([f('catalog_name', new arrow.Utf8(), true), f('db_schema_name', new arrow.Utf8(), true), f('table_name', new arrow.Utf8(), false), f('table_type', new arrow.Utf8(), false), f('table_schema', new arrow.Binary(), false)]),
  getTableTypes: new arrow.Schema([f('table_type', new arrow.Utf8(), false)]),
} as const;

/** A table of `schema` from columns (vectors in field order). */
function tableOf(schema: arrow.Schema, cols: arrow.Vector[]): arrow.Table {
  const n = cols[0]?.length ?? 0;
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: cols.map((c) => c.data[0] as arrow.Data) });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
}

/** CommandGetCatalogs' answer. */
export const catalogsTable = (): arrow.Table => tableOf(CATALOG_SCHEMAS.getCatalogs, [utf8([CATALOG])]);

/** CommandGetDbSchemas' answer (the catalog `""` means "no catalog": none match). */
export function dbSchemasTable(c: { catalog?: string; schemaPattern?: string }): arrow.Table {
  const hit = (c.catalog === undefined || c.catalog === CATALOG) && (c.schemaPattern === undefined || likePattern(c.schemaPattern).test(DB_SCHEMA));
  return tableOf(CATALOG_SCHEMAS.getDbSchemas, [utf8(hit ? [CATALOG] : []), utf8(hit ? [DB_SCHEMA] : [])]);
}

/** The names of the datasets a CommandGetTables selects, in catalog order. */
export function selectTables(ids: readonly string[], c: { catalog?: string; schemaPattern?: string; tablePattern?: string; tableTypes: readonly string[] }): string[] {
  if (c.catalog !== undefined && c.catalog !== CATALOG) return [];
  if (c.schemaPattern !== undefined && !likePattern(c.schemaPattern).test(DB_SCHEMA)) return [];
  if (c.tableTypes.length > 0 && !c.tableTypes.includes(TABLE_TYPE)) return [];
  const re = c.tablePattern === undefined ? undefined : likePattern(c.tablePattern);
  return ids.filter((id) => !re || re.test(id));
}

/** The datasets of `catalog` a CommandGetTables selects, in the PostgreSQL catalog's order. */
export function selectCatalogTables(catalog: Catalog, c: { catalog?: string; schemaPattern?: string; tablePattern?: string; tableTypes: readonly string[] }): PgRelation[] {
  const datasets = PgModel.of(catalog).datasets;
  const names = new Set(selectTables(datasets.map((r) => r.name), c));
  return datasets.filter((r) => names.has(r.name));
}

/**
 * A dataset's Arrow schema as a query answers it (`described`), each column with the Flight SQL
 * column metadata: `ARROW:FLIGHT:SQL:TYPE_NAME` is the SQL type of the type mapping — what
 * information_schema.columns.data_type says — and precision/scale for numeric(p,s).
 */
export function flightTableSchema(rel: PgRelation, described: arrow.Schema): arrow.Schema {
  const byName = new Map(rel.columns.map((c) => [c.name, c]));
  const fields = described.fields.map((f) => {
    const c = byName.get(f.name);
    if (!c) return f;
    const m = new Map(f.metadata);
    m.set('ARROW:FLIGHT:SQL:CATALOG_NAME', CATALOG);
    m.set('ARROW:FLIGHT:SQL:DB_SCHEMA_NAME', DB_SCHEMA);
    m.set('ARROW:FLIGHT:SQL:TABLE_NAME', rel.name);
    m.set('ARROW:FLIGHT:SQL:TYPE_NAME', c.sqlType);
    m.set('ARROW:FLIGHT:SQL:IS_READ_ONLY', '1');
    if (c.typeOid === 1700 && c.typmod >= 4) {
      m.set('ARROW:FLIGHT:SQL:PRECISION', String((c.typmod - 4) >> 16));
      m.set('ARROW:FLIGHT:SQL:SCALE', String((c.typmod - 4) & 0xffff));
    }
    return new arrow.Field(f.name, f.type, f.nullable, m);
  });
  return new arrow.Schema(fields, described.metadata);
}

/** CommandGetTables' answer; `schemas` (present when include_schema) holds each table's Arrow schema. */
export function tablesTable(names: readonly string[], schemas: readonly arrow.Schema[] | undefined): arrow.Table {
  const cols = [utf8(names.map(() => CATALOG)), utf8(names.map(() => DB_SCHEMA)), utf8(names), utf8(names.map(() => TABLE_TYPE))];
  if (!schemas) return tableOf(CATALOG_SCHEMAS.getTables, cols);
  return tableOf(CATALOG_SCHEMAS.getTablesWithSchema, [...cols, arrow.vectorFromArray(schemas.map((s) => new Uint8Array(serializeSchema(s))), new arrow.Binary())]);
}

/** CommandGetTableTypes' answer. */
export const tableTypesTable = (): arrow.Table => tableOf(CATALOG_SCHEMAS.getTableTypes, [utf8([TABLE_TYPE])]);
