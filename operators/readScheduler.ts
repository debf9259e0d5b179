/**
 * Weighted fair read queues of a Storage Node (docs/query.md, "Storage Node scan and result
 * streams"): every running query joins with its `query_qos` as weight and asks for a read slot
 * before each block step. When more queries want to read than there are slots, a query of weight 8
 * gets 8 slots for each slot of a weight-1 query. Stride scheduling: each queue has a *pass*; a
 * grant goes to the waiting queue with the lowest pass (ties: the earliest request) and adds
 * `1 / weight` to it. A queue that was idle starts again at the scheduler's virtual time (the pass
 * of the latest grant), so idling never banks slots to burst with later.
 */

/** A granted read slot; release it once the step's read finished. */
export interface ReadSlot {
  /** Gives the slot back (idempotent). */
  release(): void;
}

interface Waiter {
  readonly queue: ReadQueue;
  readonly seq: number;
  resolve(slot: ReadSlot): void;
  reject(err: unknown): void;
}

/** Shares a fixed number of read slots among weighted queues. */
export class ReadScheduler {
  private free: number;
  private waiters: Waiter[] = [];
  private seq = 0;
  private vtime = 0;
  private dispatchQueued = false;
  private granted = 0;

  /** @param slots reads in flight at once (≥ 1) */
  constructor(readonly slots: number) {
    if (!Number.isSafeInteger(slots) || slots < 1) throw new RangeError(`read slots must be an integer ≥ 1, got ${slots}`);
    this.free = slots;
  }

  /** Slots held now. */
  get busy(): number {
    return this.slots - this.free;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Slots granted so far. */
  get grants(): number {
    return this.granted;
  }

  /** A queue for one query; `weight` is its query_qos, clamped to 1..255. */
  join(weight: number): ReadQueue {
    const w = Number.isInteger(weight) ? Math.min(255, Math.max(1, weight)) : 1;
    return new ReadQueue(this, w, this.vtime);
  }

  /** @internal Called by ReadQueue.acquire. */
  request(queue: ReadQueue, signal: AbortSignal | undefined): Promise<ReadSlot> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    queue.pass = Math.max(queue.pass, this.vtime);
    // Fast path: a free slot nobody else waits for.
    if (this.free > 0 && this.waiters.length === 0) return Promise.resolve(this.grant(queue));
    return new Promise<ReadSlot>((resolve, reject) => {
      const w: Waiter = { queue, seq: this.seq++, resolve, reject };
      this.waiters.push(w);
      if (signal) {
        const onAbort = (): void => {
          if (this.drop(w)) reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        const settle = w.resolve;
        w.resolve = (slot) => {
          signal.removeEventListener('abort', onAbort);
          settle(slot);
        };
      }
      this.scheduleDispatch();
    });
  }

  /** @internal Removes a queue's waiting requests, rejecting them with what `reason` builds (only built when one waits). */
  cancel(queue: ReadQueue, reason: () => unknown): void {
    if (!this.waiters.some((x) => x.queue === queue)) return;
    const err = reason();
    for (const w of this.waiters.filter((x) => x.queue === queue)) {
      this.drop(w);
      w.reject(err);
    }
  }

  private drop(w: Waiter): boolean {
    const i = this.waiters.indexOf(w);
    if (i < 0) return false;
    this.waiters.splice(i, 1);
    return true;
  }

  private grant(queue: ReadQueue): ReadSlot {
    this.free--;
    this.granted++;
    this.vtime = queue.pass;
    queue.pass += 1 / queue.weight;
    queue.grants++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.free++;
        this.scheduleDispatch();
      },
    };
  }

  /**
   * Grants on the next turn of the event loop rather than at once: the query that just released a
   * slot asks again within the same turn, so the choice sees every competitor (granting at once
   * would hand the slot to whoever waits, and queries would simply alternate whatever their weights).
   */
  private scheduleDispatch(): void {
    if (this.dispatchQueued || this.waiters.length === 0) return;
    this.dispatchQueued = true;
    setImmediate(() => {
      this.dispatchQueued = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.free > 0 && this.waiters.length > 0) {
      let best = 0;
      for (let i = 1; i < this.waiters.length; i++) {
        const a = this.waiters[i];
        const b = this.waiters[best];
        if (a.queue.pass < b.queue.pass || (a.queue.pass === b.queue.pass && a.seq < b.seq)) best = i;
      }
      const [w] = this.waiters.splice(best, 1);
      w.resolve(this.grant(w.queue));
    }
  }
}

/** One query's place in the read queues. */
export class ReadQueue {
  /** @internal Stride scheduling pass. */
  pass: number;
  /** Slots this queue was granted. */
  grants = 0;
  private left = false;

  /** @internal Made by {@link ReadScheduler.join}. */
  constructor(
    private readonly scheduler: ReadScheduler,
    /** The query's weight, 1..255. */
    readonly weight: number,
    start: number,
  ) {
    this.pass = start;
  }

  /**
   * Waits for a read slot. Rejects with the signal's reason when `signal` aborts first (a cancelled
   * query stops waiting at once), or after {@link leave}.
   */
  acquire(signal?: AbortSignal): Promise<ReadSlot> {
    if (this.left) return Promise.reject(new Error('read queue left'));
    return this.scheduler.request(this, signal);
  }

  /** The query is done: requests still waiting are rejected. */
  leave(): void {
    if (this.left) return;
    this.left = true;
    // Most queries leave with nothing waiting: no Error (and its stack) is built for them.
    this.scheduler.cancel(this, () => new Error('read queue left'));
  }
}
