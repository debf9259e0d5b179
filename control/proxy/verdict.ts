/**
 * The filter verdict of the query result event: which of the named batches the Proxy expects to
 * deliver no record, from each batch's filter (the per-field min/max a segment keeps for the Proxy,
 * docs/segment.md). The client compares it with the batches that did deliver records.
 *
 * `bloomrf_mode` says what the verdict rests on: `minmax` (a batch filter was known for every named
 * batch), `partial` (for some: the others are never excluded), `off` (for none: nothing excluded).
 * The name is the reference's; our batch filters are min/max ranges, not bloomRF filters.
 *
 * Hidden bytes never count: a field sharing a byte with a field the policy hides (rewrite.ts) has
 * no range here and its filters exclude nothing, so which batches are listed never depends on a
 * hidden value; the Storage Nodes are not even asked for such ranges (storageNodeFilters.ts).
 */
import type { FieldInfo, Schema } from '../../engine-rs/schema';
import type { Filter, SubQuery } from '../../query/filter';
import { overlapsAny, type ByteRange } from './rewrite';

/** The per-field range of one batch: min and max as the field's text form (decimal for numbers). */
export type BatchFilter = Readonly<Record<string, { readonly min: string; readonly max: string }>>;

/** Where per-batch filters come from (the Storage Nodes' batch filters, through the topology). */
export interface BatchFilterSource {
  /**
   * Filters of the batches it knows, by batch id hex; batches it does not know are absent. No
   * range of a field sharing a byte with `hidden` (the identity's hidden byte ranges) is given.
   */
  filters(dataset: string, batchIds: readonly string[], hidden?: readonly ByteRange[]): Promise<ReadonlyMap<string, BatchFilter>>;
}

/** A source that knows no batch filter (the verdict is then `off`). */
export const NO_BATCH_FILTERS: BatchFilterSource = { filters: async () => new Map() };

/** The two fields of the verdict in the result event. */
export interface Verdict {
  readonly would_exclude_batches: string[];
  readonly bloomrf_mode: 'minmax' | 'partial' | 'off';
}

const ORDERED = new Set(['uint8', 'uint16', 'uint32', 'uint64', 'uint128', 'uint256', 'int8', 'int16', 'int32', 'int64', 'int128', 'int256', 'timestamp', 'ipv4', 'ipv6']);

/** Whether the field's values compare as integers (an integer-like type, not an enum or time reference). */
function ordered(f: FieldInfo): boolean {
  return ORDERED.has(f.type) && f.enum === undefined && f.timeReference === undefined;
}

/** A value as a bigint when the field is an integer-like type and the text is an integer. */
function num(f: FieldInfo, text: string): bigint | undefined {
  return ordered(f) ? integer(text) : undefined;
}

/** A range's bounds as parsed, with the texts they were parsed from. */
interface Bounds {
  readonly minText: unknown;
  readonly maxText: unknown;
  /** Undefined when either text is not an integer. */
  readonly min: bigint | undefined;
  readonly max: bigint | undefined;
}

/**
 * Parsed bounds per range object: the kept filters (storageNodeFilters.ts) are the same objects
 * for every query, so each range is parsed once, not once per batch per statement. The texts are
 * compared on use (the same strings: a pointer check), so a changed range is parsed again.
 */
const parsed = new WeakMap<object, Bounds>();

const INTEGER = /^-?\d+$|^0x[0-9a-fA-F]+$/;

/** A decimal or 0x integer as a bigint (the texts {@link num} reads for an integer-like field). */
function integer(text: unknown): bigint | undefined {
  if (!INTEGER.test(text as string)) return undefined;
  try {
    return BigInt(text as string);
  } catch {
    return undefined;
  }
}

/** The bounds of range `r` (of an integer-like field). */
function boundsOf(r: { readonly min: string; readonly max: string }): Bounds {
  if (typeof r !== 'object') return { minText: undefined, maxText: undefined, min: undefined, max: undefined };
  const b = parsed.get(r);
  if (b !== undefined && b.minText === r.min && b.maxText === r.max) return b;
  const made: Bounds = { minText: r.min, maxText: r.max, min: integer(r.min), max: integer(r.max) };
  parsed.set(r, made);
  return made;
}

