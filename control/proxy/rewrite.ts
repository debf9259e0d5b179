/**
 * The Proxy's query rewrite (docs/proxy.md, "Rewrite"): the policy's decision applied to a query,
 * rewriting instead of rejecting, as the reference says.
 *
 * - A field the identity may not see is overwritten with 0x00 bytes: in the record field mask sent
 *   with the query (`field_mask`, 0xff where visible, 0x00 over hidden fields; Storage Nodes AND
 *   every record they send with it), and in any branch that filters on it, which becomes the
 *   unmatchable pair `field == 00…00` and `field == ff…ff` under a full mask: the branch matches
 *   nothing, so what comes back never depends on a hidden value.
 * - An enforced constraint is applied with 0xff bytes: a `masked_eq` filter whose mask is 0xff over
 *   the field (or the policy's own mask) is added to every branch, so the filter holds whatever
 *   the query asked; a query without branches gets one holding just the constraints.
 * - `allow: false` hides every field and makes every branch unmatchable.
 *
 * Hiding is decided by **byte range**, not by name: the bytes of the fields the policy hides are
 * hidden, and so is every field that shares one of those bytes — an `overlay` view (docs/schema.md)
 * of a hidden field, or a hidden overlay's underlying field. Such a field is listed in
 * `hidden_fields`, a branch filtering on it is made unmatchable like one filtering on the hidden
 * field itself, and the verdict never reads its range (verdict.ts): otherwise a `uint32` overlay of
 * a hidden `ipv4` would select, or exclude batches by, the hidden value under another name.
 */
import type { Schema } from '../../engine-rs/schema';
import { RecordCodec } from '../../engine-rs/codec';
import type { PolicyDecision } from '../../engine-rs/policy';
import type { Filter, SubQuery } from '../../query/filter';
import { MAX_FILTERS_PER_SUB_QUERY } from '../../query/filter';
import { HttpError } from '../http/errors';

/** What the rewrite did, for the result event. */
export interface RewriteSummary {
  readonly allow: boolean;
  /** Hidden fields of the dataset (policy names not in the schema are left out). */
  readonly hidden_fields: readonly string[];
  /** Constraints added to every branch. */
  readonly constraints: number;
  /** Branches made unmatchable because they filtered on a hidden field (or nothing was allowed). */
  readonly unmatchable_branches: number;
}

/** A rewritten query's parts. */
export interface Rewritten {
  readonly subQueries: SubQuery[];
  /** Hex of one record's mask (0xff visible, 0x00 hidden); undefined when everything is visible. */
  readonly fieldMask: string | undefined;
  /** The hidden byte ranges of a record, ascending and merged (empty when everything is visible). */
  readonly hiddenRanges: readonly ByteRange[];
  readonly summary: RewriteSummary;
}

/** Bytes `[offset, offset + size)` of a record. */
export interface ByteRange {
  readonly offset: number;
  readonly size: number;
}

/** The runs of 0x00 in a record mask: the hidden byte ranges. */
export function hiddenRangesOf(mask: Buffer): ByteRange[] {
  const out: ByteRange[] = [];
  for (let i = 0; i < mask.length; ) {
    if (mask[i] !== 0) {
      i++;
      continue;
    }
    const start = i;
    while (i < mask.length && mask[i] === 0) i++;
    out.push({ offset: start, size: i - start });
  }
  return out;
}

/** Whether `[offset, offset + size)` shares a byte with any of `ranges`. */
export function overlapsAny(offset: number, size: number, ranges: readonly ByteRange[]): boolean {
  return ranges.some((r) => offset < r.offset + r.size && r.offset < offset + size);
}

/** The branch that matches no record: the field pinned to all 0x00 and to all 0xff at once. */
function unmatchable(field: string, size: number): SubQuery {
  return {
    filters: [
      { field, op: 'masked_eq', value: '00'.repeat(size), mask: 'ff'.repeat(size) },
      { field, op: 'masked_eq', value: 'ff'.repeat(size), mask: 'ff'.repeat(size) },
    ],
  };
}

