/**
 * The ingester's sink: sends batched records to SCCs over HDWP (`HdwpClient`, role `ingester`),
 * closes each batch with the eob (or bbn) `timeBatch` gave it, and resolves every batch once the
 * SCC acknowledged it durable, so sources can commit what they read (stream/deliveryLedger.ts).
 * The send rules are the SDK's (the reference's ingest client operation table): with `broadcast`
 * false everything goes to the first target only; with true, to every target, and a batch is
 * durable once every target acknowledged it.
 */
import { Observable } from 'rxjs';
import type tls from 'node:tls';
import { BatchDigest } from '../engine-rs/hashChain';
import { awaitEach } from '../stream/awaitEach';
import type { BbnElement, Chunk, EobElement, RecordChunk } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';
import { HdwpStreamError } from '../hdwp/hdwpStreamError';
import { readBatchStateRefusal } from '../hdwp/refusals';
import { HdwpClient } from '../hdwp/hdwpClient';
import type { DurabilityTracker } from '../stream/deliveryLedger';
import { DeliveryBook, type PendingBatch } from './deliveryBook';
import type { SccAddress } from '../control/api';

/** One SCC on the data plane: the data-plane part of control/api's {@link SccAddress}. */
export type SccTarget = Pick<SccAddress, 'host' | 'port'>;

/** Options of {@link sccSink}. */
export interface SccSinkOptions {
  /** SCCs; the first is primary (at least one: the SDK's sends fail at once without targets). */
  readonly targets: readonly SccTarget[];
  /** False: send to the first target only; true: to every target (the SDK's `broadcast`). */
  readonly broadcast?: boolean;
  /** How long to keep trying to reach a target at start (an SCC still starting); default 30 s. */
  readonly connectTimeoutMs?: number;
  /** Batches whose eob answer is awaited at once; more make the stream wait. Default 64. */
  readonly maxPendingBatches?: number;
  /** Run HDWP over TLS with these options. */
  readonly tls?: tls.ConnectionOptions;
  /** The pipeline's pending-work accounting: records hold a unit until the socket took them. */
  readonly flow?: Flow;
  /**
   * Counts records: received on arrival, sent once their batch is durable, dropped when their
   * batch was discarded, refused, or never closed; errors per refused or failed batch.
   */
  readonly counters?: StageCounters;
  /** Told about refused batches and duplicates the SCC recognised. */
  readonly report?: (message: string) => void;
  /** Told about every batch made durable: its records and record bytes, and whether it was broadcast. */
  readonly onDurable?: (records: number, bytes: number, broadcast: boolean) => void;
  /** Told once the sink runs, with the tracker the run's delivery ledger should use (it stays valid after teardown, refusing checkpoints). */
  readonly onTracker?: (tracker: DurabilityTracker) => void;
  /** Handed the closing of the streams when the sink is torn down (the runner awaits it). */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
}

/**
 * The reason of the bbn sent before a batch's first records in a run: whatever an earlier run of
 * the ingester left half-sent under this batch id is discarded, and the batch is sent afresh
 * (batch replace, docs/scc.md). The SCC refuses it only for a batch it has closed: then the batch
 * is durable already and the records sent now are duplicates it drops.
 */
export const REPLACE_REASON = 'ingester: sending the batch afresh; discard any partial copy';

/**
 * True when an SCC refused an eob only because it had already closed the batch: records read again
 * after a restart, or records of a time window whose batch was closed when the ingester stopped.
 * The SCC drops them unstored (as timeBatch drops late records); they are counted dropped.
 */
export function isClosedAtScc(err: unknown): boolean {
  return err instanceof HdwpStreamError && err.code === 'ERR_HDWP_PEER_ERROR' && readBatchStateRefusal(err.frameCode, err.message)?.state === 'closed';
}

/**
 * What the sink says about an eob the SCC refused as closed: records sent again for a batch that
 * is durable already. When the SCC's batch holds as many records as were sent now, the batch was
 * acknowledged before a crash and only the commit was lost: a plain duplicate. Otherwise the
 * batch was closed with other records — by the SCC's batch timeout while the ingester was down, or
 * before records that came late for it — and the difference is not in HD.
 */
