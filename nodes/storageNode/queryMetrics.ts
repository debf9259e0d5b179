/**
 * The query path's metrics on a Storage Node's /metrics (docs/storage-node.md, "Queries"). The read
 * counters move only while queries read, so a test (or an operator) sees a cancelled query's reads
 * stop.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BatchScanStep, ScanMeter } from '../../operators/scan';

/** Registers the query metrics on `registry` (once; later calls return the same) and returns them as a scan meter. */
export function queryMetrics(registry: Registry): ScanMeter {
  const get = <T>(name: string, make: () => T): T => (registry.getSingleMetric(name) as T | undefined) ?? make();
  const blocksRead = get('hd_sn_query_blocks_read_total', () => new Counter({ name: 'hd_sn_query_blocks_read_total', help: 'Segment blocks read and evaluated by query scans', registers: [registry] }));
  const blocksSkipped = get(
    'hd_sn_query_blocks_skipped_total',
    () => new Counter({ name: 'hd_sn_query_blocks_skipped_total', help: 'Segment blocks query scans skipped because their zone maps cannot match', registers: [registry] }),
  );
  const scanned = get('hd_sn_query_records_scanned_total', () => new Counter({ name: 'hd_sn_query_records_scanned_total', help: 'Records the filter kernel evaluated', registers: [registry] }));
  const matched = get('hd_sn_query_records_matched_total', () => new Counter({ name: 'hd_sn_query_records_matched_total', help: 'Records that matched a query and went to its result stream', registers: [registry] }));
  const batches = get(
    'hd_sn_query_batches_total',
    () => new Counter({ name: 'hd_sn_query_batches_total', help: 'Query batches ended, by outcome: eob, or the bbn code (12 hash mismatch, 13 batch unreadable)', labelNames: ['outcome'] as const, registers: [registry] }),
  );
  const active = get('hd_sn_queries_active', () => new Gauge({ name: 'hd_sn_queries_active', help: 'Queries scanning on this node now', registers: [registry] }));
  return {
    step: (s: BatchScanStep) => {
      blocksRead.inc(s.blocksRead);
      blocksSkipped.inc(s.blocksSkipped);
      scanned.inc(s.scanned);
      matched.inc(s.matched);
    },
    batch: (outcome) => batches.inc({ outcome: String(outcome) }),
    active: (delta) => active.inc(delta),
  };
}
