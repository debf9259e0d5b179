/**
 * Local aggregations: the reference's set_local_aggregations (it discards its input; ours applies it).
 * A JSON config of group keys and aggregates, validated when set (errors name the key), applied to
 * every later result as SQL over that result in the client's DuckDB. docs/sdk-local.md has the format.
 */
import type * as arrow from 'apache-arrow';
import { argsError } from './localSqlError';
import type { LocalSql } from './localSql';
import type { QueryOptions } from './localSqlSession';
import { quoteIdentifier } from './sqlIdentifier';

/** The aggregate functions a config may name. */
export type AggregateFunction = 'count' | 'sum' | 'min' | 'max' | 'avg';

/** One aggregate: `fn(column) AS as`; `count` without a column (or with `*`) counts rows. */
export interface AggregateSpec {
  readonly fn: AggregateFunction;
  readonly column?: string;
  readonly as?: string;
}

/** One ordering key: an output column name, or `{ column, desc }`. */
export type OrderSpec = string | { readonly column: string; readonly desc?: boolean };

/** The config JSON: `{ "group_by": [...], "aggregates": [...], "order_by"?: [...] }`. */
export interface LocalAggregationConfig {
  readonly group_by: readonly string[];
  readonly aggregates: readonly AggregateSpec[];
  readonly order_by?: readonly OrderSpec[];
}

const FUNCTIONS: readonly AggregateFunction[] = ['count', 'sum', 'min', 'max', 'avg'];
const TABLE = 'result';

function nonEmptyString(key: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') throw argsError(key, `must be a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function onlyKeys(key: string, o: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw argsError(key ? `${key}.${k}` : k, `unknown key (allowed: ${allowed.join(', ')})`);
}

/** The output name of an aggregate: its `as`, else `fn_column` (`count` for count(*)). */
export function outputName(a: AggregateSpec): string {
  return a.as ?? (a.column === undefined || a.column === '*' ? a.fn : `${a.fn}_${a.column}`);
}

/**
 * Parses and checks a config (JSON text or object). Empty text or null clears (returns undefined).
 * @throws LocalSqlError `ERR_LOCAL_ARGS` naming the key (`aggregates[1].fn`, `order_by[0]`, ...).
 */