export function closedAtSccReport(where: string, sent: number, err: Error): string {
  const refusal = readBatchStateRefusal((err as { frameCode?: number }).frameCode, err.message);
  const stored = refusal?.holds;
  if (stored === sent) return `${where}: already durable at the SCC with the same ${sent} records (acknowledged before a restart, not yet committed); the ${sent} records sent again were dropped there as duplicates`;
  const timeout = refusal?.cause === 'timeout';
  return (
    `${where}: the SCC had already closed it${stored === undefined ? '' : ` holding ${stored} records`}, so the ${sent} records sent now were dropped there` +
    (timeout
      ? ' — it was closed by the SCC\'s batch timeout while this batch was half sent (an ingester down longer than the SCC\'s BATCH_TIMEOUT_MS with TIMEOUT_ACTION=EOB): records of it that were not stored then are not in HD'
      : ' (records read again after a restart, or late for their window)') +
    `: ${err.message}`
  );
}

/** Connects to `target`, retrying while the SCC is not listening yet, until `deadline`. */
async function connectWithRetry(target: SccTarget, dataset: string, recordSize: number, deadline: number, tlsOpts?: tls.ConnectionOptions): Promise<HdwpClient> {
  let wait = 100;
  for (;;) {
    try {
      return await HdwpClient.connect({ host: target.host, port: target.port, role: 'ingester', datasetId: dataset, recordSize, tls: tlsOpts });
    } catch (err) {
      const retry = err instanceof HdwpStreamError && err.code === 'ERR_HDWP_DISCONNECTED' && Date.now() + wait < deadline;
      if (!retry) throw err;
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 2000);
    }
  }
}

/**
 * Sends `batched-records` to the SCC targets and completes once every batch was answered. Each
 * batch starts with a bbn ({@link REPLACE_REASON}), so a copy an earlier run left half-sent at the
 * SCC is replaced rather than mixed with the records sent now (docs/ingester.md). A batch
 * the SCC refuses fails the sink (and so the run), naming the batch, so nothing past it is
 * committed — except an eob refused because the SCC had already closed the batch (records read
 * again after a restart, or late for a window closed at a stop): those records are counted dropped,
 * as timeBatch counts late records, and the batch as settled. A stream
 * that breaks fails the sink too: the ingester is meant to be restarted, and it resumes from its
 * last commit.
 *
 * @example
 * batched$.pipe(...); sccSink({ targets: [{ host: '10.0.0.5', port: 6987 }] })(batched$).subscribe();
 */
