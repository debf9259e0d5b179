/**
 * Delivery accounting between the ingester's sources and its `sccSink` (docs/ingester.md,
 * "At-least-once"). A source may only commit its position (a Kafka offset, an S3 object) once the
 * records it emitted up to there are durable: every batch holding any of them has been acknowledged
 * by the SCC. Records lose their origin on the way (timeBatch regroups them by time window), so the
 * ledger works by position in the stream instead: at a checkpoint the source waits until the
 * pipeline has drained (the {@link Flow} has no pending work: everything it emitted has been handed
 * to the sink), and then takes the set of batches the sink has records of and has not resolved yet.
 * Those batches hold every record emitted so far; once each is acknowledged, the position is safe.
 */
import type { Flow } from './flow';

/** What a sink that makes records durable tells the ledger. */
export interface DurabilityTracker {
  /**
   * Settles once every batch that holds records handed to the sink so far is resolved: fulfils
   * when each was made durable (or was already durable), rejects naming the first that failed.
   */
  durableNow(): Promise<void>;
}

/** A checkpoint: `durable` settles as {@link DurabilityTracker.durableNow} does; `taken` is what the source noted with it. */
export interface Checkpoint<T> {
  readonly durable: Promise<void>;
  readonly taken: T;
}

/**
 * One per pipeline (the `deliveryLedger` service its sources and its sink use), over the run's
 * {@link Flow}. Without a tracker (a pipeline whose sink acknowledges nothing, such as
 * `hdwpFileSink`), a checkpoint is durable once the pipeline has drained: the sink has written what
 * was emitted.
 */
export class DeliveryLedger {
  private tracker: DurabilityTracker | undefined;

  /** @param flow the run's pending-work accounting, shared by the source and the sink */
  constructor(private readonly flow: Flow) {}

  /** True when a sink tracks durability (sources then wait for acknowledgements before committing). */
  get tracked(): boolean {
    return this.tracker !== undefined;
  }

  /**
   * Registers the sink's tracker for the rest of the run (one per run). It stays registered after
   * the sink is torn down, so a checkpoint taken then is refused by it rather than taken as durable.
   */
  attach(tracker: DurabilityTracker): void {
    if (this.tracker && this.tracker !== tracker) throw new Error('one sccSink per pipeline tracks delivery; this pipeline has two');
    this.tracker = tracker;
  }

  /**
   * Waits until everything emitted so far has reached the sink (the pipeline drained), then, in
   * the same synchronous step, asks the tracker for the batches to wait for and calls `take` (the
   * source notes its positions): nothing can be emitted between the two. `durable` settles once it
   * is all durable; it never rejects unhandled.
   */
  async checkpoint<T>(take: () => T): Promise<Checkpoint<T>> {
    // The wait resolves in a later microtask; re-check, since something may have been emitted since.
    do await this.flow.whenAtMost(0);
    while (this.flow.pending > 0);
    const durable = this.tracker ? this.tracker.durableNow() : Promise.resolve();
    durable.catch(() => undefined);
    return { durable, taken: take() };
  }
}
