import { Observable } from 'rxjs';
import { awaitEach } from '../../stream/awaitEach';
import { batchKey, type AckHook, type AckResult, type Chunk, type EobElement } from '../../stream/chunk';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import { Flow } from '../../stream/flow';
import { StageCounters } from '../../stream/stageCounters';
import { DEFAULT_HASH_RECORD_SIZE } from '../../engine-rs/index';
import type { BatchStore, CloseOutcome } from './batchStore';

/** Options of {@link segmentStore}. */
export interface SegmentStoreSinkOptions {
  /**
   * Opens the store (a Storage Node recovers its devices here); called once on subscribe. Every
   * element waits for it, so nothing is written before recovery has finished.
   */
  readonly open: () => Promise<BatchStore>;
  /** Called once when the input completes or the sink is torn down: aborts open batches, stops servers. */
  readonly close?: () => Promise<void>;
  /** Record size of an empty batch's segment when no record of its dataset arrived yet (default 150, RECORD_SIZE). */
  readonly defaultRecordSize?: number;
  /** Counts records: received on arrival, sent once their batch is durable, dropped when discarded or refused. */
  readonly counters?: StageCounters;
  /** The pipeline's pending-work accounting: each append / commit holds a unit until it settled. */
  readonly flow?: Flow;
  /** Told the records of each committed batch. */
  readonly progress?: { addRecords(n: number): void };
  /** Refused and failed batches, duplicate records (the pipeline prints a bounded number). */
  readonly report?: (message: string) => void;
  /** Handed the store's closing when the sink is torn down before its input completed (pipeline stop). */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
  /**
   * Commits (eob: footer, fsync, rename, fsync dir) run in the background, so the next batch's
   * records are written meanwhile; at most this many at once, more make the stream wait. Default 4.
   */
  readonly maxPendingCommits?: number;
}

/**
 * The Storage Node's persist sink (docs/storage-node.md, "Ingest"): batched records go into one
 * segment per batch (`BatchStore.append`, awaited, so a slow disk slows the sender); an eob commits
 * the batch — closing hash and record count checked, write, fsync, rename, fsync dir — and only
 * then acknowledges it (`ack({ ok: true, closingHash })`); a refused batch is acknowledged with an
 * error code and nothing is committed; a bbn discards the partial segment and is acknowledged. An
 * eob for a batch already durable here acknowledges with the stored closing hash.
 *
 * Commits run in the background (up to `maxPendingCommits`), so an fsync does not stall the next
 * batch; an element of a batch whose commit is still running waits for that commit first, so each
 * batch still sees its elements strictly in order. The sink completes once every commit settled.
 *
 * Counters: `received` on arrival, `sent` when the batch is durable, `dropped` when it is
 * discarded, refused or a duplicate, so records of open batches are `held`.
 */
