/**
 * Merging the Storage Nodes' partial aggregates (issue #17; docs/sql.md "Aggregate pushdown"):
 * exact, in BigInt — counts and sums add, min/max compare the stored integers (numeric: the
 * scaled integer) — then one Arrow row per group, keyed as the record path would key it (an enum
 * code becomes its label's dictionary index, so codes the schema does not define fall into the
 * default label's group exactly as rows do), with each aggregate call's value as text for the outer
 * statement to cast (avg already finalised as DuckDB finalises it).
 */
import * as arrow from 'apache-arrow';
import { arrowSchemaFor } from '../engine-rs/decode';
import type { FieldInfo, Schema } from '../engine-rs/schema';
import { enumDictionaries } from '../local/localSql';
import { MEASURE_PREFIX, type AggregateOutput, type AggregatePlan, type AvgPath } from './aggregatePushdown';

/** One batch's partial result (v1), or several batches' merged on a node (v2): the `aggregate` frame's payload (docs/hdwp.md). */
export interface AggregatePartial {
  readonly v: 1 | 2;
  readonly groups: readonly { readonly k: readonly string[]; readonly m: readonly string[] }[];
}

/** A partial that does not fit the plan (wrong arity, not an integer, a key out of its type's range). */
export class AggregateMergeError extends Error {
  readonly code = 'ERR_AGGREGATE_MERGE';
}

interface Group {
  readonly key: readonly (bigint | number)[];
  readonly m: (bigint | undefined)[];
}

const INT_RANGE: Readonly<Record<string, readonly [bigint, bigint]>> = {
  uint8: [0n, 255n], uint16: [0n, 65535n], uint32: [0n, 4294967295n], uint64: [0n, 18446744073709551615n],
  int8: [-128n, 127n], int16: [-32768n, 32767n], int32: [-2147483648n, 2147483647n], int64: [-(2n ** 63n), 2n ** 63n - 1n],
  timestamp: [-(2n ** 63n), 2n ** 63n - 1n], boolean: [0n, 1n],
};

function integer(text: unknown, what: string): bigint {
  if (typeof text !== 'string' || !/^-?\d{1,80}$/.test(text)) throw new AggregateMergeError(`${what}: ${JSON.stringify(text)} is not a decimal integer`);
  return BigInt(text);
}

/** Merges partials for one plan; `table()` gives the merged groups. */
export class AggregateMerger {
  private readonly groups = new Map<string, Group>();
  /** Per key: code → dictionary index (enum keys only). */
  private readonly codeIndex: (((code: bigint) => number) | undefined)[];
  private readonly arrowSchema: arrow.Schema;
  private readonly dictionaries: Map<string, arrow.Vector>;

  constructor(
    private readonly plan: AggregatePlan,
    schema: Schema,
  ) {
    this.arrowSchema = arrowSchemaFor(schema);
    this.dictionaries = enumDictionaries(schema, this.arrowSchema);
    this.codeIndex = plan.keys.map((k) => (k.enum ? indexOfCode(schema, k) : undefined));
  }

  /** Adds one partial: a batch's (v1) or several batches' merged on a node (v2). @throws AggregateMergeError */
  add(partial: AggregatePartial): void {
    if (partial === null || typeof partial !== 'object' || (partial.v !== 1 && partial.v !== 2) || !Array.isArray(partial.groups)) throw new AggregateMergeError('a partial that is not version 1 or 2 with a groups list');
    const { keys } = this.plan;
    const ms = this.plan.spec.measures;
    for (const g of partial.groups) {
      if (!Array.isArray(g?.k) || !Array.isArray(g?.m) || g.k.length !== keys.length || g.m.length !== ms.length) throw new AggregateMergeError(`a group with ${g?.k?.length} keys and ${g?.m?.length} measures, expected ${keys.length} and ${ms.length}`);
      const key = keys.map((f, i) => {
        const v = integer(g.k[i], `key ${f.name}`);
        const range = INT_RANGE[f.type];
        if (!range || v < range[0] || v > range[1]) throw new AggregateMergeError(`key ${f.name}: ${v} is out of the range of ${f.type}`);
        const toIndex = this.codeIndex[i];
        return toIndex ? toIndex(v) : v;
      });
      const id = key.join(',');
      let group = this.groups.get(id);
      if (!group) this.groups.set(id, (group = { key, m: ms.map(() => undefined) }));
      for (let i = 0; i < ms.length; i++) {
        const v = integer(g.m[i], `measure ${i}`);
        const was = group.m[i];
        const fn = ms[i]!.fn;
        group.m[i] = was === undefined ? v : fn === 'min' ? (v < was ? v : was) : fn === 'max' ? (v > was ? v : was) : was + v;
      }
    }
  }

