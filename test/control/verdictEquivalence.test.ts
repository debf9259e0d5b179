/**
 * The filter verdict prepared once per query (verdict.ts) against a plain statement of its rule,
 * the one it replaced (each filter judged afresh for each batch): the same excluded batches and
 * mode over many seeded queries, filters and hidden ranges — every op, empty zones, unparsable
 * values and bounds, fields that are missing, hidden, enums or not ordered. And the parsed bounds
 * it keeps per range object never outlive the range's text.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema, type FieldInfo } from '../../engine-rs/schema';
import { computeVerdict, type BatchFilter, type Verdict } from '../../control/proxy/verdict';
import { overlapsAny, type ByteRange } from '../../control/proxy/rewrite';
import type { Filter, SubQuery } from '../../query/filter';

const schema = Schema.parse({
  id: 'flows',
  record_size: 48,
  time_field: 'ts',
  enums: { proto: { values: { tcp: 6, udp: 17 } } },
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'src_ip', type: 'ipv4', offset: 8, size: 4 },
    { name: 'port', type: 'uint16', offset: 12, size: 2 },
    { name: 'proto', type: 'uint8', offset: 14, size: 1, enum: 'proto' },
    { name: 'temp', type: 'int32', offset: 16, size: 4 },
    { name: 'bytes', type: 'uint64', offset: 20, size: 8 },
    { name: 'ratio', type: 'float', offset: 28, size: 4 },
    { name: 'name', type: 'string', offset: 32, size: 16 },
  ],
});

/** The rule as first written: every filter of every batch parsed and judged on its own. */
function reference(subQueries: readonly SubQuery[], batchIds: readonly string[], filters: ReadonlyMap<string, BatchFilter>, hidden: readonly ByteRange[]): Verdict {
  const ORDERED = new Set(['uint8', 'uint16', 'uint32', 'uint64', 'uint128', 'uint256', 'int8', 'int16', 'int32', 'int64', 'int128', 'int256', 'timestamp', 'ipv4', 'ipv6']);
  const num = (f: FieldInfo, text: string): bigint | undefined => {
    if (!ORDERED.has(f.type) || f.enum !== undefined || f.timeReference !== undefined) return undefined;
    if (!/^-?\d+$|^0x[0-9a-fA-F]+$/.test(text)) return undefined;
    try {
      return BigInt(text);
    } catch {
      return undefined;
    }
  };
  const cannotMatch = (f: FieldInfo, flt: Filter, min: bigint, max: bigint): boolean => {
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
      case 'in':
        return (flt.values ?? []).map((x) => num(f, x)).every((x) => x !== undefined && (x < min || x > max));
      default:
        return false;
    }
  };
  const excluded = (sub: SubQuery, bf: BatchFilter): boolean =>
    sub.filters.some((flt) => {
      const f = schema.field(flt.field);
      const r = bf[flt.field];
      if (!f || !r || overlapsAny(f.offset, f.size, hidden)) return false;
      const min = num(f, r.min);
      const max = num(f, r.max);
      if (min === undefined || max === undefined) return false;
      return min > max || cannotMatch(f, flt, min, max);
    });
  const known = batchIds.filter((b) => filters.has(b)).length;
  const mode: Verdict['bloomrf_mode'] = batchIds.length === 0 || known === 0 ? 'off' : known === batchIds.length ? 'minmax' : 'partial';
  if (subQueries.length === 0) return { would_exclude_batches: [], bloomrf_mode: mode };
  return { would_exclude_batches: batchIds.filter((b) => filters.has(b) && subQueries.every((sq) => excluded(sq, filters.get(b) as BatchFilter))), bloomrf_mode: mode };
}

/** A seeded generator (xorshift32): the same cases every run. */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

const t = suite('filter verdict: prepared per query = judged per batch');

t('the same verdicts over seeded queries, filters and hidden ranges', () => {
  const r = rng(17);
  const FIELDS = ['ts', 'src_ip', 'port', 'proto', 'temp', 'bytes', 'ratio', 'name', 'nope'];
  const OPS: Filter['op'][] = ['eq', 'lt', 'le', 'gt', 'ge', 'between', 'in', 'ne', 'masked_eq', 'prefix'];
  const val = (): string => ['-5', '0', '7', '10', '19', '20', '33', '0x0a', 'abc', '1.5', ''][r(11)] as string;
  const bound = (): string => ['-5', '0', '5', '10', '20', '30', '0x14', 'x', '99999999999999999999'][r(9)] as string;
  let excludedSome = 0;
  for (let c = 0; c < 400; c++) {
    const ids = Array.from({ length: 1 + r(12) }, (_, i) => `b${i}`);
    const filters = new Map<string, BatchFilter>();
    for (const b of ids) {
      if (r(6) === 0) continue;
      const bf: Record<string, { min: string; max: string }> = {};
      for (const f of FIELDS) if (r(3) !== 0) bf[f] = { min: bound(), max: bound() };
      filters.set(b, bf);
    }
    const subs: SubQuery[] = Array.from({ length: r(3) + (r(8) === 0 ? 0 : 1) }, () => ({
      filters: Array.from({ length: r(4) }, () => {
        const op = OPS[r(OPS.length)] as Filter['op'];
        const field = FIELDS[r(FIELDS.length)] as string;
        return op === 'between' || op === 'in' ? { field, op, values: Array.from({ length: op === 'in' ? r(4) : 2 }, val) } : { field, op, value: val() };
      }),
    }));
    const hidden: ByteRange[] = [[], [], [{ offset: 12, size: 2 }], [{ offset: 0, size: 1 }, { offset: 20, size: 8 }]][r(4)] as ByteRange[];
    const want = reference(subs, ids, filters, hidden);
    // Twice: the second time the ranges' parsed bounds are the kept ones.
    assert.equal(computeVerdict(schema, subs, ids, filters, hidden), want, JSON.stringify({ subs, hidden }));
    assert.equal(computeVerdict(schema, subs, ids, filters, hidden), want);
    if (want.would_exclude_batches.length > 0) excludedSome++;
  }
  // The cases exercise exclusion, not only its absence.
  assert.ok(excludedSome > 40, String(excludedSome));
});

t('a range whose text changes is parsed again', () => {
  const range = { min: '0', max: '10' };
  const filters = new Map<string, BatchFilter>([['a', { port: range }]]);
  const q: SubQuery[] = [{ filters: [{ field: 'port', op: 'eq', value: '20' }] }];
  assert.equal(computeVerdict(schema, q, ['a'], filters).would_exclude_batches, ['a']);
  range.max = '30';
  assert.equal(computeVerdict(schema, q, ['a'], filters).would_exclude_batches, []);
  // The same range under a hidden field excludes nothing.
  range.max = '10';
  assert.equal(computeVerdict(schema, q, ['a'], filters, [{ offset: 13, size: 1 }]).would_exclude_batches, []);
  assert.equal(computeVerdict(schema, q, ['a'], filters).would_exclude_batches, ['a']);
});

t.run();