export function sccSink(opts: SccSinkOptions): (input: Observable<Chunk>) => Observable<never> {
  if (opts.targets.length === 0) throw new RangeError('sccSink needs at least one SCC target (the SDK sends nothing without targets)');
  const maxPending = opts.maxPendingBatches ?? 64;
  const broadcast = opts.broadcast ?? false;
  const targets = broadcast ? opts.targets : opts.targets.slice(0, 1);
  return (input) =>
    new Observable<never>((subscriber) => {
      const counters = opts.counters ?? new StageCounters('records');
      const flow = opts.flow ?? new Flow();
      const streams = new Map<string, Promise<HdwpClient[]>>();
      /** Batches receiving records and batches closing (eob or bbn sent, not answered). */
      const book = new DeliveryBook();
      const answers = new Set<Promise<void>>();
      let active = true;
      const deadline = Date.now() + (opts.connectTimeoutMs ?? 30_000);

      /** Set when the sink is torn down before it completed: what was emitted may never have reached it. */
      let torn = false;
      let completed = false;
      opts.onTracker?.({
        durableNow: () =>
          torn
            ? Promise.reject(new Error('the SCC sink stopped before the data was acknowledged'))
            : book.durableNow(),
      });

      const clientsFor = (el: RecordChunk, recordSize: number): Promise<HdwpClient[]> => {
        let s = streams.get(el.dataset);
        if (!s) {
          s = Promise.all(targets.map((t) => connectWithRetry(t, el.dataset, recordSize, deadline, opts.tls)));
          streams.set(el.dataset, s);
        }
        return s;
      };
      const fail = (err: Error): void => {
        if (active) subscriber.error(err);
      };
      const settle = (el: EobElement | BbnElement, work: Promise<unknown>): void => {
        // The batch stays listed until answered, so a checkpoint taken meanwhile waits for it.
        const b: PendingBatch = book.close(el.dataset, el.batchId);
        const where = `batch ${el.batchId.toString()} of '${el.dataset}'`;
        const p = work
          .then(
            () => {
              if (torn) return;
              if (el.kind === 'eob') {
                counters.sent += b.records;
                opts.onDurable?.(b.records, b.bytes, broadcast);
              } else {
                counters.dropped += b.records;
                // A window discarded at a rebalance is expected; its source reports the rebalance once.
                if (el.cause !== 'rewind') opts.report?.(`${where}: discarded by its bbn (${el.reason}); ${b.records} records dropped`);
              }
              book.settle(b);
            },
            (err: unknown) => {
              if (torn) return;
              counters.dropped += b.records;
              counters.errors++;
              if (el.kind === 'eob' && isClosedAtScc(err)) {
                opts.report?.(closedAtSccReport(where, b.records, err as Error));
                book.settle(b);
                return;
              }
              if (el.kind === 'bbn' && isClosedAtScc(err)) {
                // A bbn (a window discarded at a rebalance) for a batch the SCC closed meanwhile, by
                // its own batch timeout: it holds what it got and cannot be replaced. The records
                // read again for it are refused there in turn, and their eob's answer says so.
                opts.report?.(`${where}: its bbn (${el.reason}) came after the SCC had closed the batch, which keeps what it got: ${(err as Error).message}`);
                book.settle(b);
                return;
              }
              const e = new Error(`${where} was not made durable: ${(err as Error).message}; the records read for it stay uncommitted`);
              book.settle(b, e);
              fail(e);
            },
          )
          .finally(() => {
            answers.delete(p);
            book.forget(b);
          });
        answers.add(p);
      };

      const step = async (el: Chunk): Promise<readonly never[]> => {
        switch (el.kind) {
          case 'records': {
            if (el.batchId === undefined) throw new TypeError('sccSink takes batched records; got records without a batch id (put timeBatch before it)');
            counters.received += el.count;
            const { batch: b, first } = book.records(el.dataset, el.batchId, el.count, el.buf.length);
            const digest = (b.digest ??= new BatchDigest());
            const clients = await clientsFor(el, el.recordSize);
            const batchId = el.batchId;
            if (first) {
              // Batch replace: a half-sent copy from before a crash is discarded first. Its answer
              // needs no wait (the stream keeps call order); a refusal means the SCC closed the
              // batch already, which the eob's answer reports (isClosedAtScc).
              for (const c of clients) c.sendBbn(batchId, REPLACE_REASON).catch(() => undefined);
            }
            // Digested in the order sent (the update copies the bytes at once).
            void digest.update(el.buf);
            await Promise.all(clients.map((c) => c.sendRecords(batchId, el.buf)));
            return [];
          }
          case 'eob':
          case 'bbn': {
            counters.controls++;
            const stream = streams.get(el.dataset);
            // No records of this dataset were sent, so the SCC knows nothing of the batch: nothing to close.
            if (!stream) {
              settle(el, Promise.resolve());
              return [];
            }
            const clients = await stream;
            // The eob carries the digest of exactly the records this run sent for the batch (after
            // its replace bbn): an SCC that holds anything else refuses it (error 14).
            const sent = el.kind === 'eob' ? book.current(el.dataset, el.batchId) : undefined;
            const digest = sent?.digest ? await sent.digest.finish() : undefined;
            const work =
              el.kind === 'eob'
                ? Promise.all(clients.map((c) => c.sendEob(el.batchId, el.recordCount, undefined, digest)))
                : Promise.all(clients.map((c) => c.sendBbn(el.batchId, el.reason)));
            settle(el, work);
            while (answers.size >= maxPending) await Promise.race(answers);
            return [];
          }
          default:
            throw new TypeError(`sccSink takes batched records, got a '${el.kind}' element`);
        }
      };

      const closeAll = async (): Promise<void> => {
        const all = await Promise.allSettled([...streams.values()]);
        await Promise.all(all.flatMap((r) => (r.status === 'fulfilled' ? r.value.map((c) => c.close()) : [])));
      };
      const abandon = (why: string): void => {
        counters.dropped += book.abandon(why);
      };

      const sub = input.pipe(awaitEach(step, flow)).subscribe({
        error: (err: unknown) => fail(err instanceof Error ? err : new Error(String(err))),
        complete: () => {
          void Promise.allSettled([...answers]).then(async () => {
            // Batches still open when the input ended were never closed: nothing of them is durable.
            abandon('the input ended before the batch was closed');
            await closeAll();
            completed = true;
            if (active) subscriber.complete();
          });
        },
      });
      return () => {
        active = false;
        if (!completed) torn = true;
        sub.unsubscribe();
        abandon('the sink stopped before the batch was acknowledged');
        const closing = closeAll();
        if (opts.trackTeardown) opts.trackTeardown(closing);
        else void closing;
      };
    });
}
