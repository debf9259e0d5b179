/**
 * Filter, FilterOp and SubQuery (docs/query.md, "SubQuery", "Filter", "FilterOp", "Limits"): their
 * JSON shape and the checks that need no schema — which operands each operator takes, the branch,
 * filter and `in` limits, and that no sub-query is empty. Whether a value fits its field is the
 * schema's business (the scan kernel's filter compiler, engine-rs/scan.ts).
 */
import { closest } from '../lib/suggest';
import { QueryError } from './queryError';

/** The comparison operators of a {@link Filter}. */
export const FILTER_OPS = [
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'between',
  'in',
  'is_null',
  'is_not_null',
  'prefix',
  'masked_eq',
  'list_contains',
  'not_list_contains',
] as const;

/** One of {@link FILTER_OPS}. */
export type FilterOp = (typeof FILTER_OPS)[number];

/** One predicate against one field. Values are text whatever the field's type (docs/query.md, "Filter"). */
export interface Filter {
  readonly field: string;
  readonly op: FilterOp;
  /** The operand of the one-value operators. */
  readonly value?: string;
  /** `between`: `[lo, hi]`; `in`: 1..1024 values. */
  readonly values?: readonly string[];
  /** `masked_eq`: hex, as long as `value`. */
  readonly mask?: string;
}

/** A group of filters, AND-ed; the sub-queries of a query are OR-ed. Never empty. */
export interface SubQuery {
  readonly filters: readonly Filter[];
}

/** At most this many sub-queries (branches) in one query; the reference names sixteen. */
export const MAX_BRANCHES = 16;
/** At most this many filters in one sub-query. */
export const MAX_FILTERS_PER_SUB_QUERY = 64;
/** At most this many values in one `in` filter. */
export const MAX_IN_VALUES = 1024;

/** Which operands an operator takes. */
type Operands = 'value' | 'range' | 'list' | 'none' | 'masked';

const OPERANDS: Readonly<Record<FilterOp, Operands>> = {
  eq: 'value',
  ne: 'value',
  lt: 'value',
  le: 'value',
  gt: 'value',
  ge: 'value',
  prefix: 'value',
  list_contains: 'value',
  not_list_contains: 'value',
  between: 'range',
  in: 'list',
  is_null: 'none',
  is_not_null: 'none',
  masked_eq: 'masked',
};

const FILTER_KEYS = ['field', 'op', 'value', 'values', 'mask'] as const;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/** A plain JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Refuses keys of `obj` that are not in `known`, suggesting the closest one. */
export function refuseUnknownKeys(obj: Record<string, unknown>, known: readonly string[], path: string): void {
  for (const k of Object.keys(obj)) {
    if (known.includes(k)) continue;
    const hint = closest(k, known);
    const at = path === '' ? k : `${path}.${k}`;
    throw new QueryError(at, `unknown key${hint ? ` (did you mean '${hint}'?)` : ''}; allowed: ${known.join(', ')}`);
  }
}

