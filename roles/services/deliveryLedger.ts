/**
 * `deliveryLedger`: delivery accounting between an ingest pipeline's sources and its `sccSink`
 * (docs/ingester.md, "At-least-once"), a service: the sink registers what it has acknowledged, the
 * sources commit their positions (Kafka offsets, S3 objects) only once that is durable.
 */
import { needs, type ServiceType } from '../../pipelines/registry';
import { DeliveryLedger } from '../../stream/deliveryLedger';

/** How a source or sink uses the ledger. */
export const usesDeliveryLedger = needs<DeliveryLedger>('deliveryLedger', 'the delivery accounting a source commits by and the sccSink resolves: the same service for both');

/** `deliveryLedger`: one per pipeline, shared by its committing sources and its `sccSink`. */
export const deliveryLedgerType: ServiceType<Record<string, never>, Record<string, never>, DeliveryLedger> = {
  name: 'deliveryLedger',
  kind: 'service',
  doc: 'Delivery accounting of an ingest pipeline: sources (kafkaSource, s3Source) commit a position only once the sccSink using the same ledger has every batch holding records read before it acknowledged durable.',
  settings: {},
  start: (_c, ctx) => Promise.resolve({ value: new DeliveryLedger(ctx.flow), stop: () => Promise.resolve() }),
};
