/**
 * The SCC's replicas (docs/scc.md, "Replication"): one HDWP stream per Storage Node and dataset,
 * every batch sent to every replica that is up, an end-of-batch durable once every healthy replica
 * acknowledged it. A replica that errors, disconnects or falls behind is marked down, retried with
 * backoff and, once it answers again, caught up from the {@link CatchUpLog} (catchUp.ts) before it
 * counts as healthy again. A replica that missed batches the log no longer holds is out of sync.
 */
import type { BatchID } from '../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import type { HealthPart, HealthStatus } from '../../lib/observability';
import type { AckResult, BbnElement, BatchedRecordChunk, EobElement } from '../../stream/chunk';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { catchUpReplica, type CatchUpContext } from './catchUp';
import { batchKey, CatchUpLog, type LoggedBatch } from './catchUpLog';
import { isBatchRefusal, newReplica, TIMEOUT, within, type Replica, type ReplicaState } from './replica';
import type { SnTarget } from './settings';
import type { SyncProbe } from './syncProbe';
import { inSpan, SpanKind } from '../../lib/tracing/spans';

export type { ReplicaState } from './replica';

/** Opens one stream to a replica for a dataset (tests may stand in their own). */
export type ReplicaConnector = (target: SnTarget, datasetId: string, recordSize: number) => Promise<HdwpClient>;

/** Options of {@link ReplicaSet}. */
export interface ReplicaSetOptions {
  readonly targets: readonly SnTarget[];
  /** RECORD_SIZE: used for streams opened for a batch without records. */
  readonly recordSize: number;
  /** Record bytes handed to a replica's stream and not yet written, above which records wait; default 64 MiB. */
  readonly maxLagBytes?: number;
  /** A replica that stays above the lag bound, or does not acknowledge an eob / bbn, this long is marked down; default 30 s. */
  readonly ackTimeoutMs?: number;
  /** Catch-up log cap in record bytes; default 256 MiB. */
  readonly logBytes?: number;
  /** First and longest reconnect delay; defaults 100 ms and 5 s. */
  readonly backoffMs?: { readonly min: number; readonly max: number };
  readonly connect?: ReplicaConnector;
  /** Told about state changes (start-up log, tests). */
  readonly onEvent?: (message: string) => void;
  /** Told how many batches each replica has not made durable yet (the replica lag metric). */
  readonly onLag?: (replica: string, batches: number) => void;
  /** Asks a node whether it is in cold-boot synchronisation (syncProbe.ts); absent: never asked, no replica is `syncing`. */
  readonly syncProbe?: SyncProbe;
  /** How often healthy and syncing replicas are asked; default 500 ms. */
  readonly syncPollMs?: number;
}

/** The replicas of one SCC. */
export class ReplicaSet {
  private readonly replicas: Replica[];
  private readonly log: CatchUpLog;
  private readonly maxLag: number;
  private readonly ackTimeout: number;
  private readonly minBackoff: number;
  private readonly catchUp: CatchUpContext;
  private closed = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private polling = false;

  /** @param opts targets and bounds */
  constructor(private readonly opts: ReplicaSetOptions) {
    this.maxLag = opts.maxLagBytes ?? 64 * 1024 * 1024;
    this.ackTimeout = opts.ackTimeoutMs ?? 30_000;
    this.minBackoff = opts.backoffMs?.min ?? 100;
    this.log = new CatchUpLog({
      maxBytes: opts.logBytes ?? 256 * 1024 * 1024,
      onLost: (names, b) => {
        for (const r of this.replicas) if (names.includes(r.target.name)) this.outOfSync(r, `batch ${b.batchId.toString()} of '${b.dataset}' was dropped from the catch-up log`);
      },
    });
    const now = Date.now();
    this.replicas = opts.targets.map((target) => newReplica(target, this.minBackoff, now));
    this.catchUp = {
      log: this.log,
      ackTimeoutMs: this.ackTimeout,
      minBackoffMs: this.minBackoff,
      closed: () => this.closed,
      client: (r, dataset, recordSize) => this.client(r, dataset, recordSize),
      fail: (r, reason) => this.fail(r, reason),
      outOfSync: (r, reason) => this.outOfSync(r, reason),
      lag: (r) => this.lag(r),
      event: (m) => this.opts.onEvent?.(m),
      syncing: async (r) => (await this.opts.syncProbe?.(r.target)) === 'syncing',
    };
    if (opts.syncProbe) {
      this.syncTimer = setInterval(() => void this.pollSync(), opts.syncPollMs ?? 500);
      this.syncTimer.unref?.();
    }
  }

