/**
 * A Storage Node's side of NORM replication (docs/replication-norm.md): joins the SCC's multicast
 * group and merges the batches it carries into the node's ingest stream, between the HDWP TCP
 * source and the segment store. The SCC's TCP stream still carries each batch's eob / bbn (and
 * answers), so the eob that arrives on TCP waits here until the group's records and eob of that
 * batch went by; only then is it passed on to the segment store, which acknowledges it as usual.
 *
 * A batch the SCC sends on TCP (catch-up, or a resend after a loss) starts with a bbn there: from
 * then on the group's records of it are ignored until the group's own end of the batch. An eob
 * whose batch the group lost (a break: data lost beyond NORM's repair window) or did not finish
 * within `eobWaitMs` is answered with a batch mismatch, which makes the SCC send the batch over TCP.
 */
import { Observable, type Subscription } from 'rxjs';
import type { BatchID } from '../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES, type Frame } from '../../engine-rs/hdwpFrame';
import { NormReceiver, type NormReceiverEvent, type NormReceiverOptions } from '../../engine-rs/norm';
import { NormMessageReader } from '../../net/normMessages';
import { batchKey, cutRecords, recordChunk, type BatchedRecordChunk, type ControlElement, type EobElement } from '../../stream/chunk';
import { StageCounters } from '../../stream/stageCounters';

/** Options of {@link normIngest}. */
export interface NormIngestOptions {
  /** The group to join (NORM_GROUP, NORM_PORT, NORM_INTERFACE) and this node's NORM id. */
  readonly receiver: NormReceiverOptions;
  /** How long a TCP eob waits for the group's copy of its batch before it is answered with a batch mismatch. */
  readonly eobWaitMs: number;
  readonly counters?: StageCounters;
  /** Told about breaks and malformed messages. */
  readonly report?: (message: string) => void;
  /** Told the receiver's counters for /health (bytes, breaks, waiting eobs). */
  readonly onHealth?: (health: () => Record<string, unknown>) => void;
}

type Element = BatchedRecordChunk | ControlElement;

/** Batches whose state is remembered at most (oldest forgotten first). */
const MAX_TRACKED = 100_000;

/**
 * Merges the group's batches into `input` (the TCP source's elements) and holds each TCP eob until
 * the group's copy of its batch is complete. Unsubscribing leaves the group.
 */