/** The bytes of `value` in `field` as a record would carry them (the ingest text form). */
function fieldBytes(schema: Schema, codec: RecordCodec, field: string, value: string): Buffer {
  const f = schema.field(field);
  if (!f) throw new HttpError('policy_error', `the policy constrains field '${field}', which dataset '${schema.id}' does not have`);
  const { record, errors } = codec.encodeRecord({ [field]: value });
  const bad = errors.find((e) => e.field === field);
  if (bad) throw new HttpError('policy_error', `the policy's constraint value ${JSON.stringify(value)} does not encode into '${field}' (${f.type}): ${bad.reason}`);
  return record.subarray(f.offset, f.offset + f.size);
}

/** Applies `decision` to `subQueries` of a query on `schema` (see the module doc). */
export function rewriteQuery(schema: Schema, subQueries: readonly SubQuery[], decision: PolicyDecision): Rewritten {
  const names = new Set(schema.fields.map((f) => f.name));
  const named = decision.allow ? [...new Set(decision.hiddenFields)].filter((f) => names.has(f)) : schema.fields.map((f) => f.name);
  // The hidden bytes: those of every field the policy names (all of them without `allow`).
  const mask = Buffer.alloc(schema.recordSize, 0xff);
  for (const name of named) {
    const f = schema.field(name);
    if (f) mask.fill(0, f.offset, f.offset + f.size);
  }
  const hiddenRanges = hiddenRangesOf(mask);
  // Hidden: every field sharing a hidden byte (the named ones, and their overlays either way), in schema order.
  const hidden = schema.fields.filter((f) => overlapsAny(f.offset, f.size, hiddenRanges)).map((f) => f.name);
  const hiddenSet = new Set(hidden);
  const fieldMask = hiddenRanges.length > 0 ? mask.toString('hex') : undefined;
  const first = schema.fields[0];
  if (!decision.allow) {
    return { subQueries: [unmatchable(first.name, first.size)], fieldMask, hiddenRanges, summary: { allow: false, hidden_fields: hidden, constraints: 0, unmatchable_branches: Math.max(1, subQueries.length) } };
  }
  const codec = new RecordCodec(schema);
  const constraintFilters: Filter[] = decision.constraints.map((c) => {
    const f = schema.field(c.field);
    const bytes = fieldBytes(schema, codec, c.field, c.value);
    const m = c.mask === undefined ? Buffer.alloc(bytes.length, 0xff) : Buffer.from(c.mask, 'hex');
    if (!/^(?:[0-9a-fA-F]{2})+$/.test(c.mask ?? 'ff') || m.length !== bytes.length) {
      throw new HttpError('policy_error', `the policy's mask for '${c.field}' must be ${f?.size ?? bytes.length} bytes of hex`);
    }
    const v = Buffer.from(bytes.map((b, i) => b & m[i]));
    return { field: c.field, op: 'masked_eq', value: v.toString('hex'), mask: m.toString('hex') };
  });
  let unmatched = 0;
  const branches: SubQuery[] = subQueries.map((sq) => {
    const probe = sq.filters.find((f) => hiddenSet.has(f.field));
    if (probe) {
      unmatched++;
      const f = schema.field(probe.field);
      return unmatchable(probe.field, f ? f.size : 1);
    }
    return { filters: [...sq.filters, ...constraintFilters] };
  });
  if (branches.length === 0 && constraintFilters.length > 0) branches.push({ filters: constraintFilters });
  branches.forEach((b, i) => {
    if (b.filters.length > MAX_FILTERS_PER_SUB_QUERY) {
      throw new HttpError('invalid_query', `sub_queries[${i}]: with the policy's ${constraintFilters.length} constraints it holds ${b.filters.length} filters, the limit is ${MAX_FILTERS_PER_SUB_QUERY}`);
    }
  });
  return { subQueries: branches, fieldMask, hiddenRanges, summary: { allow: true, hidden_fields: hidden, constraints: constraintFilters.length, unmatchable_branches: unmatched } };
}