/** A JSON type name for messages. */
export function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`.slice(0, 60);
}

function checkFilter(raw: unknown, path: string): Filter {
  if (!isObject(raw)) throw new QueryError(path, `expected a Filter object {field, op, ...}, got ${jsonType(raw)}`);
  refuseUnknownKeys(raw, FILTER_KEYS, path);
  const { field, op, value, values, mask } = raw;
  if (typeof field !== 'string' || field === '') throw new QueryError(`${path}.field`, `expected a field name (a non-empty string), got ${jsonType(field)}`);
  if (typeof op !== 'string' || !(FILTER_OPS as readonly string[]).includes(op)) {
    const hint = typeof op === 'string' ? closest(op, FILTER_OPS) : undefined;
    throw new QueryError(`${path}.op`, `expected one of ${FILTER_OPS.join(', ')}, got ${jsonType(op)}${hint ? ` (did you mean '${hint}'?)` : ''}`);
  }
  const fop = op as FilterOp;
  const kind = OPERANDS[fop];
  const refuse = (key: string, what: string): never => {
    throw new QueryError(`${path}.${key}`, `'${fop}' ${what}`);
  };
  const str = (key: string, v: unknown): string => {
    if (typeof v !== 'string') refuse(key, `takes a string here (values are text whatever the field's type), got ${jsonType(v)}`);
    return v as string;
  };
  if (kind !== 'value' && kind !== 'masked' && value !== undefined) refuse('value', `takes no 'value'${kind === 'none' ? '' : "; use 'values'"}`);
  if (kind !== 'range' && kind !== 'list' && values !== undefined) refuse('values', "takes no 'values'");
  if (kind !== 'masked' && mask !== undefined) refuse('mask', "takes no 'mask' (only masked_eq does)");
  switch (kind) {
    case 'none':
      return { field, op: fop };
    case 'value':
      if (value === undefined) refuse('value', "needs a 'value'");
      return { field, op: fop, value: str('value', value) };
    case 'masked': {
      if (value === undefined) refuse('value', "needs a 'value' (hex)");
      if (mask === undefined) refuse('mask', "needs a 'mask' (hex, as long as the value)");
      const v = str('value', value);
      const m = str('mask', mask);
      if (!HEX.test(v)) refuse('value', 'takes hex (2 digits a byte)');
      if (!HEX.test(m)) refuse('mask', 'takes hex (2 digits a byte)');
      if (m.length !== v.length) refuse('mask', `must be as long as the value (${v.length / 2} bytes), got ${m.length / 2}`);
      return { field, op: fop, value: v.toLowerCase(), mask: m.toLowerCase() };
    }
    case 'range':
    case 'list': {
      if (values === undefined) refuse('values', kind === 'range' ? "needs 'values': [lo, hi]" : "needs 'values': [v, ...]");
      if (!Array.isArray(values)) refuse('values', `takes an array of strings, got ${jsonType(values)}`);
      const list = values as unknown[];
      if (kind === 'range' && list.length !== 2) refuse('values', `takes exactly 2 values [lo, hi], got ${list.length}`);
      if (kind === 'list' && (list.length < 1 || list.length > MAX_IN_VALUES)) refuse('values', `takes 1..${MAX_IN_VALUES} values, got ${list.length}`);
      return { field, op: fop, values: list.map((v, i) => str(`values[${i}]`, v)) };
    }
  }
}

/**
 * Checks `sub_queries`: an array of at most {@link MAX_BRANCHES} non-empty sub-queries of at most
 * {@link MAX_FILTERS_PER_SUB_QUERY} filters. Throws {@link QueryError} naming the key.
 */
export function checkSubQueries(raw: unknown): SubQuery[] {
  if (!Array.isArray(raw)) throw new QueryError('sub_queries', `expected an array of SubQuery, got ${jsonType(raw)}`);
  if (raw.length > MAX_BRANCHES) throw new QueryError('sub_queries', `too many branches: ${raw.length} sub-queries, the limit is ${MAX_BRANCHES}`, true);
  return raw.map((sq, i): SubQuery => {
    const path = `sub_queries[${i}]`;
    if (!isObject(sq)) throw new QueryError(path, `expected a SubQuery object {filters: [...]}, got ${jsonType(sq)}`);
    refuseUnknownKeys(sq, ['filters'], path);
    if (!Array.isArray(sq.filters)) throw new QueryError(`${path}.filters`, `expected an array of Filter, got ${jsonType(sq.filters)}`);
    if (sq.filters.length === 0) throw new QueryError(`${path}.filters`, 'an empty sub-query is refused: it would match every record inside an OR; leave the sub-query out instead');
    if (sq.filters.length > MAX_FILTERS_PER_SUB_QUERY) throw new QueryError(`${path}.filters`, `${sq.filters.length} filters, the limit is ${MAX_FILTERS_PER_SUB_QUERY}`);
    return { filters: sq.filters.map((f, j) => checkFilter(f, `${path}.filters[${j}]`)) };
  });
}

/** The JSON form of a filter (only the keys it has). */
export function filterJson(f: Filter): Record<string, unknown> {
  return {
    field: f.field,
    op: f.op,
    ...(f.value !== undefined ? { value: f.value } : {}),
    ...(f.values !== undefined ? { values: [...f.values] } : {}),
    ...(f.mask !== undefined ? { mask: f.mask } : {}),
  };
}
