import { asyncScheduler, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { BatchedRecordChunk, BbnCause, Chunk, ControlElement, RecordChunk } from '../stream/chunk';
import { operate } from '../stream/operate';
import { StageCounters } from '../stream/stageCounters';
import { WindowTable, type OpenWindow } from './windowTable';

/** Records of one chunk that fall in one time window, in their original order. */
export interface WindowGroup {
  /** Start of the window in seconds (a multiple of the interval). */
  readonly windowStart: number;
  readonly count: number;
  /** `count` packed records. */
  readonly buf: Buffer;
}

/**
 * Groups a chunk's records by time window. This is a loop over records, so it runs natively
 * (the record codec reads each record's time field); `timeBatch` only handles the groups.
 */
export type WindowSplitter = (chunk: RecordChunk) => readonly WindowGroup[] | Promise<readonly WindowGroup[]>;

/** Options of {@link timeBatch}. */
export interface TimeBatchOptions {
  /** Splits chunks into time windows (see {@link WindowSplitter}). */
  readonly split: WindowSplitter;
  /** Window width in seconds (the schema's time index interval). */
  readonly interval: number;
  /**
   * Most batches open at once. Opening one more closes the oldest with an eob: it is complete,
   * because the input has moved on past it. 1 suits input sorted by time.
   */
  readonly maxOpenBatches?: number;
  /** Close a batch that received no records for this long (0: never). */
  readonly batchTimeoutMs?: number;
  /** What closes a batch that timed out: an eob (complete) or a bbn (discard). Default 'eob'. */
  readonly timeoutAction?: 'eob' | 'bbn';
  /** Counts records: received, sent, dropped (records for a batch already closed). */
  readonly counters?: StageCounters;
  /** Told about dropped late records. */
  readonly onProblem?: (message: string) => void;
  /** Timers run on it (tests pass a virtual-time scheduler). */
  readonly scheduler?: SchedulerLike;
  /**
   * Called on subscription with this run's {@link WindowKeeper}, so a source can hold the batch
   * timeout or rewind the open windows (operators/windowRewind.ts); returns the detach function,
   * called at teardown.
   */
  readonly attach?: (keeper: WindowKeeper) => () => void;
}

/**
 * What a source that reads its input again may ask of `timeBatch` (a Kafka consumer after a
 * rebalance, docs/ingester.md "Rebalances").
 */
export interface WindowKeeper {
  /** Reading stopped for a while: no window closes for idleness until {@link release}. */
  hold(): void;
  /** Reading resumed: every open window's idle timeout starts again from now. */
  release(): void;
  /**
   * Everything emitted since the last commit will be read again: every open window is discarded
   * with a bbn carrying `reason` and may be opened again (the sink replaces the batch); windows
   * already closed stay closed, and records read again for them are dropped as their duplicates.
   * Returns how many windows it discarded (0 when chunks still being split make it wait for them).
   */
  rewind(reason: string): number;
}

/**
 * Assigns record chunks to time-form batches ({@link generateBatchIdTime} over each window) and
 * closes each batch with an eob once it is complete (evicted as the oldest of more than
 * `maxOpenBatches` open batches), at the end of input, or after `batchTimeoutMs` without records
 * (eob or bbn by `timeoutAction`). Records are forwarded at once, never held: only batch
 * bookkeeping lives here. A record whose batch was already closed is dropped and reported, so every
 * batch id gets exactly one eob. A source that reads again from its last commit (a Kafka rebalance)
 * may hold the timeout and rewind the open windows through `attach` ({@link WindowKeeper}): a
 * rewound window gets a bbn and may open again under the same id, which the sink sends afresh.
 *
 * @example
 * records$.pipe(timeBatch({ split: codec.splitWindows, interval: 60, batchTimeoutMs: 5000 }))
 */
export function timeBatch(opts: TimeBatchOptions): OperatorFunction<Chunk, BatchedRecordChunk | ControlElement> {
  const interval = opts.interval;
  if (!Number.isSafeInteger(interval) || interval <= 0) throw new RangeError(`interval must be a positive integer of seconds, got ${interval}`);
  const maxOpen = opts.maxOpenBatches ?? 2;
  if (!Number.isSafeInteger(maxOpen) || maxOpen < 1) throw new RangeError(`maxOpenBatches must be at least 1, got ${maxOpen}`);
  const timeoutMs = opts.batchTimeoutMs ?? 0;
  const scheduler = opts.scheduler ?? asyncScheduler;

  return operate<Chunk, BatchedRecordChunk | ControlElement>(({ destination, isActive }) => {
    const counters = opts.counters ?? new StageCounters('records');
    const table = new WindowTable(interval, maxOpen);
    /** The idle timeout armed for each open window. */
    const timers = new Map<OpenWindow, Subscription>();
    let meta: { dataset: string; recordSize: number } | undefined;
    /** Set while a source holds the batch timeout (see {@link WindowKeeper.hold}). */
    let held = false;

    const disarm = (w: OpenWindow): void => {
      timers.get(w)?.unsubscribe();
      timers.delete(w);
    };
    /** Emits the eob (`bbn` absent) or bbn that closes `w`. */
    const emitClose = (w: OpenWindow, bbn?: { readonly reason: string; readonly cause: BbnCause }): void => {
      disarm(w);
      const dataset = meta?.dataset ?? '';
      const el: ControlElement = bbn ? { kind: 'bbn', dataset, batchId: w.id, ...bbn } : { kind: 'eob', dataset, batchId: w.id, recordCount: w.count };
      counters.controls++;
      destination.next(el);
    };
    const arm = (w: OpenWindow): void => {
      if (timeoutMs <= 0) return;
      disarm(w);
      if (held) return;
      timers.set(
        w,
        scheduler.schedule(() => {
          timers.delete(w);
          if (!isActive() || !table.isOpen(w)) return;
          table.close(w);
          emitClose(w, (opts.timeoutAction ?? 'eob') === 'bbn' ? { reason: `no records for ${timeoutMs} ms (batch timeout)`, cause: 'timeout' } : undefined);
        }, timeoutMs),
      );
    };

    const handle = (chunk: RecordChunk, groups: readonly WindowGroup[]): void => {
      meta ??= { dataset: chunk.dataset, recordSize: chunk.recordSize };
      for (const g of groups) {
        const a = table.admit(g.windowStart);
        if (a.late) {
          counters.dropped += g.count;
          counters.errors++;
          opts.onProblem?.(`${g.count} records for window ${g.windowStart} arrived after its batch was closed (late, or read again after a rebalance: then the batch holds them already); dropped`);
          continue;
        }
        if (a.evicted) emitClose(a.evicted);
        const w = a.window;
        w.count += g.count;
        counters.sent += g.count;
        const out: BatchedRecordChunk = { kind: 'records', dataset: chunk.dataset, batchId: w.id, count: g.count, recordSize: chunk.recordSize, buf: g.buf };
        destination.next(out);
        arm(w);
      }
    };
    const fail = (err: unknown): void => {
      if (isActive()) destination.error(err);
    };

    // Async splits are handled in arrival order; sync ones at once when nothing is queued.
    let chain: Promise<void> = Promise.resolve();
    let queued = 0;
    const finish = (): void => {
      if (!isActive()) return;
      for (const w of table.closeAll()) emitClose(w);
      destination.complete();
    };
    /** Discards every open window (bbn); they are not marked closed, so their records may open them again. */
    const rewind = (reason: string): number => {
      if (!isActive()) return 0;
      const discarded = table.rewind();
      for (const w of discarded) emitClose(w, { reason, cause: 'rewind' });
      return discarded.length;
    };
    const keeper: WindowKeeper = {
      hold: () => {
        held = true;
        for (const t of timers.values()) t.unsubscribe();
        timers.clear();
      },
      release: () => {
        if (!held) return;
        held = false;
        for (const w of table.windows()) arm(w);
      },
      // Chunks still being split were emitted before the rewind: they go into the windows first.
      rewind: (reason) => {
        if (queued === 0) return rewind(reason);
        chain = chain.then(() => void rewind(reason)).catch(fail);
        return 0;
      },
    };
    const detach = opts.attach?.(keeper);

    return {
      next: (chunk) => {
        if (chunk.kind !== 'records') {
          fail(new TypeError(`timeBatch takes record chunks, got a '${chunk.kind}' element`));
          return;
        }
        counters.received += chunk.count;
        let groups: readonly WindowGroup[] | Promise<readonly WindowGroup[]>;
        try {
          groups = opts.split(chunk);
        } catch (err) {
          fail(err);
          return;
        }
        if (queued === 0 && !(groups instanceof Promise)) {
          handle(chunk, groups);
          return;
        }
        queued++;
        chain = chain
          .then(async () => {
            const gs = await groups;
            queued--;
            if (isActive()) handle(chunk, gs);
          })
          .catch(fail);
      },
      error: fail,
      complete: () => {
        if (queued === 0) finish();
        else void chain.then(finish);
      },
      finalize: () => {
        detach?.();
        for (const t of timers.values()) t.unsubscribe();
        timers.clear();
        table.clear();
      },
    };
  });
}
