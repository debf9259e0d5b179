/**
 * A generated dataset for the aggregate pushdown tests and an in-memory "cluster" serving it two
 * ways: records (filtered by the real scan kernel, decoded by the real decoder) and per-batch
 * partial aggregates computed here, independently of hd_sql's merge, from the raw record bytes
 * (BigInt; enum codes as stored, numerics as scaled integers) — what a Storage Node sends.
 */
import { decodeRecords } from '../../engine-rs/decode';
import { evaluateFilter, ScanFilter } from '../../engine-rs/scan';
import { Schema, type FieldInfo } from '../../engine-rs/schema';
import { mulberry32 } from '../../lib/mulberry32';
import { LocalSql } from '../../local/localSql';
import { filterJson } from '../../query/filter';
import type { BatchError } from '../../query/hdQuery';
import type { AggregatePartial } from '../../sql/aggregateMerge';
import type { AggregateSpec } from '../../sql/aggregatePushdown';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher, FetchOutcome } from '../../sql/datasetFetcher';
import type { DatasetRead } from '../../sql/planner';
import { SqlEngine, type SqlEngineSettings } from '../../sql/sqlEngine';

/** Unix seconds of the first batch. */
export const A0 = 1_700_000_040 - (1_700_000_040 % 60);

export const aggSchema = Schema.parse(
  JSON.stringify({
    id: 'aggt',
    record_size: 64,
    time_field: 'ts',
    time_index_interval: 60,
    enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 }, default_label: 'other' } },
    fields: [
      { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
      { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
      { name: 'flag', offset: 9, size: 1, type: 'boolean' },
      { name: 'small', offset: 10, size: 2, type: 'int16' },
      { name: 'port', offset: 12, size: 2, type: 'uint16' },
      { name: 'neg', offset: 16, size: 4, type: 'int32' },
      { name: 'u32', offset: 20, size: 4, type: 'uint32' },
      { name: 'big', offset: 24, size: 8, type: 'uint64' },
      { name: 'i64', offset: 32, size: 8, type: 'int64' },
      { name: 'amount', offset: 40, size: 8, type: 'numeric', precision: 12, scale: 2 },
      { name: 'ratio', offset: 48, size: 8, type: 'double' },
    ],
  }),
);

/** `batches` one-minute batches of `perBatch` random records (seeded), as raw bytes per batch. */
export function aggBatches(seed: number, batches: number, perBatch: number, opts: { hugeI64?: boolean } = {}): Buffer[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const out: Buffer[] = [];
  for (let b = 0; b < batches; b++) {
    const buf = Buffer.alloc(64 * perBatch);
    for (let i = 0; i < perBatch; i++) {
      const o = i * 64;
      buf.writeBigInt64LE(BigInt(A0 + b * 60 + Math.floor(rnd() * 60)), o);
      buf.writeUInt8(pick([1, 6, 17, 6, 0, 200, 255]), o + 8); // 0, 200, 255: codes the schema does not define
      buf.writeUInt8(rnd() < 0.5 ? 0 : pick([1, 2, 255]), o + 9); // any non-zero byte is true
      buf.writeInt16LE(Math.floor(rnd() * 65536) - 32768, o + 10);
      buf.writeUInt16LE(pick([22, 53, 80, 443, 8080, 65535]), o + 12);
      buf.writeInt32LE(Math.floor(rnd() * 2 ** 32) - 2 ** 31, o + 16);
      buf.writeUInt32LE(Math.floor(rnd() * 2 ** 32), o + 20);
      buf.writeBigUInt64LE(rnd() < 0.3 ? 2n ** 63n + BigInt(Math.floor(rnd() * 2 ** 52)) * 1024n + BigInt(i) : BigInt(Math.floor(rnd() * 1e6)), o + 24);
      const i64 = opts.hugeI64 ? BigInt(Math.floor(rnd() * 2 ** 52) - 2 ** 51) * 2048n : BigInt(Math.floor(rnd() * 2 ** 40) - 2 ** 39);
      buf.writeBigInt64LE(i64, o + 32);
      buf.writeBigInt64LE(BigInt(Math.floor(rnd() * 2e11) - 1e11), o + 40); // |amount| < 10^12: within precision 12
      buf.writeDoubleLE(rnd(), o + 48);
    }
    out.push(buf);
  }
  return out;
}

function raw(f: FieldInfo, rec: Buffer, at: number): bigint {
  const o = at + f.offset;
  switch (f.type) {
    case 'boolean':
      return rec[o] === 0 ? 0n : 1n;
    case 'uint8':
      return BigInt(rec.readUInt8(o));
    case 'int16':
      return BigInt(rec.readInt16LE(o));
    case 'uint16':
      return BigInt(rec.readUInt16LE(o));
    case 'int32':
      return BigInt(rec.readInt32LE(o));
    case 'uint32':
      return BigInt(rec.readUInt32LE(o));
    case 'uint64':
      return rec.readBigUInt64LE(o);
    default:
      return rec.readBigInt64LE(o); // int64, timestamp (size 8), numeric (size 8)
  }
}