  /** Number of merged groups so far. */
  get size(): number {
    return this.groups.size;
  }

  /**
   * The merged groups: key columns as the dataset's own (same Arrow fields, enum dictionaries),
   * then `hd_agg_m<i>` per output (text, or Float64 for avg). A global aggregate (no keys) always
   * has its one row, as DuckDB gives one over no rows: count 0, the others null.
   * @throws AggregateMergeError when a value cannot be presented exactly
   */
  table(): arrow.Table {
    const { keys, outputs } = this.plan;
    const rows = [...this.groups.values()];
    if (keys.length === 0 && rows.length === 0) rows.push({ key: [], m: this.plan.spec.measures.map((m) => (m.fn === 'count' ? 0n : undefined)) });
    const fields: arrow.Field[] = [];
    const data: arrow.Data[] = [];
    keys.forEach((f, i) => {
      const af = this.arrowSchema.fields.find((x) => x.name === f.name);
      if (!af) throw new AggregateMergeError(`no column for key ${f.name}`);
      fields.push(af);
      data.push(keyData(af, rows.map((r) => r.key[i]!), this.dictionaries.get(f.name)));
    });
    outputs.forEach((o, i) => {
      if (o.fn === 'avg') {
        const f = new arrow.Field(`${MEASURE_PREFIX}${i}`, new arrow.Float64(), true);
        fields.push(f);
        data.push(arrow.vectorFromArray(rows.map((r) => avgOf(r.m[o.measures[0]!], r.m[o.measures[1]!] ?? 0n, o)), new arrow.Float64()).data[0]!);
      } else {
        fields.push(new arrow.Field(`${MEASURE_PREFIX}${i}`, new arrow.Utf8(), true));
        data.push(arrow.vectorFromArray(rows.map((r) => textOf(r.m[o.measures[0]!], o)), new arrow.Utf8()).data[0]!);
      }
    });
    const schema = new arrow.Schema(fields);
    const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(fields), length: rows.length, nullCount: 0, children: data }));
    return new arrow.Table([batch]);
  }

  /** Label vectors of the enum keys, for registering the table (sql/sqlEngine.ts). */
  get keyDictionaries(): Map<string, arrow.Vector> {
    return new Map([...this.dictionaries].filter(([name]) => this.plan.keys.some((k) => k.name === name)));
  }
}

