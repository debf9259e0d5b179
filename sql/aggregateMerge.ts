/**
 * Merging the Storage Nodes' partial aggregates (issue #17; docs/sql.md "Aggregate pushdown"):
 * exact, in BigInt — counts and sums add, min/max compare the stored integers (numeric: the
 * scaled integer) — then one Arrow row per group, keyed as the record path would key it (an enum
 * code becomes its label's dictionary index, so codes the schema does not define fall into the
 * default label's group exactly as rows do; a key read as its bytes is written back into an empty
 * record and decoded by the project's decoder, and groups whose keys decode to the same value are
 * one group, as rows are), with each aggregate call's value as text for the outer statement to cast
 * (avg already finalised as DuckDB finalises it).
 */
import * as arrow from 'apache-arrow';
import { arrowSchemaFor, decodeRecordsSync } from '../engine-rs/decode';
import type { FieldInfo, Schema } from '../engine-rs/schema';
import { enumDictionaries } from '../local/localSql';
import { isByteKey, MEASURE_PREFIX, type AggregateMeasure, type AggregateOutput, type AggregatePlan, type AvgPath } from './aggregatePushdown';

/** One batch's partial result (v1), or several batches' merged on a node (v2): the `aggregate` frame's payload (docs/hdwp.md). */
export interface AggregatePartial {
  readonly v: 1 | 2;
  readonly groups: readonly { readonly k: readonly string[]; readonly m: readonly string[] }[];
}

/** A partial that does not fit the plan (wrong arity, not an integer, a key out of its type's range). */
export class AggregateMergeError extends Error {
  readonly code = 'ERR_AGGREGATE_MERGE';
}

/** One merged group: its key values (integers; enum keys as dictionary indexes) and exact measures (undefined: null). */
export interface MergedGroup {
  readonly key: readonly (bigint | number)[];
  readonly m: readonly (bigint | undefined)[];
}

interface Group extends MergedGroup {
  readonly m: (bigint | undefined)[];
}

const INT_RANGE: Readonly<Record<string, readonly [bigint, bigint]>> = {
  uint8: [0n, 255n], uint16: [0n, 65535n], uint32: [0n, 4294967295n], uint64: [0n, 18446744073709551615n],
  int8: [-128n, 127n], int16: [-32768n, 32767n], int32: [-2147483648n, 2147483647n], int64: [-(2n ** 63n), 2n ** 63n - 1n],
  timestamp: [-(2n ** 63n), 2n ** 63n - 1n], boolean: [0n, 1n],
};

/** Bytes of zero records decoded at once for byte keys (bounds the buffer; more rows take several batches). */
const DECODE_BYTES = 16 * 1024 * 1024;

function integer(text: unknown, what: string): bigint {
  if (typeof text !== 'string' || !/^-?\d{1,80}$/.test(text)) throw new AggregateMergeError(`${what}: ${JSON.stringify(text)} is not a decimal integer`);
  return BigInt(text);
}

/** What a merger of `plan` needs that depends only on the plan and its dataset's schema. */
interface PlanStatics {
  readonly schema: Schema;
  readonly arrowSchema: arrow.Schema;
  readonly dictionaries: ReadonlyMap<string, arrow.Vector>;
  readonly codeIndex: readonly (((code: bigint) => number) | undefined)[];
  readonly byteKeys: readonly number[];
  readonly ranges: readonly (readonly [bigint, bigint] | undefined)[];
}

const perPlan = new WeakMap<AggregatePlan, PlanStatics>();

/** Merges partials for one plan; `table()` gives the merged groups. */
export class AggregateMerger {
  private readonly groups = new Map<string, Group>();
  /** Per key: code → dictionary index (enum keys only). */
  private readonly codeIndex: readonly (((code: bigint) => number) | undefined)[];
  /** Per key: the range its partial text must lie in. */
  private readonly ranges: readonly (readonly [bigint, bigint] | undefined)[];
  /** Indexes of the keys read as their bytes (decoded in `table()`). */
  private readonly byteKeys: readonly number[];
  private readonly arrowSchema: arrow.Schema;
  /** Label vectors of enum columns (shared by the mergers of one plan: never modified). */
  private readonly dictionaries: ReadonlyMap<string, arrow.Vector>;