  /** Names and states, for the start-up line and tests. */
  states(): Record<string, ReplicaState> {
    return Object.fromEntries(this.replicas.map((r) => [r.target.name, r.state]));
  }

  /** Sends a records chunk to every replica live for its batch; resolves once none is past the lag bound. */
  async records(c: BatchedRecordChunk): Promise<void> {
    const b = this.log.open(c.dataset, c.batchId, c.recordSize, this.tracked());
    this.log.append(b, c.buf);
    const live = this.replicas.filter((r) => this.isLive(r, b));
    for (const r of this.replicas) if (!live.includes(r) && r.state !== 'out-of-sync') this.markBehind(r, b);
    for (const r of live) this.sendRecords(r, b.dataset, b.recordSize, c.batchId, c.buf);
    await Promise.all(live.map((r) => this.underLag(r)));
  }

  /** Closes a batch on every live replica; ok once every healthy replica has it durable. */
  async eob(el: EobElement, recordSize = this.opts.recordSize): Promise<AckResult> {
    const b = this.log.open(el.dataset, el.batchId, recordSize, this.tracked());
    this.log.end(b, { kind: 'eob', recordCount: el.recordCount, ...(el.closingHash ? { closingHash: el.closingHash } : {}) });
    const live = this.replicas.filter((r) => this.isLive(r, b));
    for (const r of this.replicas) if (!live.includes(r) && r.state !== 'out-of-sync') this.markBehind(r, b);
    const counted = live.filter((r) => r.state === 'healthy');
    // One `scc.replicate` span a replica, under the batch's `scc.batch` (batchSpans.ts): its close until durable there.
    const results = await Promise.all(
      live.map((r) =>
        inSpan('scc.replicate', async (span) => {
          const res = await this.closeOn(r, b, el.recordCount, el.closingHash);
          span.setAttribute('hd.result', res instanceof HdwpStreamError ? 'refused' : res);
          return res;
        }, { kind: SpanKind.CLIENT, attributes: { 'hd.replica': r.target.name, 'hd.replica_state': r.state } }),
      ),
    );
    const resultOf = (r: Replica): 'ok' | 'failed' | HdwpStreamError => results[live.indexOf(r)];
    const okCount = counted.filter((r) => resultOf(r) === 'ok').length;
    const refusers = live.filter((r) => resultOf(r) instanceof HdwpStreamError);
    const firstRefusal = counted.map(resultOf).find((x): x is HdwpStreamError => x instanceof HdwpStreamError);
    if (okCount === 0 && firstRefusal) {
      // The healthy replicas refused the batch itself: the batch is bad, not the replicas. Replicas
      // that missed it get a bbn when caught up, so no partial copy survives anywhere.
      this.log.end(b, { kind: 'bbn', reason: `refused by the replicas: ${firstRefusal.message}` });
      for (const r of refusers) this.log.done(b, r.target.name);
      return { ok: false, code: firstRefusal.frameCode ?? HDWP_ERROR_FRAME_CODES.internal, message: `refused by the replicas: ${firstRefusal.message}` };
    }
    // Refused here but durable elsewhere: that replica is inconsistent and is caught up.
    for (const r of refusers) this.fail(r, `refused batch ${el.batchId.toString()} that other replicas made durable: ${(resultOf(r) as HdwpStreamError).message}`);
    if (okCount === 0) return { ok: false, code: HDWP_ERROR_FRAME_CODES.internal, message: `no healthy replica made batch ${el.batchId.toString()} durable: ${this.describe()}` };
    return el.closingHash ? { ok: true, closingHash: el.closingHash } : { ok: true };
  }

