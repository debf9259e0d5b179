import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import { generateBatchIdTime, type BatchID } from '../engine-rs/batchId';
import type { BatchedRecordChunk, Chunk, ControlElement, RecordChunk } from '../stream/chunk';
import { StageCounters } from '../stream/stageCounters';

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

interface OpenBatch {
  readonly id: BatchID;
  readonly windowStart: number;
  count: number;
  timer?: Subscription;
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
export function timeBatch(opts: TimeBatchOptions): OperatorFunction<Chunk, Chunk> {
  const interval = opts.interval;
  if (!Number.isSafeInteger(interval) || interval <= 0) throw new RangeError(`interval must be a positive integer of seconds, got ${interval}`);
  const maxOpen = opts.maxOpenBatches ?? 2;
  if (!Number.isSafeInteger(maxOpen) || maxOpen < 1) throw new RangeError(`maxOpenBatches must be at least 1, got ${maxOpen}`);
  const timeoutMs = opts.batchTimeoutMs ?? 0;
  const scheduler = opts.scheduler ?? asyncScheduler;

  return (source) =>
    new Observable<Chunk>((subscriber) => {
      const counters = opts.counters ?? new StageCounters('records');
      const open = new Map<number, OpenBatch>();
      // Windows below `lowWater` are closed; `closedAbove` holds windows at or above it that a
      // timeout closed. Both stay small: lowWater rises with every eviction.
      let lowWater = -Infinity;
      const closedAbove = new Set<number>();
      let meta: { dataset: string; recordSize: number } | undefined;
      let active = true;
      /** Set while a source holds the batch timeout (see {@link WindowKeeper.hold}). */
      let held = false;

      const close = (b: OpenBatch, kind: 'eob' | 'bbn', reason: string): void => {
        b.timer?.unsubscribe();
        open.delete(b.windowStart);
        closedAbove.add(b.windowStart);
        const dataset = meta?.dataset ?? '';
        const el: ControlElement =
          kind === 'eob' ? { kind: 'eob', dataset, batchId: b.id, recordCount: b.count } : { kind: 'bbn', dataset, batchId: b.id, reason };
        counters.controls++;
        subscriber.next(el);
      };
      const evictOldest = (): void => {
        const oldest = Math.min(...open.keys());
        const b = open.get(oldest) as OpenBatch;
        lowWater = Math.max(lowWater, oldest + interval);
        for (const w of closedAbove) if (w < lowWater) closedAbove.delete(w);
        close(b, 'eob', '');
      };
      const arm = (b: OpenBatch): void => {
        if (timeoutMs <= 0) return;
        b.timer?.unsubscribe();
        b.timer = undefined;
        if (held) return;
        b.timer = scheduler.schedule(() => {
          if (active && open.get(b.windowStart) === b) {
            close(b, opts.timeoutAction ?? 'eob', `no records for ${timeoutMs} ms (batch timeout)`);
          }
        }, timeoutMs);
      };

      const handle = (chunk: RecordChunk, groups: readonly WindowGroup[]): void => {
        meta ??= { dataset: chunk.dataset, recordSize: chunk.recordSize };
        for (const g of groups) {
          if (g.windowStart < lowWater || closedAbove.has(g.windowStart)) {
            counters.dropped += g.count;
            counters.errors++;
            opts.onProblem?.(`${g.count} records for window ${g.windowStart} arrived after its batch was closed (late, or read again after a rebalance: then the batch holds them already); dropped`);
            continue;
          }
          let b = open.get(g.windowStart);
          if (!b) {
            b = { id: generateBatchIdTime(g.windowStart, g.windowStart + interval, interval), windowStart: g.windowStart, count: 0 };
            open.set(g.windowStart, b);
            if (open.size > maxOpen) evictOldest();
          }
          b.count += g.count;
          counters.sent += g.count;
          const out: BatchedRecordChunk = { kind: 'records', dataset: chunk.dataset, batchId: b.id, count: g.count, recordSize: chunk.recordSize, buf: g.buf };
          subscriber.next(out);
          arm(b);
        }
      };
      const fail = (err: unknown): void => {
        if (active) subscriber.error(err);
      };

      // Async splits are handled in arrival order; sync ones at once when nothing is queued.
      let chain: Promise<void> = Promise.resolve();
      let queued = 0;
      const finish = (): void => {
        if (!active) return;
        for (const w of [...open.keys()].sort((a, b) => a - b)) close(open.get(w) as OpenBatch, 'eob', '');
        subscriber.complete();
      };
      /** Discards every open window (bbn); they are not marked closed, so their records may open them again. */
      const rewind = (reason: string): number => {
        if (!active) return 0;
        const discarded = open.size;
        for (const w of [...open.keys()].sort((a, b) => a - b)) {
          const b = open.get(w) as OpenBatch;
          b.timer?.unsubscribe();
          open.delete(w);
          counters.controls++;
          subscriber.next({ kind: 'bbn', dataset: meta?.dataset ?? '', batchId: b.id, reason });
        }
        return discarded;
      };
      const keeper: WindowKeeper = {
        hold: () => {
          held = true;
          for (const b of open.values()) {
            b.timer?.unsubscribe();
            b.timer = undefined;
          }
        },
        release: () => {
          if (!held) return;
          held = false;
          for (const b of open.values()) arm(b);
        },
        // Chunks still being split were emitted before the rewind: they go into the windows first.
        rewind: (reason) => {
          if (queued === 0) return rewind(reason);
          chain = chain.then(() => void rewind(reason)).catch(fail);
          return 0;
        },
      };
      const detach = opts.attach?.(keeper);
      const upstream = source.subscribe({
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
              if (active) handle(chunk, gs);
            })
            .catch(fail);
        },
        error: fail,
        complete: () => {
          if (queued === 0) finish();
          else void chain.then(finish);
        },
      });

      return () => {
        active = false;
        detach?.();
        upstream.unsubscribe();
        for (const b of open.values()) b.timer?.unsubscribe();
        open.clear();
      };
    });
}
