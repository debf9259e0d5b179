/**
 * CommandGetSqlInfo's answer: the server's SqlInfo values (FlightSql.proto's SqlInfo ids) as the
 * table Flight SQL defines — info_name uint32 and value a dense union of string, bool, int64,
 * int32 bitmask, string list and int32→int32-list map (every member declared, even unused ones,
 * because clients read the union by its declared type ids).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as arrow from 'apache-arrow';

/** A SqlInfo value: text, flag, 64-bit number, int32 (bitmask / enum) or a list of text. */
export type SqlInfoValue = { readonly string: string } | { readonly bool: boolean } | { readonly bigint: bigint } | { readonly int32: number } | { readonly strings: readonly string[] };

/** The SqlInfo ids hd_sql answers (names as in FlightSql.proto). */
export const SQL_INFO_IDS = {
  FLIGHT_SQL_SERVER_NAME: 0,
  FLIGHT_SQL_SERVER_VERSION: 1,
  FLIGHT_SQL_SERVER_ARROW_VERSION: 2,
  FLIGHT_SQL_SERVER_READ_ONLY: 3,
  FLIGHT_SQL_SERVER_SQL: 4,
  FLIGHT_SQL_SERVER_SUBSTRAIT: 5,
  FLIGHT_SQL_SERVER_TRANSACTION: 8,
  FLIGHT_SQL_SERVER_CANCEL: 9,
  FLIGHT_SQL_SERVER_BULK_INGESTION: 10,
  FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT: 100,
  SQL_DDL_CATALOG: 500,
  SQL_DDL_SCHEMA: 501,
  SQL_DDL_TABLE: 502,
  SQL_IDENTIFIER_QUOTE_CHAR: 504,
  SQL_ALL_TABLES_ARE_SELECTABLE: 506,
} as const;

// apache-arrow's own version: the Arrow format library that writes the answers.
// (apache-arrow's "exports" hide its package.json from require, so read it beside its entry point.)
const ARROW_JS_VERSION: string = (JSON.parse(readFileSync(path.join(path.dirname(require.resolve('apache-arrow')), 'package.json'), 'utf8')) as { version: string }).version;

/** The values of this server (statement timeout in ms; transactions: none = 0). */
export function serverSqlInfo(version: string, timeoutMs: number): Map<number, SqlInfoValue> {
  const i = SQL_INFO_IDS;
  return new Map<number, SqlInfoValue>([
    [i.FLIGHT_SQL_SERVER_NAME, { string: 'hd_sql' }],
    [i.FLIGHT_SQL_SERVER_VERSION, { string: version }],
    [i.FLIGHT_SQL_SERVER_ARROW_VERSION, { string: ARROW_JS_VERSION }],
    [i.FLIGHT_SQL_SERVER_READ_ONLY, { bool: true }],
    [i.FLIGHT_SQL_SERVER_SQL, { bool: true }],
    [i.FLIGHT_SQL_SERVER_SUBSTRAIT, { bool: false }],
    [i.FLIGHT_SQL_SERVER_TRANSACTION, { int32: 0 }],
    [i.FLIGHT_SQL_SERVER_CANCEL, { bool: false }],
    [i.FLIGHT_SQL_SERVER_BULK_INGESTION, { bool: false }],
    [i.FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT, { int32: Math.min(timeoutMs, 0x7fffffff) }],
    [i.SQL_DDL_CATALOG, { bool: false }],
    [i.SQL_DDL_SCHEMA, { bool: false }],
    [i.SQL_DDL_TABLE, { bool: false }],
    [i.SQL_IDENTIFIER_QUOTE_CHAR, { string: '"' }],
    [i.SQL_ALL_TABLES_ARE_SELECTABLE, { bool: true }],
  ]);
}

const listOfUtf8 = (): arrow.List => new arrow.List(new arrow.Field('item', new arrow.Utf8(), true));
const unionType = (): arrow.DenseUnion =>
  new arrow.DenseUnion(
    [0, 1, 2, 3, 4, 5],
    [
      new arrow.Field('string_value', new arrow.Utf8(), true),
      new arrow.Field('bool_value', new arrow.Bool(), true),
      new arrow.Field('bigint_value', new arrow.Int64(), true),
      new arrow.Field('int32_bitmask', new arrow.Int32(), true),
      new arrow.Field('string_list', listOfUtf8(), true),
      new arrow.Field(
        'int32_to_int32_list_map',
        new arrow.Map_(new arrow.Field('entries', new arrow.Struct<{ key: arrow.Int32; value: arrow.List<arrow.Int32> }>([new arrow.Field('key', new arrow.Int32(), false), new arrow.Field('value', new arrow.List(new arrow.Field('item', new arrow.Int32(), true)), true)]), false)),
        true,
      ),
    ],
  );

/** The result schema of CommandGetSqlInfo. */
export const sqlInfoSchema = (): arrow.Schema => new arrow.Schema([new arrow.Field('info_name', new arrow.Uint32(), false), new arrow.Field('value', unionType(), false)]);

/** The SqlInfo table for the requested ids (none requested: all), in id order. */
export function sqlInfoTable(values: ReadonlyMap<number, SqlInfoValue>, requested: readonly number[]): arrow.Table {
  const ids = (requested.length > 0 ? requested.filter((id) => values.has(id)) : [...values.keys()]).sort((a, b) => a - b);
  const strs: string[] = [];
  const bools: boolean[] = [];
  const bigs: bigint[] = [];
  const ints: number[] = [];
  const lists: string[][] = [];
  const typeIds = new Int8Array(ids.length);
  const offsets = new Int32Array(ids.length);
  ids.forEach((id, row) => {
    const v = values.get(id) as SqlInfoValue;
    const put = (t: number, arr: unknown[], x: unknown): void => {
      typeIds[row] = t;
      offsets[row] = arr.length;
      arr.push(x);
    };
    if ('string' in v) put(0, strs, v.string);
    else if ('bool' in v) put(1, bools, v.bool);
    else if ('bigint' in v) put(2, bigs, v.bigint);
    else if ('int32' in v) put(3, ints, v.int32);
    else put(4, lists, [...v.strings]);
  });
  const type = unionType();
  const kids = type.children;
  const child = (i: number, xs: unknown[]): arrow.Data => arrow.vectorFromArray(xs, (kids[i] as arrow.Field).type).data[0] as arrow.Data;
  const emptyMap = arrow.makeData({ type: (kids[5] as arrow.Field).type as arrow.Map_, length: 0, nullCount: 0, valueOffsets: new Int32Array(1), child: arrow.makeData({ type: ((kids[5] as arrow.Field).type as arrow.Map_).children[0]?.type as arrow.Struct, length: 0, nullCount: 0, children: [arrow.makeData({ type: new arrow.Int32(), length: 0 }), arrow.vectorFromArray([], new arrow.List(new arrow.Field('item', new arrow.Int32(), true))).data[0] as arrow.Data] }) });
  const union = arrow.makeData({ type, length: ids.length, nullCount: 0, typeIds, valueOffsets: offsets, children: [child(0, strs), child(1, bools), child(2, bigs), child(3, ints), child(4, lists), emptyMap] });
  const names = arrow.vectorFromArray(ids, new arrow.Uint32());
  return new arrow.Table(sqlInfoSchema(), [new arrow.RecordBatch(sqlInfoSchema(), arrow.makeData({ type: new arrow.Struct(sqlInfoSchema().fields), length: ids.length, nullCount: 0, children: [names.data[0] as arrow.Data, union] }))]);
}