  /** Discards a batch on every live replica; the replicas that are down get the bbn when caught up. */
  async bbn(el: BbnElement, recordSize = this.opts.recordSize): Promise<AckResult> {
    const b = this.log.open(el.dataset, el.batchId, recordSize, this.tracked());
    this.log.end(b, { kind: 'bbn', reason: el.reason });
    const live = this.replicas.filter((r) => this.isLive(r, b));
    for (const r of this.replicas) if (!live.includes(r) && r.state !== 'out-of-sync') this.markBehind(r, b);
    await Promise.all(live.map((r) => this.discard(r, b, el.reason)));
    return { ok: true };
  }

  /** The replicas part of /health. */
  health(): HealthPart {
    const healthy = this.replicas.filter((r) => r.state === 'healthy').length;
    const status: HealthStatus = healthy === this.replicas.length ? 'ok' : 'degraded';
    return {
      status,
      healthy,
      total: this.replicas.length,
      catch_up_log: { batches: this.log.size, bytes: this.log.bytes, truncated_batches: this.log.truncations },
      replicas: this.replicas.map((r) => ({
        name: r.target.name,
        address: `${r.target.host}:${r.target.prodPort}`,
        state: r.state,
        reason: r.reason,
        since: new Date(r.since).toISOString(),
        streams: r.clients.size,
        lag_bytes: r.lagBytes,
        lag_batches: this.log.waitingFor(r.target.name).length,
        behind_batches: r.behind.size,
        acked_batches: r.acked,
        failures: r.failures,
      })),
    };
  }

  /** The Storage Nodes replicated to now. */
  get targets(): SnTarget[] {
    return this.replicas.map((r) => r.target);
  }

  /**
   * Changes the replica set without a restart (the DMS changed the cluster, docs/scc.md "Replica
   * set from the DMS"): a node that left has its streams closed and is forgotten by the catch-up
   * log; a new node (or one whose address changed) gets the batches that open from now on, not
   * those already open (they could reach it only in part). Returns what changed, for the log.
   */
  setTargets(targets: readonly SnTarget[]): { added: string[]; removed: string[] } {
    const same = (a: SnTarget, b: SnTarget): boolean => a.host === b.host && a.prodPort === b.prodPort && a.controlPort === b.controlPort;
    const removed: string[] = [];
    for (const r of [...this.replicas]) {
      const next = targets.find((t) => t.name === r.target.name);
      if (next && same(next, r.target)) continue;
      this.replicas.splice(this.replicas.indexOf(r), 1);
      r.epoch++;
      clearTimeout(r.timer);
      for (const c of r.clients.values()) c.then((x) => x.close()).catch(() => undefined);
      r.clients.clear();
      this.wakeLag(r);
      this.log.forget(r.target.name);
      removed.push(r.target.name);
    }
    const added: string[] = [];
    const open = this.log.keys();
    for (const t of targets) {
      if (this.replicas.some((r) => r.target.name === t.name)) continue;
      const r = newReplica(t, this.minBackoff);
      for (const key of open) r.behind.add(key);
      this.replicas.push(r);
      added.push(t.name);
    }
    return { added, removed: removed.filter((n) => !added.includes(n)) };
  }

  /**
   * Applies the DMS's quarantine (docs/scc.md, "Quarantine"): a replica named in `names` becomes
   * `quarantined` — its streams are closed, it takes no queries (running legs move off it), gets no
   * batches and does not count for acknowledgements; what it misses waits for it in the catch-up
   * log. One no longer named is released: caught up from the log like a replica back from a
   * failure, it takes queries again only once level (or `syncing` until its node reports ready).
   * An `out-of-sync` replica is left as it is. Returns what changed, for the log.
   */
  setQuarantined(names: ReadonlySet<string>): { quarantined: string[]; released: string[] } {
    const quarantined: string[] = [];
    const released: string[] = [];
    for (const r of this.replicas) {
      const name = r.target.name;
      if (names.has(name) && r.state !== 'quarantined' && r.state !== 'out-of-sync') {
        r.epoch++;
        clearTimeout(r.timer);
        for (const c of r.clients.values()) c.then((x) => x.close()).catch(() => undefined);
        r.clients.clear();
        r.lagBytes = 0;
        this.wakeLag(r);
        for (const b of this.log.waitingFor(name)) r.behind.add(b.key);
        r.state = 'quarantined';
        r.reason = 'quarantined on the DMS: no queries, no batches (kept in the catch-up log for it) until released';
        r.since = Date.now();
        this.lag(r);
        this.opts.onEvent?.(`replica ${name} is quarantined (DMS): queries and batches go to the other replicas`);
        quarantined.push(name);
      } else if (!names.has(name) && r.state === 'quarantined') {
        r.state = 'down';
        r.reason = `released from quarantine; ${r.behind.size} batch(es) to catch up`;
        r.since = Date.now();
        r.backoff = this.minBackoff;
        this.opts.onEvent?.(`replica ${name} is released from quarantine (DMS): catching up before it takes queries`);
        void catchUpReplica(this.catchUp, r);
        released.push(name);
      }
    }
    return { quarantined, released };
  }