/** What a Storage Node sends for one batch's matching records (the contract's payload). */
export function partialOf(schema: Schema, spec: AggregateSpec, records: Buffer): AggregatePartial {
  const n = records.length / schema.recordSize;
  const fieldOf = (name: string): FieldInfo => schema.fields.find((f) => f.name === name)!;
  const groups = new Map<string, { k: string[]; m: bigint[] }>();
  for (let r = 0; r < n; r++) {
    const at = r * schema.recordSize;
    const k = spec.group_by.map((g) => {
      const v = raw(fieldOf(g.field), records, at);
      return (g.bucket !== undefined ? v - (v % BigInt(g.bucket)) : v).toString();
    });
    const id = k.join(',');
    const vals = spec.measures.map((m) => (m.field === undefined ? 1n : raw(fieldOf(m.field), records, at)));
    const g = groups.get(id);
    if (!g) {
      groups.set(id, { k, m: spec.measures.map((m, i) => (m.fn === 'count' ? 1n : vals[i]!)) });
      continue;
    }
    spec.measures.forEach((m, i) => {
      const v = vals[i]!;
      const was = g.m[i]!;
      g.m[i] = m.fn === 'count' ? was + 1n : m.fn === 'sum' ? was + v : m.fn === 'min' ? (v < was ? v : was) : v > was ? v : was;
    });
  }
  return { v: 1, groups: [...groups.values()].map((g) => ({ k: g.k, m: g.m.map(String) })) };
}

/** Options of the in-memory cluster. */
export interface AggClusterOptions {
  /** Batch indexes that fail with a bad batch notice (absent from records and partials alike). */
  readonly badBatches?: readonly number[];
  /** Refuse every aggregate query as a node does (code 11). */
  readonly refuseAggregate?: boolean;
  /** Corrupt the partials (a measure that is not an integer). */
  readonly garbage?: boolean;
}

/** A fetcher serving `batches` of `schema` as records or partials, and what it was asked. */
export function aggFetcher(schema: Schema, batches: readonly Buffer[], opts: AggClusterOptions = {}): DatasetFetcher & { stats: { records: number; aggregates: number; specs: AggregateSpec[] } } {
  const stats = { records: 0, aggregates: 0, specs: [] as AggregateSpec[] };
  const matching = (read: DatasetRead, b: Buffer): Buffer => {
    const window = ScanFilter.compile(schema, JSON.stringify([{ filters: [{ field: schema.timeField, op: 'between', values: [String(read.startTime), String(read.endTime)] }] }]));
    let hits = evaluateFilter(window, b);
    if (read.subQueries.length > 0) hits = evaluateFilter(ScanFilter.compile(schema, JSON.stringify(read.subQueries.map((s) => ({ filters: s.filters.map(filterJson) })))), hits);
    return hits;
  };
  const bad = (i: number): BatchError => ({ batchId: i.toString(16).padStart(128, '0'), code: 3, message: `batch ${i} failed its hash check` });
  return {
    stats,
    async fetch(read, onBatch): Promise<FetchOutcome> {
      stats.records++;
      const errors: BatchError[] = [];
      for (const [i, b] of batches.entries()) {
        if (opts.badBatches?.includes(i)) {
          errors.push(bad(i));
          continue;
        }
        const hits = matching(read, b);
        if (hits.length > 0) await onBatch(await decodeRecords(schema, hits, read.columns ? { fields: read.columns } : undefined));
      }
      return { batchErrors: errors, missingBatches: 0 };
    },
    async fetchAggregate(read, spec, onPartial): Promise<FetchOutcome> {
      stats.aggregates++;
      stats.specs.push(spec);
      if (opts.refuseAggregate) throw new Error('the Storage Node refused the query: code 11 (bad query) at aggregate.measures[0]');
      const errors: BatchError[] = [];
      for (const [i, b] of batches.entries()) {
        if (opts.badBatches?.includes(i)) {
          errors.push(bad(i));
          continue;
        }
        onPartial(opts.garbage ? ({ v: 1, groups: [{ k: spec.group_by.map(() => '1'), m: spec.measures.map(() => 'x') }] } as AggregatePartial) : partialOf(schema, spec, matching(read, b)));
      }
      return { batchErrors: errors, missingBatches: 0 };
    },
  };
}

/** Two engines over the same data: aggregates pushed, and the record path only. */
export function enginePair(fetcher: DatasetFetcher, settings: Partial<SqlEngineSettings> = {}, now = A0 + 3000): { pushed: SqlEngine; records: SqlEngine; local: LocalSql } {
  const local = new LocalSql({ threads: 1 });
  const base: SqlEngineSettings = { lookbackSec: 3600, timeoutMs: 20_000, maxRows: 0, qos: 1, ...settings };
  const catalog = new Catalog([aggSchema]);
  return {
    pushed: new SqlEngine(catalog, local, fetcher, base, () => now),
    records: new SqlEngine(catalog, local, fetcher, { ...base, aggregatePushdown: false }, () => now),
    local,
  };
}
