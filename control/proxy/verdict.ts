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

/** A value as a bigint when the field is an integer-like type and the text is an integer. */
function num(f: FieldInfo, text: string): bigint | undefined {
  if (!ORDERED.has(f.type) || f.enum !== undefined || f.timeReference !== undefined) return undefined;
  if (!/^-?\d+$|^0x[0-9a-fA-F]+$/.test(text)) return undefined;
  try {
    return BigInt(text);
  } catch {
    return undefined;
  }
}

/** True when no value in [min, max] can satisfy `flt` (false when unknown: never exclude on doubt). */
function cannotMatch(f: FieldInfo, flt: Filter, min: bigint, max: bigint): boolean {
  const v = flt.value === undefined ? undefined : num(f, flt.value);
  switch (flt.op) {
    case 'eq':
      return v !== undefined && (v < min || v > max);
    case 'lt':
      return v !== undefined && min >= v;
    case 'le':
      return v !== undefined && min > v;
    case 'gt':
      return v !== undefined && max <= v;
    case 'ge':
      return v !== undefined && max < v;
    case 'between': {
      const [lo, hi] = (flt.values ?? []).map((x) => num(f, x));
      return lo !== undefined && hi !== undefined && (hi < min || lo > max);
    }
    case 'in': {
      const vs = (flt.values ?? []).map((x) => num(f, x));
      return vs.every((x) => x !== undefined && (x < min || x > max));
    }
    default:
      return false;
  }
}

/** True when `sub` cannot match any record of a batch with filter `bf`. */
function branchExcluded(schema: Schema, sub: SubQuery, bf: BatchFilter, hidden: readonly ByteRange[]): boolean {
  return sub.filters.some((flt) => {
    const f = schema.field(flt.field);
    const r = bf[flt.field];
    if (!f || !r || overlapsAny(f.offset, f.size, hidden)) return false;
    const min = num(f, r.min);
    const max = num(f, r.max);
    if (min === undefined || max === undefined) return false;
    // An empty zone (min > max) holds no value: nothing in it matches.
    if (min > max) return true;
    return cannotMatch(f, flt, min, max);
  });
}

/**
 * The verdict for the (rewritten) branches of a query over `batchIds`; fields sharing a byte with
 * `hidden` (the identity's hidden byte ranges) are never read.
 */
export function computeVerdict(schema: Schema, subQueries: readonly SubQuery[], batchIds: readonly string[], filters: ReadonlyMap<string, BatchFilter>, hidden: readonly ByteRange[] = []): Verdict {
  const known = batchIds.filter((b) => filters.has(b)).length;
  const mode: Verdict['bloomrf_mode'] = batchIds.length === 0 || known === 0 ? 'off' : known === batchIds.length ? 'minmax' : 'partial';
  if (subQueries.length === 0) return { would_exclude_batches: [], bloomrf_mode: mode };
  const out = batchIds.filter((b) => {
    const bf = filters.get(b);
    return bf !== undefined && subQueries.every((sq) => branchExcluded(schema, sq, bf, hidden));
  });
  return { would_exclude_batches: out, bloomrf_mode: mode };
}