  /** Closes every stream and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.syncTimer);
    const all: Promise<unknown>[] = [];
    for (const r of this.replicas) {
      clearTimeout(r.timer);
      r.epoch++;
      for (const c of r.clients.values()) all.push(c.then((x) => x.close()).catch(() => undefined));
      r.clients.clear();
      this.wakeLag(r);
    }
    await Promise.all(all);
    this.log.clear();
  }

  private tracked(): string[] {
    return this.replicas.filter((r) => r.state !== 'out-of-sync').map((r) => r.target.name);
  }

  /** The replica gets this batch's elements as they come (not through catch-up). */
  private isLive(r: Replica, b: LoggedBatch): boolean {
    return (r.state === 'healthy' || r.state === 'catching-up' || r.state === 'syncing') && !r.behind.has(b.key);
  }

  /**
   * Asks the healthy and syncing replicas whether they are in cold-boot synchronisation: a healthy
   * one that is becomes `syncing` (no queries, no acknowledgement counted; batches still go to it
   * live); a syncing one that is ready is caught up from the log (what it missed while it was not
   * live) and then healthy. A replica that does not answer keeps its state.
   */
  private async pollSync(): Promise<void> {
    const probe = this.opts.syncProbe;
    if (!probe || this.polling || this.closed) return;
    this.polling = true;
    try {
      await Promise.all(
        this.replicas
          .filter((r) => r.state === 'healthy' || r.state === 'syncing')
          .map(async (r) => {
            const epoch = r.epoch;
            const was = r.state;
            const s = await probe(r.target);
            if (this.closed || r.epoch !== epoch || r.state !== was) return;
            if (was === 'healthy' && s === 'syncing') this.setSyncing(r);
            else if (was === 'syncing' && s === 'ready') {
              // What it missed before it was live again comes from the log, as for any returning replica.
              r.state = 'down';
              void catchUpReplica(this.catchUp, r);
            }
          }),
      );
    } finally {
      this.polling = false;
    }
  }

  private setSyncing(r: Replica): void {
    r.state = 'syncing';
    r.reason = 'the node reports cold-boot synchronisation: no queries, its acknowledgements do not count until it is ready';
    r.since = Date.now();
    this.opts.onEvent?.(`replica ${r.target.name} is syncing (cold-boot synchronisation)`);
  }

  private markBehind(r: Replica, b: LoggedBatch): void {
    if (b.waitingFor.has(r.target.name)) r.behind.add(b.key);
  }

