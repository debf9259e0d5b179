/**
 * An SqlEngine over an in-memory dataset for tests of the doors: records encoded with the real
 * codec, decoded with the real decoder and filtered by the real scan kernel per read, so pushdown
 * narrows what the "nodes" return as it would on a cluster (the cluster test covers the rest).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RecordCodec } from '../../engine-rs/codec';
import { decodeRecords } from '../../engine-rs/decode';
import { evaluateFilter, ScanFilter } from '../../engine-rs/scan';
import { Schema } from '../../engine-rs/schema';
import { filterJson } from '../../query/filter';
import { LocalSql } from '../../local/localSql';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { SqlEngine, type SqlEngineSettings } from '../../sql/sqlEngine';

/** Unix seconds of the first record. */
export const T0 = 1_700_000_000;
/** The flows schema of pipelines/examples. */
export const flowsSchema = Schema.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8'));

/** Flow `i` of the test dataset (ts = T0 + i). */
export function flowValues(i: number): Record<string, string> {
  return { ts: String(T0 + i), src_ip: `10.0.0.${i % 4}`, dst_ip: '10.0.1.1', src_port: '1000', dst_port: String([443, 80, 53][i % 3]), proto: ['tcp', 'udp', 'icmp'][i % 3] as string, packets: '1', bytes: String(i * 10), duration_ms: '5' };
}

/** An engine over `n` flows, and the record counts its reads scanned and returned. */
export function memoryEngine(n = 300, settings: Partial<SqlEngineSettings> = {}): { engine: SqlEngine; local: LocalSql; stats: { reads: number; returned: number } } {
  const codec = new RecordCodec();
  codec.loadDatasetSchema(flowsSchema);
  const records = Buffer.concat(Array.from({ length: n }, (_, i) => Buffer.from(codec.convertRecordToBinary(flowValues(i)))));
  const stats = { reads: 0, returned: 0 };
  const fetcher: DatasetFetcher = {
    async fetch(read, onBatch, opts) {
      stats.reads++;
      if (opts.signal?.aborted) throw new Error('aborted');
      const window = ScanFilter.compile(flowsSchema, JSON.stringify([{ filters: [{ field: 'ts', op: 'between', values: [String(read.startTime), String(read.endTime)] }] }]));
      let hits = evaluateFilter(window, records);
      if (read.subQueries.length > 0) hits = evaluateFilter(ScanFilter.compile(flowsSchema, JSON.stringify(read.subQueries.map((s) => ({ filters: s.filters.map(filterJson) })))), hits);
      stats.returned += hits.length / flowsSchema.recordSize;
      if (hits.length > 0) await onBatch(await decodeRecords(flowsSchema, hits, read.columns ? { fields: read.columns } : undefined));
      return { batchErrors: [], missingBatches: 0 };
    },
  };
  const local = new LocalSql({ threads: 1 });
  const engine = new SqlEngine(new Catalog([flowsSchema]), local, fetcher, { lookbackSec: 3600, timeoutMs: 20_000, maxRows: 0, qos: 1, ...settings }, () => T0 + n);
  return { engine, local, stats };
}
