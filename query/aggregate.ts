/**
 * HDQuery `aggregate` (ours, versioned; docs/query.md "Aggregates"): partial aggregates the Storage
 * Nodes compute over the records that pass `sub_queries`, after `field_mask`. This module checks
 * the JSON's shape (what every reader checks the same way); the types of the fields are checked by
 * the node against the dataset schema (engine-rs `AggregatePlan`, error 11 naming the path).
 */
import { isObject, jsonType, refuseUnknownKeys } from './filter';
import { QueryError } from './queryError';

/** The version of `aggregate` this build writes and reads. */
export const AGGREGATE_VERSION = 1;
/** The partial version of a frame that merges several batches and completes them (HDQuery `merge_batches`). */
export const MERGED_PARTIAL_VERSION = 2;
/** Most batches one merged partial completes (bounds the frame: about 140 bytes a batch). */
export const MAX_MERGED_BATCHES = 4096;
/** Most group-by keys. */
export const MAX_GROUP_KEYS = 4;
/** Most measures. */
export const MAX_MEASURES = 32;
/** Groups per batch when the query does not say. */
export const DEFAULT_MAX_GROUPS = 65_536;
/** The largest `max_groups`. */
export const MAX_GROUPS_LIMIT = 1 << 20;

/** An aggregate function; avg is sum + count, merged by the client. */
export type AggregateFn = 'count' | 'sum' | 'min' | 'max';
const FNS: readonly AggregateFn[] = ['count', 'sum', 'min', 'max'];

/** A group-by key: an integer, enumerated, boolean or timestamp field (`bucket`: timestamps, `ts - ts % bucket`). */
export interface AggregateKey {
  readonly field: string;
  readonly bucket?: number;
}

/** A measure; `count` without a field is count(*). */
export interface AggregateMeasure {
  readonly fn: AggregateFn;
  readonly field?: string;
}

/** The `aggregate` key of an HDQuery (wire names). */
export interface AggregateSpec {
  readonly version: number;
  readonly group_by?: readonly AggregateKey[];
  readonly measures: readonly AggregateMeasure[];
  readonly max_groups?: number;
}

/** One group of a batch's partial: keys and measures as exact decimal strings, in query order. */
export interface AggregateGroup {
  readonly k: readonly string[];
  readonly m: readonly string[];
}

/** A batch's partial aggregate, the payload of an HDWP aggregate frame. */
export interface AggregatePartial {
  /** 1: one batch's partial (its eob follows); 2: merged, completing `batches`. */
  readonly v: number;
  readonly groups: readonly AggregateGroup[];
  /** v2 only: the batches this partial covers and completes, each with its count of matching records. */
  readonly batches?: readonly (readonly [batchId: string, records: number])[];
}

function name(v: unknown, path: string): string {
  if (typeof v !== 'string' || v === '' || v.length > 255) throw new QueryError(path, `expected a field name, got ${jsonType(v)}`);
  return v;
}

function posInt(v: unknown, path: string, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) throw new QueryError(path, `expected an integer 1..${max}, got ${jsonType(v)}`);
  return v;
}