export function normIngest(opts: NormIngestOptions): (input: Observable<Element>) => Observable<Element> {
  return (input) =>
    new Observable<Element>((subscriber) => {
      const counters = opts.counters ?? new StageCounters('records');
      /** Batches the SCC sends on TCP (a bbn or records came there): their TCP eob passes at once. */
      const tcp = new Map<string, true>();
      /** Batches whose group records are dropped until the group's end of them (TCP took them over). */
      const ignored = new Map<string, true>();
      /**
       * TCP-carried batches the group also sent records of, dropped here: TCP may hold only part of
       * the batch (a catch-up that began while it was open sends what the SCC's log had, the rest
       * went to the group), so their TCP eob is answered with a mismatch and the SCC resends the
       * whole batch over TCP.
       */
      const dropped = new Map<string, true>();
      /** Records of each open batch the group delivered (a receiver that joined mid-batch has fewer than its eob says). */
      const delivered = new Map<string, number>();
      /** Batches whose bbn came on the group before its TCP copy (a sender's discard goes both ways: no takeover). */
      const groupBbns = new Map<string, true>();
      /** Batches whose end went by on the group before their TCP eob came. */
      const groupEnded = new Map<string, true>();
      /** Batches with group records and no group end yet. */
      const open = new Set<string>();
      /** Batches the group lost records of (a break while they were open). */
      const lost = new Map<string, true>();
      /** TCP eobs waiting for the group's end of their batch. */
      const waiting = new Map<string, { el: EobElement; timer: NodeJS.Timeout }>();
      const reader = new NormMessageReader();
      let active = true;
      let mismatches = 0;

      const remember = (m: Map<string, true>, key: string): void => {
        m.set(key, true);
        if (m.size > MAX_TRACKED) m.delete(m.keys().next().value as string);
      };
      const mismatch = (el: EobElement, why: string): void => {
        mismatches++;
        el.ack?.({ ok: false, code: HDWP_ERROR_FRAME_CODES.batchMismatch, message: `${why}; send the batch over TCP` });
      };
      const release = (key: string): void => {
        const w = waiting.get(key);
        if (!w) return;
        waiting.delete(key);
        clearTimeout(w.timer);
        counters.controls++;
        subscriber.next(w.el);
      };

      const onGroupFrame = (dataset: string, f: Frame): void => {
        if (f.kind !== 'records' && f.kind !== 'eob' && f.kind !== 'bbn') return;
        const key = batchKey(dataset, f.batchId);
        if (f.kind === 'records') {
          if (ignored.has(key)) return remember(dropped, key);
          if (lost.has(key)) return;
          open.add(key);
          delivered.set(key, (delivered.get(key) ?? 0) + f.payload.byteLength / f.recordSize);
          emitRecords(dataset, f.batchId, f.recordSize, f.payload);
          return;
        }
        open.delete(key);
        const got = delivered.get(key) ?? 0;
        delivered.delete(key);
        if (f.kind === 'bbn') {
          // A sender's discard, sent on TCP too (which discards). Did the TCP copy come first, it took
          // the batch for TCP as a catch-up's bbn would: the group carries it again from here.
          if (tcp.delete(key)) {
            ignored.delete(key);
            dropped.delete(key);
          } else remember(groupBbns, key);
          lost.delete(key);
          groupEnded.delete(key);
          return;
        }
        if (ignored.delete(key) || lost.delete(key)) return; // the group's copy of a batch TCP carries (or that it broke) is over
        if (got !== f.recordCount) {
          // Joined after some of its records went by: the group's copy is short, TCP must bring it.
          const w = waiting.get(key);
          if (!w) return remember(lost, key);
          waiting.delete(key);
          clearTimeout(w.timer);
          return mismatch(w.el, `the multicast group delivered ${got} of the batch's ${f.recordCount} records (this node joined after the rest went by)`);
        }
        if (waiting.has(key)) release(key);
        else remember(groupEnded, key);
      };
      const emitRecords = (dataset: string, batchId: BatchID, recordSize: number, payload: Uint8Array): void => {
        const all = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
        for (const buf of cutRecords(all, recordSize)) {
          const n = buf.length / recordSize;
          counters.received += n;
          counters.sent += n;
          subscriber.next(recordChunk(dataset, recordSize, n, buf, batchId) as BatchedRecordChunk);
        }
      };
      const onBreak = (): void => {
        reader.reset();
        opts.report?.('NORM: data lost beyond the repair window; the batches it held go over TCP');
        for (const key of open) remember(lost, key);
        open.clear();
        for (const [key, w] of [...waiting]) {
          waiting.delete(key);
          clearTimeout(w.timer);
          mismatch(w.el, 'records of this batch were lost on the multicast group beyond repair');
        }
      };

      let receiver: NormReceiver;
      try {
        receiver = new NormReceiver(
          opts.receiver,
          (bytes) => {
            if (!active) return;
            try {
              for (const m of reader.push(bytes)) for (const f of m.frames) onGroupFrame(m.dataset, f);
            } catch (err) {
              opts.report?.(`NORM: ${(err as Error).message}`);
              onBreak();
            }
          },
          (e: NormReceiverEvent) => {
            if (e === 'break' || e === 'aborted') onBreak();
          },
        );
      } catch (err) {
        subscriber.error(new Error(`replication: norm: ${(err as Error).message}`));
        return;
      }
      opts.onHealth?.(() => ({ mode: 'norm', group: `${opts.receiver.address}:${opts.receiver.port}`, bytes_received: receiver.bytesReceived, breaks: receiver.breaks, eobs_waiting: waiting.size, mismatches }));

      const sub: Subscription = input.subscribe({
        next: (el) => {
          const key = batchKey(el.dataset, el.batchId);
          if (el.kind === 'bbn' && groupBbns.delete(key)) {
            // The TCP copy of a sender's discard the group already had: the group keeps the batch.
            dropped.delete(key);
            groupEnded.delete(key);
            subscriber.next(el);
            return;
          }
          if (el.kind === 'records' || el.kind === 'bbn') {
            // TCP carries this batch now (catch-up or resend: they start with a bbn, which also
            // discards whatever of it arrived before).
            if (el.kind === 'bbn') dropped.delete(key);
            remember(tcp, key);
            remember(ignored, key);
            groupEnded.delete(key);
            subscriber.next(el);
            return;
          }
          if (tcp.has(key) && dropped.delete(key)) {
            tcp.delete(key);
            return mismatch(el, 'part of this batch went to the multicast group while TCP carried the rest (a catch-up began while it was open)');
          }
          if (tcp.delete(key) || groupEnded.delete(key)) {
            subscriber.next(el);
            return;
          }
          if (lost.has(key)) return mismatch(el, 'records of this batch were lost on the multicast group beyond repair');
          const timer = setTimeout(() => {
            waiting.delete(key);
            mismatch(el, `the multicast group did not deliver this batch within ${opts.eobWaitMs} ms`);
          }, opts.eobWaitMs);
          waiting.set(key, { el, timer });
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
      return () => {
        active = false;
        sub.unsubscribe();
        receiver.close();
        for (const w of waiting.values()) clearTimeout(w.timer);
        waiting.clear();
      };
    });
}
