/**
 * The SCC's links to its replicas, one replica at a time (docs/scc.md, "Replication"): the HDWP
 * stream per dataset opened on demand, records sent within the lag bound, an end-of-batch or bad
 * batch notice answered within the ack timeout, and what a failure does — the replica is marked
 * down, its streams closed, everything it has not acknowledged kept for it, and it is retried with
 * backoff and caught up (catchUp.ts) — or, when it missed a batch the log no longer holds, out of
 * sync. The {@link ReplicaSet} (replicas.ts) decides which replicas get what; this file holds what
 * happens on one replica's link, and is the {@link CatchUpContext} catch-up works through.
 * With `replication: norm` a replica that answers an eob with a batch mismatch (it missed records on
 * the multicast group) gets that batch again over its TCP stream, then the eob again.
 */
import type { LogFn, LogLevel } from '../../lib/logging';
import type { BatchID } from '../../engine-rs/batchId';
import { HdwpClient } from '../../hdwp/hdwpClient';
import type { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import { catchUpReplica, type CatchUpContext } from './catchUp';
import type { CatchUpLog, LoggedBatch } from './catchUpLog';
import { isBatchRefusal, TIMEOUT, within, type Replica } from './replica';
import type { SnTarget } from './settings';

/** Opens one stream to a replica for a dataset (tests may stand in their own). */
export type ReplicaConnector = (target: SnTarget, datasetId: string, recordSize: number) => Promise<HdwpClient>;

/** What {@link ReplicaLinks} works with. */
export interface ReplicaLinksOptions {
  readonly log: CatchUpLog;
  /** Record bytes handed to a replica's stream and not yet written, above which records wait. */
  readonly maxLagBytes: number;
  /** A replica above the lag bound, or not answering an eob / bbn, this long is marked down. */
  readonly ackTimeoutMs: number;
  /** First and longest reconnect delay. */
  readonly minBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly connect?: ReplicaConnector;
  /** True once the replica set is closing. */
  readonly closed: () => boolean;
  /** Told about state changes (start-up log, tests). */
  readonly onEvent?: LogFn;
  /** Told how many batches each replica has not made durable yet (the replica lag metric). */
  readonly onLag?: (replica: string, batches: number) => void;
  /** Whether the node reports cold-boot synchronisation (false when nobody can tell). */
  readonly syncing: (r: Replica) => Promise<boolean>;
  /** `replication: norm`: an eob answered with a batch mismatch is followed by the batch over TCP and the eob again. */
  readonly resendMismatched?: boolean;
}

/** The per-replica side of replication: streams, lag, acknowledgements and failures. */
export class ReplicaLinks implements CatchUpContext {
  readonly log: CatchUpLog;
  readonly ackTimeoutMs: number;
  readonly minBackoffMs: number;
  /** Batches resent over TCP per replica (norm: records it missed on the group). */
  private readonly resent = new Map<string, number>();

  /** @param opts the catch-up log, bounds and callbacks */
  constructor(private readonly opts: ReplicaLinksOptions) {
    this.log = opts.log;
    this.ackTimeoutMs = opts.ackTimeoutMs;
    this.minBackoffMs = opts.minBackoffMs;
  }

  /** True once the replica set is closing: nothing more is started. */
  closed(): boolean {
    return this.opts.closed();
  }

  /** State changes worth a log line. */
  event(message: string, level: LogLevel): void {
    this.opts.onEvent?.(message, level);
  }

  /** Whether the node reports cold-boot synchronisation. */
  syncing(r: Replica): Promise<boolean> {
    return this.opts.syncing(r);
  }

  /** The replica's stream for `dataset`, opened on first use; a failure of it marks the replica down. */
  client(r: Replica, dataset: string, recordSize: number): Promise<HdwpClient> {
    let c = r.clients.get(dataset);
    if (!c) {
      const epoch = r.epoch;
      const connect = this.opts.connect ?? defaultConnect;
      c = connect(r.target, dataset, recordSize);
      r.clients.set(dataset, c);
      r.datasets.set(dataset, recordSize);
      c.then(
        (client) => {
          void client.closed.then((err) => {
            if (err && r.epoch === epoch && r.clients.get(dataset) === c) this.fail(r, `stream for '${dataset}' closed: ${err.message}`);
          });
        },
        (err: Error) => {
          if (r.epoch === epoch) this.fail(r, `cannot open a stream for '${dataset}': ${err.message}`);
        },
      );
    }
    return c;
  }

  /** Hands records to the replica's stream (counted as lag until written); a failed send marks it down. */
  sendRecords(r: Replica, dataset: string, recordSize: number, batchId: BatchID, buf: Buffer): void {
    const epoch = r.epoch;
    r.lagBytes += buf.length;
    const settle = (): void => {
      if (r.epoch !== epoch) return;
      r.lagBytes -= buf.length;
      this.wakeLag(r);
    };
    this.client(r, dataset, recordSize)
      .then((c) => c.sendRecords(batchId, buf))
      .then(settle, (err: Error) => {
        settle();
        if (r.epoch === epoch) this.fail(r, `sending records failed: ${err.message}`);
      });
  }

  /** Resolves once `r` is at most `maxLagBytes` behind, marking it down if that takes longer than the ack timeout. */
  async underLag(r: Replica): Promise<void> {
    if (r.lagBytes <= this.opts.maxLagBytes) return;
    const epoch = r.epoch;
    const waited = within(
      (async () => {
        while (r.epoch === epoch && r.lagBytes > this.opts.maxLagBytes) await new Promise<void>((res) => r.lagWaiters.push(res));
      })(),
      this.ackTimeoutMs,
    );
    if ((await waited) === TIMEOUT && r.epoch === epoch) this.fail(r, `fell behind: ${r.lagBytes} bytes unsent for ${this.ackTimeoutMs} ms`);
  }

  /** Wakes whoever waits for `r`'s lag to drop (its lag changed, or its streams went away). */
  wakeLag(r: Replica): void {
    const w = r.lagWaiters;
    r.lagWaiters = [];
    for (const f of w) f();
  }

  /** Sends the eob to `r` and waits for its durable ack: 'ok', the replica's refusal of the batch, or 'failed'. */
  async closeOn(r: Replica, b: LoggedBatch, recordCount: number, closingHash?: Uint8Array): Promise<'ok' | 'failed' | HdwpStreamError> {
    const epoch = r.epoch;
    try {
      const c = await this.client(r, b.dataset, b.recordSize);
      const eob = async (): Promise<void> => {
        const ack = await within(c.sendEob(b.batchId, recordCount, closingHash), this.ackTimeoutMs);
        if (ack === TIMEOUT) throw new Error(`no durable ack for batch ${b.batchId.toString()} within ${this.ackTimeoutMs} ms`);
      };
      await eob().catch(async (err: unknown) => {
        if (!this.opts.resendMismatched || !isBatchRefusal(err) || err.frameCode !== HDWP_ERROR_FRAME_CODES.batchMismatch || r.epoch !== epoch) throw err;
        await this.resend(r, c, b);
        await eob();
      });
      r.acked++;
      this.log.done(b, r.target.name);
      this.lag(r);
      return 'ok';
    } catch (err) {
      if (r.epoch !== epoch) return 'failed';
      if (isBatchRefusal(err)) {
        this.event(`replica ${r.target.name} refused batch ${b.batchId.toString()}: ${err.message}`, 'warn');
        return err;
      }
      this.fail(r, (err as Error).message);
      return 'failed';
    }
  }

  /** How many batches `r` was sent again over TCP after missing records on the multicast group. */
  resends(r: Replica): number {
    return this.resent.get(r.target.name) ?? 0;
  }

  /**
   * Sends `b` again on `r`'s TCP stream (norm: it missed some of its records on the group): a bbn
   * first, so its partial copy is dropped and later group records of the batch are ignored, then
   * the records from the catch-up log. The caller sends the eob again.
   */
  private async resend(r: Replica, c: HdwpClient, b: LoggedBatch): Promise<void> {
    if (b.truncated) throw new Error(`batch ${b.batchId.toString()} missed on the multicast group is no longer in the catch-up log`);
    this.resent.set(r.target.name, this.resends(r) + 1);
    this.event(`replica ${r.target.name} missed records of batch ${b.batchId.toString()} on the multicast group: sending it over TCP`, 'info');
    if ((await within(c.sendBbn(b.batchId, 'SCC: resending over TCP what the multicast group lost'), this.ackTimeoutMs)) === TIMEOUT) throw new Error(`bbn of batch ${b.batchId.toString()} not echoed within ${this.ackTimeoutMs} ms`);
    for (const chunk of b.chunks) await c.sendRecords(b.batchId, chunk);
  }

  /** Sends the bbn to `r` and waits for its echo; a replica that cannot answer is marked down. */
  async discard(r: Replica, b: LoggedBatch, reason: string): Promise<void> {
    const epoch = r.epoch;
    try {
      const c = await this.client(r, b.dataset, b.recordSize);
      if ((await within(c.sendBbn(b.batchId, reason), this.ackTimeoutMs)) === TIMEOUT) throw new Error(`bbn of batch ${b.batchId.toString()} not echoed within ${this.ackTimeoutMs} ms`);
      this.log.done(b, r.target.name);
    } catch (err) {
      // A refused bbn (the batch is durable there) needs no catch-up: the replica is consistent.
      if (isBatchRefusal(err)) this.log.done(b, r.target.name);
      else if (r.epoch === epoch) this.fail(r, (err as Error).message);
    }
  }

  /** Reports the replica's lag after a change. */
  lag(r: Replica): void {
    this.opts.onLag?.(r.target.name, this.log.waitingFor(r.target.name).length);
  }

  /** Closes the replica's streams (in the background) and forgets them; returns the closes. */
  closeStreams(r: Replica): Promise<unknown>[] {
    const closes = [...r.clients.values()].map((c) => c.then((x) => x.close()).catch(() => undefined));
    r.clients.clear();
    return closes;
  }

  /** Marks `r` down: its streams are closed, everything it has not acknowledged is caught up later. */
  fail(r: Replica, reason: string): void {
    if (this.closed() || r.state === 'out-of-sync' || r.state === 'quarantined') return;
    r.epoch++;
    r.failures++;
    const was = r.state;
    r.state = 'down';
    r.reason = reason;
    r.since = Date.now();
    this.closeStreams(r);
    r.lagBytes = 0;
    this.wakeLag(r);
    for (const b of this.log.waitingFor(r.target.name)) r.behind.add(b.key);
    if (was !== 'down') this.event(`replica ${r.target.name} is down: ${reason}`, 'warn');
    this.lag(r);
    clearTimeout(r.timer);
    r.timer = setTimeout(() => void catchUpReplica(this, r), r.backoff);
    r.timer.unref?.();
    r.backoff = Math.min(r.backoff * 2, this.opts.maxBackoffMs);
  }

  /** Gives up on the replica: it missed a batch the log no longer holds. */
  outOfSync(r: Replica, reason: string): void {
    if (r.state === 'out-of-sync') return;
    r.epoch++;
    clearTimeout(r.timer);
    this.closeStreams(r);
    r.behind.clear();
    r.state = 'out-of-sync';
    r.reason = `${reason}; it needs a full resynchronisation before it serves again`;
    r.since = Date.now();
    this.log.forget(r.target.name);
    this.event(`replica ${r.target.name} is out of sync: ${r.reason}`, 'warn');
  }
}

function defaultConnect(target: SnTarget, datasetId: string, recordSize: number): Promise<HdwpClient> {
  return HdwpClient.connect({ host: target.host, port: target.prodPort, role: 'scc', datasetId, recordSize, connectTimeoutMs: 5000 });
}
