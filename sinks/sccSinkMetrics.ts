/**
 * The ingester's /metrics (docs/ingester.md, "Metrics"): every stage's counters of the running
 * pipeline (docs/specs/stage.md) and the SDK's two ingest counters.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CounterSnapshot } from '../stream/stageCounters';

/** Every stage's counters by stage id, with its type's name. */
export type PipelineCounters = () => ReadonlyMap<string, { readonly type: string; readonly counters: CounterSnapshot }>;

/** What the sink itself adds. */
export interface SccSinkMetrics {
  /** `hd_records_ingested_total`: records made durable through the non-broadcast path (the SDK's rule). */
  readonly recordsIngested: Counter;
  /** `hd_bytes_ingested_total`: their bytes. */
  readonly bytesIngested: Counter;
  /** `hd_batches_closed_total`: batches the SCC acknowledged durable. */
  readonly batchesClosed: Counter;
}

const PER_STAGE: readonly [keyof CounterSnapshot, string, string][] = [
  ['received', 'hd_stage_received_total', 'Items that reached the stage (a source: read from outside), in the stage\'s unit'],
  ['sent', 'hd_stage_sent_total', 'Items the stage passed on (a sink: made durable)'],
  ['dropped', 'hd_stage_dropped_total', 'Items the stage discarded (refused lines, late records, refused batches)'],
  ['errors', 'hd_stage_errors_total', 'Error events of the stage'],
  ['controls', 'hd_stage_controls_total', 'Control elements (eob, bbn) the stage passed on'],
];

/** Registers the per-stage counters (read from `pipeline` at every scrape) and the sink's own. */
export function sccSinkMetrics(registry: Registry, pipeline: PipelineCounters | undefined): SccSinkMetrics {
  for (const [field, name, help] of PER_STAGE) {
    new Counter({
      name,
      help,
      labelNames: ['stage', 'type', 'unit'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [stage, s] of pipeline?.() ?? []) this.inc({ stage, type: s.type, unit: s.counters.unit }, s.counters[field] as number);
      },
    });
  }
  new Gauge({
    name: 'hd_stage_held',
    help: 'Items received and not yet sent or dropped (buffered in the stage, or in batches awaiting acknowledgement)',
    labelNames: ['stage', 'type', 'unit'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [stage, s] of pipeline?.() ?? []) this.set({ stage, type: s.type, unit: s.counters.unit }, s.counters.held);
    },
  });
  return {
    recordsIngested: new Counter({ name: 'hd_records_ingested_total', help: 'Records acknowledged durable by the SCC (non-broadcast sends only, as the SDK counts)', registers: [registry] }),
    bytesIngested: new Counter({ name: 'hd_bytes_ingested_total', help: 'Record bytes acknowledged durable by the SCC (non-broadcast sends only, as the SDK counts)', registers: [registry] }),
    batchesClosed: new Counter({ name: 'hd_batches_closed_total', help: 'Batches the SCC acknowledged durable', registers: [registry] }),
  };
}
