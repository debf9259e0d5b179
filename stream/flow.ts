/**
 * Backpressure for a whole pipeline (DESIGN.md §1.3). RxJS pushes and has no backpressure of its
 * own, so the runner keeps one {@link Flow} per pipeline: every stage that does asynchronous work
 * (an awaited native task, a file write) holds a unit of it from the moment an element arrives until
 * its results have been handed downstream. Sources pull: before reading their next block they wait
 * until the pending count is at or below their limit. Because a stage releases its unit only after
 * emitting, and emission synchronously reaches the next asynchronous stage (which takes its own unit
 * first), the count never drops to zero while work is still on its way to a sink.
 */

/** Pending-work accounting shared by the stages of one pipeline. */
export class Flow {
  private pendingCount = 0;
  private waiters: { limit: number; resolve: () => void }[] = [];

  /** Units of asynchronous work in progress anywhere in the pipeline. */
  get pending(): number {
    return this.pendingCount;
  }

  /** An element has arrived at an asynchronous stage. */
  begin(): void {
    this.pendingCount++;
  }

  /** The stage has emitted everything that element produced (or dropped it). */
  end(): void {
    if (this.pendingCount === 0) throw new Error('Flow.end() without a matching begin()');
    this.pendingCount--;
    if (this.waiters.length === 0) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (this.pendingCount <= w.limit) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  /** Resolves once at most `limit` units are pending (at once when that already holds). */
  whenAtMost(limit: number): Promise<void> {
    if (this.pendingCount <= limit) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ limit, resolve }));
  }
}