/** Checks the shape of an `aggregate` value and returns it typed. Throws {@link QueryError} naming the path. */
export function checkAggregate(raw: unknown): AggregateSpec {
  const root = 'aggregate';
  if (!isObject(raw)) throw new QueryError(root, `expected an object, got ${jsonType(raw)}`);
  refuseUnknownKeys(raw, ['version', 'group_by', 'measures', 'max_groups'], root);
  if (raw.version !== AGGREGATE_VERSION) throw new QueryError(`${root}.version`, `expected ${AGGREGATE_VERSION} (the version this build reads), got ${jsonType(raw.version)}`);
  const keysRaw = raw.group_by ?? [];
  if (!Array.isArray(keysRaw)) throw new QueryError(`${root}.group_by`, `expected an array, got ${jsonType(keysRaw)}`);
  if (keysRaw.length > MAX_GROUP_KEYS) throw new QueryError(`${root}.group_by`, `${keysRaw.length} keys, at most ${MAX_GROUP_KEYS} are pushed down`);
  const group_by = keysRaw.map((k, i): AggregateKey => {
    const path = `${root}.group_by[${i}]`;
    if (!isObject(k)) throw new QueryError(path, `expected { field, bucket? }, got ${jsonType(k)}`);
    refuseUnknownKeys(k, ['field', 'bucket'], path);
    const field = name(k.field, `${path}.field`);
    return k.bucket === undefined ? { field } : { field, bucket: posInt(k.bucket, `${path}.bucket`, Number.MAX_SAFE_INTEGER) };
  });
  const ms = raw.measures;
  if (!Array.isArray(ms) || ms.length === 0 || ms.length > MAX_MEASURES) throw new QueryError(`${root}.measures`, `expected an array of 1 to ${MAX_MEASURES} measures, got ${Array.isArray(ms) ? `${ms.length}` : jsonType(ms)}`);
  const measures = ms.map((m, i): AggregateMeasure => {
    const path = `${root}.measures[${i}]`;
    if (!isObject(m)) throw new QueryError(path, `expected { fn, field? }, got ${jsonType(m)}`);
    refuseUnknownKeys(m, ['fn', 'field'], path);
    if (typeof m.fn !== 'string' || !FNS.includes(m.fn as AggregateFn)) throw new QueryError(`${path}.fn`, `expected one of ${FNS.join(', ')}, got ${jsonType(m.fn)}`);
    const fn = m.fn as AggregateFn;
    if (m.field === undefined) {
      if (fn !== 'count') throw new QueryError(`${path}.field`, 'missing (only count takes no field)');
      return { fn };
    }
    return { fn, field: name(m.field, `${path}.field`) };
  });
  return {
    version: AGGREGATE_VERSION,
    ...(group_by.length > 0 ? { group_by } : {}),
    measures,
    ...(raw.max_groups === undefined ? {} : { max_groups: posInt(raw.max_groups, `${root}.max_groups`, MAX_GROUPS_LIMIT) }),
  };
}

const BATCH_HEX = /^[0-9a-f]{128}$/;

/** The `batches` of a v2 partial, checked: 1..MAX_MERGED_BATCHES distinct [hex id, records] pairs. */
function mergedBatches(raw: unknown): readonly (readonly [string, number])[] | undefined {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_MERGED_BATCHES) return undefined;
  const seen = new Set<string>();
  for (const e of raw) {
    if (!Array.isArray(e) || e.length !== 2) return undefined;
    const [id, n] = e as unknown[];
    if (typeof id !== 'string' || !BATCH_HEX.test(id) || seen.has(id)) return undefined;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return undefined;
    seen.add(id);
  }
  return raw as (readonly [string, number])[];
}

/**
 * Parses the JSON payload of an aggregate frame. Throws {@link QueryError} (path `aggregate`) when
 * it is not a v1 partial of string arrays, or a v2 one whose `batches` are 1..4096 distinct pairs of
 * a lower-case 128-digit hex batch id and a record count.
 */
export function parseAggregatePartial(json: string): AggregatePartial {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new QueryError('aggregate', `the partial is not JSON: ${(err as Error).message}`);
  }
  const ok =
    isObject(raw) &&
    (raw.v === AGGREGATE_VERSION || raw.v === MERGED_PARTIAL_VERSION) &&
    Array.isArray(raw.groups) &&
    raw.groups.every((g: unknown) => isObject(g) && Array.isArray(g.k) && Array.isArray(g.m) && g.k.every((x: unknown) => typeof x === 'string') && g.m.every((x: unknown) => typeof x === 'string'));
  if (!ok || !isObject(raw)) throw new QueryError('aggregate', 'the partial is not { v: 1 | 2, groups: [{ k: [string], m: [string] }] }');
  if (raw.v === MERGED_PARTIAL_VERSION) {
    if (mergedBatches(raw.batches) === undefined) throw new QueryError('aggregate', `a v2 partial needs batches: 1..${MAX_MERGED_BATCHES} distinct [lower-case hex batch id, record count] pairs`);
  } else if (raw.batches !== undefined) {
    throw new QueryError('aggregate', 'a v1 partial has no batches (its eob completes it)');
  }
  return raw as unknown as AggregatePartial;
}