  constructor(
    private readonly plan: AggregatePlan,
    private readonly schema: Schema,
  ) {
    // What depends only on the plan is built once per plan: a repeated statement's merger is only its groups.
    let p = perPlan.get(plan);
    if (!p || p.schema !== schema) {
      const arrowSchema = arrowSchemaFor(schema);
      p = {
        schema,
        arrowSchema,
        dictionaries: enumDictionaries(schema, arrowSchema),
        codeIndex: plan.keys.map((k) => (k.enum ? indexOfCode(schema, k) : undefined)),
        byteKeys: plan.keys.flatMap((k, i) => (isByteKey(k) ? [i] : [])),
        ranges: plan.keys.map((k) => (isByteKey(k) ? [0n, (1n << BigInt(8 * k.size)) - 1n] : INT_RANGE[k.type])),
      };
      perPlan.set(plan, p);
    }
    this.arrowSchema = p.arrowSchema;
    this.dictionaries = p.dictionaries;
    this.codeIndex = p.codeIndex;
    this.byteKeys = p.byteKeys;
    this.ranges = p.ranges;
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
        const range = this.ranges[i];
        if (!range || v < range[0] || v > range[1]) throw new AggregateMergeError(`key ${f.name}: ${v} is out of the range of ${f.type}`);
        const toIndex = this.codeIndex[i];
        return toIndex ? toIndex(v) : v;
      });
      const id = key.join(',');
      let group = this.groups.get(id);
      if (!group) this.groups.set(id, (group = { key, m: ms.map(() => undefined) }));
      for (let i = 0; i < ms.length; i++) group.m[i] = merged(ms[i]!, group.m[i], integer(g.m[i], `measure ${i}`));
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
    const rows = this.mergedGroups();
    const fields: arrow.Field[] = keys.map((f) => {
      const af = this.arrowSchema.fields.find((x) => x.name === f.name);
      if (!af) throw new AggregateMergeError(`no column for key ${f.name}`);
      return af;
    });
    outputs.forEach((o, i) => fields.push(new arrow.Field(`${MEASURE_PREFIX}${i}`, o.fn === 'avg' ? new arrow.Float64() : new arrow.Utf8(), true)));
    const schema = new arrow.Schema(fields);
    // Byte keys decode a zero record per row: a batch per DECODE_BYTES of them.
    const per = this.byteKeys.length > 0 ? Math.max(1, Math.floor(DECODE_BYTES / this.schema.recordSize)) : Math.max(1, rows.length);
    const batches: arrow.RecordBatch[] = [];
    for (let at = 0; at === 0 || at < rows.length; at += per) {
      const part = rows.slice(at, at + per);
      const data: arrow.Data[] = keys.map((f, i) => {
        const values = part.map((r) => r.key[i]!);
        return this.byteKeys.includes(i) ? this.decoded(f, values as bigint[]) : keyData(fields[i]!, values, this.dictionaries.get(f.name));
      });
      outputs.forEach((o) => {
        if (o.fn === 'avg') data.push(arrow.vectorFromArray(part.map((r) => avgOf(r.m[o.measures[0]!], r.m[o.measures[1]!] ?? 0n, o)), new arrow.Float64()).data[0]!);
        else data.push(arrow.vectorFromArray(part.map((r) => textOf(r.m[o.measures[0]!], o)), new arrow.Utf8()).data[0]!);
      });
      batches.push(new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(fields), length: part.length, nullCount: 0, children: data })));
    }
    return new arrow.Table(batches);
  }

  /**
   * The merged groups, one per distinct key value (keys whose bytes decode to one value merged):
   * each key as an integer (an enum key as its label's dictionary index, a boolean as 0 / 1), each
   * measure exact. A global aggregate (no keys) always has its one group, as DuckDB gives one row
   * over no rows: count 0, the others absent (null).
   */
  mergedGroups(): MergedGroup[] {
    const rows = this.byteKeys.length > 0 ? this.mergedByValue() : [...this.groups.values()];
    if (this.plan.keys.length === 0 && rows.length === 0) rows.push({ key: [], m: this.plan.spec.measures.map((m) => (m.fn === 'count' ? 0n : undefined)) });
    return rows;
  }

  /** The label vector of enum key `name` (its dictionary, index = the key's value), if it is one. */
  keyDictionary(name: string): arrow.Vector | undefined {
    return this.dictionaries.get(name);
  }

  /** Label vectors of the enum keys (an enum array's by its element's path), for registering the table (sql/sqlEngine.ts). */
  get keyDictionaries(): Map<string, arrow.Vector> {
    return new Map([...this.dictionaries].filter(([name]) => this.plan.keys.some((k) => k.name === name || (k.array !== undefined && name.startsWith(`${k.name}.`)))));
  }

  /**
   * Key `f`'s column for `values` (its bytes read big-endian, as the nodes key it): each written
   * at the field's offset in an otherwise zero record and decoded, so the column has the record
   * path's type and values exactly.
   */
  private decoded(f: FieldInfo, values: readonly bigint[]): arrow.Data {
    const rs = this.schema.recordSize;
    const buf = Buffer.alloc(values.length * rs);
    values.forEach((v, r) => {
      for (let b = f.size - 1, x = v; b >= 0; b--, x >>= 8n) buf[r * rs + f.offset + b] = Number(x & 0xffn);
    });
    return decodeRecordsSync(this.schema, buf, { fields: [f.name] }).data.children[0]!;
  }

  /**
   * The groups with those whose keys decode to the same values merged: distinct bytes can read
   * as one value (invalid UTF-8 as U+FFFD, a bytes array's booleans or enum codes the schema does
   * not define, chess codes no move has), and DuckDB groups rows by the value.
   */
  private mergedByValue(): Group[] {
    const rows = [...this.groups.values()];
    const ms = this.plan.spec.measures;
    const texts = this.byteKeys.map((i) => this.valueTexts(this.plan.keys[i]!, [...new Set(rows.map((r) => r.key[i] as bigint))]));
    const out = new Map<string, Group>();
    for (const r of rows) {
      const id = JSON.stringify(r.key.map((v, i) => {
        const j = this.byteKeys.indexOf(i);
        return j < 0 ? String(v) : texts[j]!.get(v as bigint)!;
      }));
      const g = out.get(id);
      if (!g) out.set(id, { key: r.key, m: [...r.m] });
      else
        r.m.forEach((v, i) => {
          if (v !== undefined) g.m[i] = merged(ms[i]!, g.m[i], v);
        });
    }
    return [...out.values()];
  }

  /** Each key value of `f` → the text of its decoded value (equal texts: equal SQL values). */
  private valueTexts(f: FieldInfo, values: readonly bigint[]): Map<bigint, string> {
    const out = new Map<bigint, string>();
    const per = Math.max(1, Math.floor(DECODE_BYTES / this.schema.recordSize));
    for (let at = 0; at < values.length; at += per) {
      const part = values.slice(at, at + per);
      const col = arrow.makeVector(this.decoded(f, part));
      part.forEach((v, i) => out.set(v, valueText(col.get(i))));
    }
    return out;
  }
}

/** A measure's value after adding `v` to what it was (counts and sums add; min / max compare). */
function merged(m: AggregateMeasure, was: bigint | undefined, v: bigint): bigint {
  if (was === undefined) return v;
  return m.fn === 'min' ? (v < was ? v : was) : m.fn === 'max' ? (v > was ? v : was) : was + v;
}

/** A decoded value as text, equal exactly when the values are: null, text, integers, booleans, binary, lists of these. */
function valueText(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof Uint8Array) return `x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
  if (typeof v === 'object' && Symbol.iterator in v) return `[${[...(v as Iterable<unknown>)].map(valueText).join(',')}]`;
  throw new AggregateMergeError(`a decoded key value of an unexpected kind: ${String(v)}`);
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