export function parseLocalAggregations(config: string | LocalAggregationConfig | null | undefined): LocalAggregationConfig | undefined {
  if (config === null || config === undefined || (typeof config === 'string' && config.trim() === '')) return undefined;
  let o: unknown = config;
  if (typeof o === 'string') {
    try {
      o = JSON.parse(o);
    } catch (err) {
      throw argsError('config', `not valid JSON: ${(err as Error).message}`);
    }
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw argsError('config', 'must be a JSON object');
  const j = o as Record<string, unknown>;
  onlyKeys('', j, ['group_by', 'aggregates', 'order_by']);
  const groupBy = j['group_by'] ?? [];
  if (!Array.isArray(groupBy)) throw argsError('group_by', 'must be an array of column names');
  groupBy.forEach((g, i) => nonEmptyString(`group_by[${i}]`, g));
  const aggs = j['aggregates'] ?? [];
  if (!Array.isArray(aggs)) throw argsError('aggregates', 'must be an array of { fn, column, as }');
  if (aggs.length === 0 && groupBy.length === 0) throw argsError('aggregates', 'give at least one aggregate or one group_by column');
  const aggregates = aggs.map((a: unknown, i): AggregateSpec => {
    const key = `aggregates[${i}]`;
    if (typeof a !== 'object' || a === null || Array.isArray(a)) throw argsError(key, 'must be an object { fn, column, as }');
    const r = a as Record<string, unknown>;
    onlyKeys(key, r, ['fn', 'column', 'as']);
    const fn = r['fn'] as AggregateFunction;
    if (!FUNCTIONS.includes(fn)) throw argsError(`${key}.fn`, `must be one of ${FUNCTIONS.join(', ')}, got ${JSON.stringify(r['fn'])}`);
    const column = r['column'] === undefined ? undefined : nonEmptyString(`${key}.column`, r['column']);
    if (fn !== 'count' && (column === undefined || column === '*')) throw argsError(`${key}.column`, `${fn} needs a column`);
    const as = r['as'] === undefined ? undefined : nonEmptyString(`${key}.as`, r['as']);
    return { fn, column, as };
  });
  const names = [...(groupBy as string[]), ...aggregates.map(outputName)];
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw argsError('aggregates', `output column "${dup}" appears twice; name one with "as"`);
  const orderRaw = j['order_by'];
  let orderBy: OrderSpec[] | undefined;
  if (orderRaw !== undefined) {
    if (!Array.isArray(orderRaw)) throw argsError('order_by', 'must be an array of column names or { column, desc }');
    orderBy = orderRaw.map((x: unknown, i): OrderSpec => {
      const key = `order_by[${i}]`;
      let column: string;
      let desc = false;
      if (typeof x === 'string') column = nonEmptyString(key, x);
      else if (typeof x === 'object' && x !== null && !Array.isArray(x)) {
        const r = x as Record<string, unknown>;
        onlyKeys(key, r, ['column', 'desc']);
        column = nonEmptyString(`${key}.column`, r['column']);
        if (r['desc'] !== undefined && typeof r['desc'] !== 'boolean') throw argsError(`${key}.desc`, 'must be true or false');
        desc = r['desc'] === true;
      } else throw argsError(key, 'must be a column name or { column, desc }');
      if (!names.includes(column)) throw argsError(key, `"${column}" is not an output column (${names.join(', ')})`);
      return { column, desc };
    });
  }
  return { group_by: groupBy as string[], aggregates, order_by: orderBy };
}

/**
 * The SQL a config runs over a result table named `result`.
 * @throws LocalSqlError `ERR_LOCAL_ARGS` naming the key of a column the result does not have.
 */
export function localAggregationSql(config: LocalAggregationConfig, schema: arrow.Schema): string {
  const have = new Set(schema.fields.map((f) => f.name));
  const check = (key: string, c: string): string => {
    if (!have.has(c)) throw argsError(key, `no column "${c}" in the result (columns: ${[...have].join(', ')})`);
    return quoteIdentifier(c);
  };
  const groups = config.group_by.map((g, i) => check(`group_by[${i}]`, g));
  const aggs = config.aggregates.map((a, i) => {
    const arg = a.column === undefined || a.column === '*' ? '*' : check(`aggregates[${i}].column`, a.column);
    return `${a.fn}(${arg}) AS ${quoteIdentifier(outputName(a))}`;
  });
  let sql = `SELECT ${[...groups, ...aggs].join(', ')} FROM ${quoteIdentifier(TABLE)}`;
  if (groups.length > 0) sql += ` GROUP BY ${groups.join(', ')}`;
  const order = (config.order_by ?? []).map((o) => (typeof o === 'string' ? quoteIdentifier(o) : `${quoteIdentifier(o.column)}${o.desc ? ' DESC' : ''}`));
  if (order.length > 0) sql += ` ORDER BY ${order.join(', ')}`;
  return sql;
}

/**
 * The query client's local aggregation setting: once set, every later result is grouped and
 * aggregated in the client before it is returned; `set(null)` (or empty text) turns it off.
 * @example
 * aggs.set('{"group_by":["proto"],"aggregates":[{"fn":"count","as":"flows"},{"fn":"sum","column":"bytes"}],"order_by":[{"column":"flows","desc":true}]}');
 * const perProto = await aggs.apply(result); // proto, flows, sum_bytes
 */
export class LocalAggregations {
  private current: LocalAggregationConfig | undefined;

  /** @param localSql the client's DuckDB, where the aggregation runs. */
  constructor(private readonly localSql: LocalSql) {}

  /** The active config, or undefined when off. */
  get config(): LocalAggregationConfig | undefined {
    return this.current;
  }

  /**
   * Replaces the config; the old one stays when the new one is malformed.
   * @throws LocalSqlError `ERR_LOCAL_ARGS` naming the offending key.
   */
  set(config: string | LocalAggregationConfig | null | undefined): void {
    this.current = parseLocalAggregations(config);
  }

  /** `table` aggregated by the active config (unchanged when none is set). */
  async apply(table: arrow.Table, opts: QueryOptions = {}): Promise<arrow.Table> {
    if (!this.current) return table;
    const sql = localAggregationSql(this.current, table.schema);
    return this.localSql.applySql(table, sql, { ...opts, tableName: TABLE });
  }
}