/** Whether no value in [min, max] (min <= max) can satisfy a filter. */
type CannotMatch = (min: bigint, max: bigint) => boolean;

/** One filter of a branch, ready to test against each batch's range of its field. */
interface FieldTest {
  readonly field: string;
  /** Null: only an empty range excludes (the op or its value cannot be compared). */
  readonly cannotMatch: CannotMatch | null;
}

/** `flt` as a test on [min, max], its values parsed once (null when nothing but an empty range excludes). */
function cannotMatchOf(f: FieldInfo, flt: Filter): CannotMatch | null {
  const v = flt.value === undefined ? undefined : num(f, flt.value);
  switch (flt.op) {
    case 'eq':
      return v === undefined ? null : (min, max) => v < min || v > max;
    case 'lt':
      return v === undefined ? null : (min) => min >= v;
    case 'le':
      return v === undefined ? null : (min) => min > v;
    case 'gt':
      return v === undefined ? null : (_min, max) => max <= v;
    case 'ge':
      return v === undefined ? null : (_min, max) => max < v;
    case 'between': {
      const [lo, hi] = (flt.values ?? []).map((x) => num(f, x));
      return lo === undefined || hi === undefined ? null : (min, max) => hi < min || lo > max;
    }
    case 'in': {
      const vs = (flt.values ?? []).map((x) => num(f, x));
      if (vs.some((x) => x === undefined)) return null;
      const known = vs as bigint[];
      return (min, max) => known.every((x) => x < min || x > max);
    }
    default:
      return null;
  }
}

/**
 * The tests of one branch: a filter on a field the schema lacks, that shares a hidden byte, or
 * whose type has no order, never excludes and is left out.
 */
function branchTests(schema: Schema, sub: SubQuery, hidden: readonly ByteRange[]): FieldTest[] {
  const out: FieldTest[] = [];
  for (const flt of sub.filters) {
    const f = schema.field(flt.field);
    if (!f || overlapsAny(f.offset, f.size, hidden) || !ordered(f)) continue;
    out.push({ field: flt.field, cannotMatch: cannotMatchOf(f, flt) });
  }
  return out;
}

/** True when a branch with `tests` cannot match any record of a batch with filter `bf`. */
function branchExcluded(tests: readonly FieldTest[], bf: BatchFilter): boolean {
  for (const t of tests) {
    const r = bf[t.field];
    if (!r) continue;
    const { min, max } = boundsOf(r);
    if (min === undefined || max === undefined) continue;
    // An empty zone (min > max) holds no value: nothing in it matches.
    if (min > max || (t.cannotMatch !== null && t.cannotMatch(min, max))) return true;
  }
  return false;
}

/**
 * The verdict for the (rewritten) branches of a query over `batchIds`; fields sharing a byte with
 * `hidden` (the identity's hidden byte ranges) are never read. The branches are prepared once per
 * query (fields, hidden bytes, values), so each batch costs a lookup and a comparison per filter.
 */
export function computeVerdict(schema: Schema, subQueries: readonly SubQuery[], batchIds: readonly string[], filters: ReadonlyMap<string, BatchFilter>, hidden: readonly ByteRange[] = []): Verdict {
  const branches = subQueries.map((sq) => branchTests(schema, sq, hidden));
  // No branch, or one no filter can exclude: no batch is excluded.
  const judge = branches.length > 0 && branches.every((t) => t.length > 0);
  // One pass: which batches are known, and which of them no branch can match.
  let known = 0;
  const out: string[] = [];
  for (const b of batchIds) {
    const bf = filters.get(b);
    if (bf === undefined) continue;
    known++;
    if (judge && branches.every((t) => branchExcluded(t, bf))) out.push(b);
  }
  const mode: Verdict['bloomrf_mode'] = batchIds.length === 0 || known === 0 ? 'off' : known === batchIds.length ? 'minmax' : 'partial';
  return { would_exclude_batches: out, bloomrf_mode: mode };
}