/** code → dictionary index as the decoder maps it: labels in code order, then the default label. */
function indexOfCode(schema: Schema, f: FieldInfo): (code: bigint) => number {
  const e = schema.enums[f.enum!]!;
  const byCode = Object.entries(e.values).sort(([, a], [, b]) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  const labels = [...new Set([...byCode.map(([l]) => l), e.defaultLabel])];
  const index = new Map<bigint, number>();
  for (const [label, code] of byCode) if (!index.has(BigInt(code))) index.set(BigInt(code), labels.indexOf(label));
  const fallback = labels.indexOf(e.defaultLabel);
  return (code) => index.get(code) ?? fallback;
}

function keyData(af: arrow.Field, values: readonly (bigint | number)[], dictionary?: arrow.Vector): arrow.Data {
  const t = af.type as arrow.DataType;
  const n = values.length;
  if (arrow.DataType.isDictionary(t)) return arrow.makeData({ type: t, length: n, nullCount: 0, data: Int32Array.from(values, Number), dictionary: dictionary as arrow.Vector<arrow.Utf8> }) as arrow.Data;
  if (arrow.DataType.isBool(t)) return arrow.vectorFromArray(values.map((v) => v !== 0n), new arrow.Bool()).data[0]!;
  if (arrow.DataType.isInt(t)) {
    const it = t as arrow.Int;
    const arr = it.bitWidth === 64 ? (it.isSigned ? BigInt64Array.from(values, (v) => BigInt(v)) : BigUint64Array.from(values, (v) => BigInt(v))) : it.bitWidth === 32 ? (it.isSigned ? Int32Array.from(values, Number) : Uint32Array.from(values, Number)) : it.bitWidth === 16 ? (it.isSigned ? Int16Array.from(values, Number) : Uint16Array.from(values, Number)) : it.isSigned ? Int8Array.from(values, Number) : Uint8Array.from(values, Number);
    return arrow.makeData({ type: it, length: n, nullCount: 0, data: arr as never });
  }
  throw new AggregateMergeError(`key column ${af.name} of type ${String(t)} is not supported`);
}

/** The value of a count / sum / min / max as text DuckDB casts exactly (numeric: its scaled integer with the point put back). */
function textOf(v: bigint | undefined, o: AggregateOutput): string | null {
  if (v === undefined) return null;
  const scale = o.field?.type === 'numeric' && o.fn !== 'count' ? (o.field.scale ?? 0) : 0;
  return scale > 0 ? scaled(v, scale) : v.toString();
}

function scaled(v: bigint, scale: number): string {
  const neg = v < 0n;
  const digits = (neg ? -v : v).toString().padStart(scale + 1, '0');
  return `${neg ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/**
 * avg as DuckDB finalises it from the exact sum and count (avg.cpp): int16 inputs divide in
 * double, wider ones in long double (x86-64: 64-bit significand) rounded to double; a numeric's
 * divisor is count × 10^scale. @throws AggregateMergeError where that cannot be reproduced exactly.
 */
export function avgOf(sum: bigint | undefined, count: bigint, o: Pick<AggregateOutput, 'avgPath' | 'scale'>): number | null {
  if (sum === undefined || count === 0n) return null;
  const scale = o.scale ?? 0;
  if (o.avgPath === 'double') return Number(sum) / (Number(count) * 10 ** scale);
  const den = count * 10n ** BigInt(scale);
  const bits = LONG_DOUBLE_BITS;
  const limit = 1n << BigInt(bits);
  if ((sum < 0n ? -sum : sum) >= limit || den >= limit || scale > 22 || bits === 0) throw new AggregateMergeError('an average DuckDB computes with rounding the merge cannot reproduce');
  return roundedQuotient(sum, den, bits);
}

/** Bits of the C `long double` significand DuckDB uses (0: unknown platform, averages fall back). */
const LONG_DOUBLE_BITS = process.arch === 'x64' || process.arch === 'ia32' ? 64 : process.arch === 'arm64' && process.platform === 'linux' ? 113 : process.arch === 'arm64' ? 53 : 0;

/** `num / den` rounded to `bits` significant bits (ties to even), then to a double (ties to even). */
export function roundedQuotient(num: bigint, den: bigint, bits: number): number {
  if (num === 0n) return 0;
  const neg = num < 0n;
  const n = neg ? -num : num;
  const bitLen = (x: bigint): number => x.toString(2).length;
  // q = n * 2^k / den with exactly `bits` bits.
  let k = bits - (bitLen(n) - bitLen(den));
  const quotient = (kk: number): [bigint, bigint, bigint] => {
    const a = kk >= 0 ? n << BigInt(kk) : n;
    const b = kk >= 0 ? den : den << BigInt(-kk);
    return [a / b, a % b, b];
  };
  let [q, r, d] = quotient(k);
  while (bitLen(q) > bits) [q, r, d] = quotient(--k);
  while (bitLen(q) < bits) [q, r, d] = quotient(++k);
  const twice = 2n * r;
  if (twice > d || (twice === d && (q & 1n) === 1n)) q += 1n;
  if (bitLen(q) > bits) {
    q >>= 1n; // q was 2^bits exactly
    k -= 1;
  }
  // To 53 bits: drop the low bits, ties to even (q is exact now).
  const drop = BigInt(bits - 53);
  let q53 = q;
  if (drop > 0n) {
    const low = q & ((1n << drop) - 1n);
    const half = 1n << (drop - 1n);
    q53 = q >> drop;
    if (low > half || (low === half && (q53 & 1n) === 1n)) q53 += 1n;
  }
  const v = Number(q53) * 2 ** (Number(drop) - k);
  return neg ? -v : v;
}

export type { AvgPath };