export function segmentStore(opts: SegmentStoreSinkOptions): (input: Observable<Chunk>) => Observable<never> {
  const counters = opts.counters ?? new StageCounters('records');
  const report = opts.report ?? (() => undefined);
  return (input) =>
    new Observable<never>((subscriber) => {
      const recordSizes = new Map<string, number>();
      const opening = opts.open();
      opening.catch((err: unknown) => subscriber.error(err));
      /** Commits running in the background, by batch (dataset + batch id). */
      const committing = new Map<string, Promise<void>>();
      const maxCommits = opts.maxPendingCommits ?? 4;
      let closed = false;
      const close = async (): Promise<void> => {
        if (closed) return;
        closed = true;
        // A store still opening (recovering) is let finish first, so closing finds a settled node.
        await opening.catch(() => undefined);
        // Commits under way finish (and answer their senders) before open batches are aborted.
        await Promise.all(committing.values());
        await opts.close?.();
        // Whatever was still open was aborted: never acknowledged, now dropped.
        counters.dropped += counters.held;
      };

      const commit = async (store: BatchStore, el: EobElement): Promise<void> => {
        const size = recordSizes.get(el.dataset) ?? opts.defaultRecordSize ?? DEFAULT_HASH_RECORD_SIZE;
        let r: CloseOutcome;
        try {
          r = await store.commit(el.dataset, el.batchId, el.recordCount, size, el.closingHash);
        } catch (err) {
          // Not expected (failures come back as outcomes); the sender still gets an answer, and
          // the batch's records stay held until the sink closes.
          r = { ok: false, code: HDWP_ERROR_FRAME_CODES.internal, message: `committing batch ${el.batchId.toHex()} of '${el.dataset}' failed: ${(err as Error).message}`, dropped: 0 };
        }
        if (r.ok) {
          if (!r.existing) {
            counters.sent += r.records;
            opts.progress?.addRecords(r.records);
          }
          answer(el.ack, { ok: true, closingHash: r.closingHash });
        } else {
          counters.dropped += r.dropped;
          counters.errors++;
          report(r.message);
          answer(el.ack, { ok: false, code: r.code, message: r.message });
        }
      };

      const handle = async (el: Chunk): Promise<readonly never[]> => {
        if (el.kind === 'records') counters.received += el.count;
        const store = await opening;
        if (el.kind === 'records' || el.kind === 'eob' || el.kind === 'bbn') {
          // Per batch, elements stay in order: wait for that batch's commit if one is running.
          const running = el.batchId === undefined ? undefined : committing.get(batchKey(el.dataset, el.batchId));
          if (running) await running;
        }
        switch (el.kind) {
          case 'records': {
            if (el.batchId === undefined) throw new TypeError('segmentStore takes batched records (from hdwpSource or a batching stage)');
            recordSizes.set(el.dataset, el.recordSize);
            const r = await store.append({ dataset: el.dataset, batchId: el.batchId, recordSize: el.recordSize, count: el.count, buf: el.buf });
            if (!r.written) {
              counters.dropped += el.count;
              if (r.reason === 'failed') counters.errors++;
              report(`${r.message}; ${el.count} records dropped`);
            }
            return [];
          }
          case 'eob': {
            counters.controls++;
            const key = batchKey(el.dataset, el.batchId);
            const running: Promise<void> = commit(store, el).finally(() => {
              if (committing.get(key) === running) committing.delete(key);
            });
            committing.set(key, running);
            while (committing.size >= maxCommits) await Promise.race(committing.values());
            return [];
          }
          case 'bbn': {
            const r = await store.discard(el.dataset, el.batchId);
            counters.controls++;
            counters.dropped += r.dropped;
            if (r.ok) answer(el.ack, { ok: true });
            else {
              report(r.message);
              answer(el.ack, { ok: false, code: r.code, message: r.message });
            }
            return [];
          }
          case 'bytes':
            throw new TypeError("segmentStore takes batched records, got a 'bytes' element");
          case 'query':
            throw new TypeError("segmentStore takes batched records, got a 'query' element");
          case 'columns':
            throw new TypeError("segmentStore takes batched records, got a 'columns' element");
          case 'aggregate':
            throw new TypeError("segmentStore takes batched records, got an 'aggregate' element");
          case 'eobs':
            throw new TypeError("segmentStore takes batched records, got an 'eobs' element");
        }
      };

      const sub = input.pipe(awaitEach(handle, opts.flow ?? new Flow())).subscribe({
        error: (err: unknown) => {
          void close()
            .catch(() => undefined)
            .then(() => subscriber.error(err));
        },
        complete: () => {
          void close().then(
            () => subscriber.complete(),
            (err: unknown) => subscriber.error(err),
          );
        },
      });

      return () => {
        sub.unsubscribe();
        const closing = close().catch(() => undefined);
        opts.trackTeardown?.(closing);
      };
    });
}

/** Answers the sender, if one waits; a sender that went away cannot be answered and is not an error here. */
function answer(ack: AckHook | undefined, result: AckResult): void {
  try {
    ack?.(result);
  } catch {
    // The connection is gone; the SCC resends what was not acknowledged.
  }
}
