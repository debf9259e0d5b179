/**
 * `windowRewind`: how a Kafka source that re-reads after a consumer-group rebalance tells the
 * pipeline's `timeBatch` (docs/ingester.md, "Rebalances"), a service both use: the source holds the
 * windows' idle timeout while reading is stopped, and has every open window discarded before the
 * re-read.
 */
import { WindowRewind } from '../../operators/windowRewind';
import { mayUse, needs, type ServiceType } from '../../pipelines/registry';

/** How the Kafka source uses it (required: a rebalance must reach the windows). */
export const usesWindowRewind = needs<WindowRewind>('windowRewind', "the open windows of the pipeline's timeBatch, held and rewound across consumer-group rebalances");

/** How `timeBatch` uses it (optional: without one its windows are never rewound). */
export const mayUseWindowRewind = mayUse<WindowRewind>('windowRewind', 'the Kafka source that holds and rewinds its open windows across rebalances');

/** `windowRewind`: one per pipeline, shared by its Kafka source and its `timeBatch`. */
export const windowRewindType: ServiceType<Record<string, never>, Record<string, never>, WindowRewind> = {
  name: 'windowRewind',
  kind: 'service',
  doc: "Consumer-group rebalances of a kafkaSource reach the open windows of the timeBatch using the same service: their idle timeout is held while reading is stopped, and they are rewound before the re-read.",
  settings: {},
  start: () => Promise.resolve({ value: new WindowRewind(), stop: () => Promise.resolve() }),
};