  private client(r: Replica, dataset: string, recordSize: number): Promise<HdwpClient> {
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

  private sendRecords(r: Replica, dataset: string, recordSize: number, batchId: BatchID, buf: Buffer): void {
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

  /** Resolves once `r` is at most `maxLag` behind, marking it down if that takes longer than the ack timeout. */
  private async underLag(r: Replica): Promise<void> {
    if (r.lagBytes <= this.maxLag) return;
    const epoch = r.epoch;
    const waited = within(
      (async () => {
        while (r.epoch === epoch && r.lagBytes > this.maxLag) await new Promise<void>((res) => r.lagWaiters.push(res));
      })(),
      this.ackTimeout,
    );
    if ((await waited) === TIMEOUT && r.epoch === epoch) this.fail(r, `fell behind: ${r.lagBytes} bytes unsent for ${this.ackTimeout} ms`);
  }

  private wakeLag(r: Replica): void {
    const w = r.lagWaiters;
    r.lagWaiters = [];
    for (const f of w) f();
  }

  /** Sends the eob to `r` and waits for its durable ack: 'ok', the replica's refusal of the batch, or 'failed'. */
  private async closeOn(r: Replica, b: LoggedBatch, recordCount: number, closingHash?: Uint8Array): Promise<'ok' | 'failed' | HdwpStreamError> {
    const epoch = r.epoch;
    try {
      const c = await this.client(r, b.dataset, b.recordSize);
      const ack = await within(c.sendEob(b.batchId, recordCount, closingHash), this.ackTimeout);
      if (ack === TIMEOUT) throw new Error(`no durable ack for batch ${b.batchId.toString()} within ${this.ackTimeout} ms`);
      r.acked++;
      this.log.done(b, r.target.name);
      this.lag(r);
      return 'ok';
    } catch (err) {
      if (r.epoch !== epoch) return 'failed';
      if (isBatchRefusal(err)) {
        this.opts.onEvent?.(`replica ${r.target.name} refused batch ${b.batchId.toString()}: ${err.message}`);
        return err;
      }
      this.fail(r, (err as Error).message);
      return 'failed';
    }
  }

  private async discard(r: Replica, b: LoggedBatch, reason: string): Promise<void> {
    const epoch = r.epoch;
    try {
      const c = await this.client(r, b.dataset, b.recordSize);
      if ((await within(c.sendBbn(b.batchId, reason), this.ackTimeout)) === TIMEOUT) throw new Error(`bbn of batch ${b.batchId.toString()} not echoed within ${this.ackTimeout} ms`);
      this.log.done(b, r.target.name);
    } catch (err) {
      // A refused bbn (the batch is durable there) needs no catch-up: the replica is consistent.
      if (isBatchRefusal(err)) this.log.done(b, r.target.name);
      else if (r.epoch === epoch) this.fail(r, (err as Error).message);
    }
  }

  private lag(r: Replica): void {
    this.opts.onLag?.(r.target.name, this.log.waitingFor(r.target.name).length);
  }

  /** Marks `r` down: its streams are closed, everything it has not acknowledged is caught up later. */
  private fail(r: Replica, reason: string): void {
    if (this.closed || r.state === 'out-of-sync' || r.state === 'quarantined') return;
    r.epoch++;
    r.failures++;
    const was = r.state;
    r.state = 'down';
    r.reason = reason;
    r.since = Date.now();
    for (const c of r.clients.values()) c.then((x) => x.close()).catch(() => undefined);
    r.clients.clear();
    r.lagBytes = 0;
    this.wakeLag(r);
    for (const b of this.log.waitingFor(r.target.name)) r.behind.add(b.key);
    if (was !== 'down') this.opts.onEvent?.(`replica ${r.target.name} is down: ${reason}`);
    this.lag(r);
    clearTimeout(r.timer);
    r.timer = setTimeout(() => void catchUpReplica(this.catchUp, r), r.backoff);
    r.timer.unref?.();
    r.backoff = Math.min(r.backoff * 2, this.opts.backoffMs?.max ?? 5000);
  }

  private outOfSync(r: Replica, reason: string): void {
    if (r.state === 'out-of-sync') return;
    r.epoch++;
    clearTimeout(r.timer);
    for (const c of r.clients.values()) c.then((x) => x.close()).catch(() => undefined);
    r.clients.clear();
    r.behind.clear();
    r.state = 'out-of-sync';
    r.reason = `${reason}; it needs a full resynchronisation before it serves again`;
    r.since = Date.now();
    this.log.forget(r.target.name);
    this.opts.onEvent?.(`replica ${r.target.name} is out of sync: ${r.reason}`);
  }

  private describe(): string {
    return this.replicas.map((r) => `${r.target.name} ${r.state} (${r.reason})`).join('; ');
  }
}

/** Key helper re-exported for the sink's bookkeeping. */
export { batchKey };

function defaultConnect(target: SnTarget, datasetId: string, recordSize: number): Promise<HdwpClient> {
  return HdwpClient.connect({ host: target.host, port: target.prodPort, role: 'scc', datasetId, recordSize, connectTimeoutMs: 5000 });
}
