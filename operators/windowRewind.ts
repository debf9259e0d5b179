/**
 * How a source that re-reads after a consumer-group rebalance tells the pipeline's `timeBatch`
 * (docs/ingester.md, "Rebalances"). A rebalance makes Kafka re-read every assigned partition from
 * its last commit; records read since then sit in windows that are still open, or in windows
 * already closed (eob sent). Re-read into the open ones they would be stored twice, so the source
 * first has every open window discarded (a bbn each: batch replace lets the same batch id be sent
 * again) and rebuilds them from the re-read. While reading is stopped (the rebalance runs, or a
 * partition this member read is held by another member for a while) windows must not close for
 * idleness, or the records still to come for them would be late: the source holds their timeout.
 *
 * One per pipeline (the `windowRewind` service its Kafka source and its `timeBatch` use). Without
 * a keeper (no `timeBatch` uses it) the signals go nowhere: re-read records are sent again.
 */
import type { WindowKeeper } from './timeBatch';

/**
 * How the reason of every bbn a rewind sends begins (text for people and the wire). Stages tell a
 * rewind's bbn by its `cause: 'rewind'` (stream/chunk.ts), never by this text: the sink reports no
 * such bbn on its own, the source reports each rewind once, with the number of windows it discarded.
 */
export const REWIND_REASON = 'ingester: consumer-group rebalance';

/** The source side of the windows' bookkeeping across rebalances. */
export class WindowRewind {
  private readonly keepers = new Set<WindowKeeper>();
  private holding = false;
  /** Rewinds asked for so far (tests, reports). */
  rewinds = 0;

  /** Registers a `timeBatch`'s windows; returns the function that removes them again (its teardown). */
  attach(keeper: WindowKeeper): () => void {
    this.keepers.add(keeper);
    if (this.holding) keeper.hold();
    return () => this.keepers.delete(keeper);
  }

  /** True while window timeouts are held. */
  get held(): boolean {
    return this.holding;
  }

  /** Reading stopped for a while: windows do not close for idleness until {@link release}. */
  hold(): void {
    if (this.holding) return;
    this.holding = true;
    for (const k of this.keepers) k.hold();
  }

  /** Reading goes on: idle windows close again, `BATCH_TIMEOUT_MS` counted from now. */
  release(): void {
    if (!this.holding) return;
    this.holding = false;
    for (const k of this.keepers) k.release();
  }

  /**
   * Everything emitted since the last commit will be read again: every open window is discarded
   * with a bbn carrying `reason` (starting with {@link REWIND_REASON}) and `cause: 'rewind'`, and reopens from the
   * records read next. Call it only once the pipeline has drained (nothing emitted before is still
   * on its way to `timeBatch`). Returns how many windows were discarded.
   */
  rewind(reason: string): number {
    this.rewinds++;
    let discarded = 0;
    for (const k of this.keepers) discarded += k.rewind(reason);
    return discarded;
  }
}
