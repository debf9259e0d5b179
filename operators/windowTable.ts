/**
 * `timeBatch`'s window bookkeeping as a plain class: which time windows are open (each one batch),
 * which are closed, and which an incoming group of records may still go to. No RxJS, no timers:
 * the operator arms the timeouts and emits what this table decides; tests drive it synchronously.
 */
import { generateBatchIdTime, type BatchID } from '../engine-rs/batchId';

/** An open window: one batch receiving records. */
export interface OpenWindow {
  readonly id: BatchID;
  /** Start of the window in seconds (a multiple of the interval). */
  readonly windowStart: number;
  /** Records assigned to it so far. */
  count: number;
}

/** Where a group of records goes: `late` (its window is closed: drop it), or an open window, opened for it when new. */
export type Admission =
  | { readonly late: true }
  | {
      readonly late: false;
      readonly window: OpenWindow;
      /** The oldest window, closed because opening this one passed `maxOpenBatches` (its eob goes out first). */
      readonly evicted?: OpenWindow;
    };

/**
 * Open windows by start, plus what is closed: every window below `lowWater` (it rises with every
 * eviction, as the input has moved past it) and, at or above it, the windows a timeout closed.
 */
export class WindowTable {
  private readonly open = new Map<number, OpenWindow>();
  private lowWater = -Infinity;
  private readonly closedAbove = new Set<number>();

  /**
   * @param interval window width in seconds
   * @param maxOpen most windows open at once
   * @param batchIdOf the batch id of a window (default: the time form, {@link generateBatchIdTime})
   */
  constructor(
    private readonly interval: number,
    private readonly maxOpen: number,
    private readonly batchIdOf: (start: number, end: number, interval: number) => BatchID = generateBatchIdTime,
  ) {}

  /** Windows open now. */
  get size(): number {
    return this.open.size;
  }

  /** Open windows, in any order. */
  windows(): IterableIterator<OpenWindow> {
    return this.open.values();
  }

  /** True while `w` is the open window of its start (a timeout armed for it still applies). */
  isOpen(w: OpenWindow): boolean {
    return this.open.get(w.windowStart) === w;
  }

  /**
   * The window records starting at `windowStart` go to: `late` when it is closed; otherwise the open
   * one, opened now when there is none (closing the oldest when more than `maxOpen` are then open).
   * The caller adds the records' count to the window.
   */
  admit(windowStart: number): Admission {
    if (windowStart < this.lowWater || this.closedAbove.has(windowStart)) return { late: true };
    const w = this.open.get(windowStart);
    if (w) return { late: false, window: w };
    const fresh: OpenWindow = { id: this.batchIdOf(windowStart, windowStart + this.interval, this.interval), windowStart, count: 0 };
    this.open.set(windowStart, fresh);
    return this.open.size > this.maxOpen ? { late: false, window: fresh, evicted: this.evictOldest() } : { late: false, window: fresh };
  }

  /** Closes `w` (an eob or bbn goes out for it): records for its window are late from now on. */
  close(w: OpenWindow): void {
    this.open.delete(w.windowStart);
    this.closedAbove.add(w.windowStart);
  }

  /** Closes every open window, oldest first, and returns them (the end of input: an eob each). */
  closeAll(): OpenWindow[] {
    const all = this.sorted();
    for (const w of all) this.close(w);
    return all;
  }

  /**
   * Removes every open window, oldest first, and returns them (a rewind: a bbn each). They are not
   * marked closed, so the records read again may open them anew under the same batch id.
   */
  rewind(): OpenWindow[] {
    const all = this.sorted();
    this.open.clear();
    return all;
  }

  /** Forgets every open window. */
  clear(): void {
    this.open.clear();
  }

  private sorted(): OpenWindow[] {
    return [...this.open.keys()].sort((a, b) => a - b).map((w) => this.open.get(w) as OpenWindow);
  }

  private evictOldest(): OpenWindow {
    const oldest = Math.min(...this.open.keys());
    const w = this.open.get(oldest) as OpenWindow;
    this.lowWater = Math.max(this.lowWater, oldest + this.interval);
    for (const s of this.closedAbove) if (s < this.lowWater) this.closedAbove.delete(s);
    this.close(w);
    return w;
  }
}
