/**
 * The SCC's replicas (docs/scc.md, "Replication"): one HDWP stream per Storage Node and dataset,
 * every batch sent to every replica that is up, an end-of-batch durable once every healthy replica
 * acknowledged it. A replica that errors, disconnects or falls behind is marked down, retried with
 * backoff and, once it answers again, caught up from the {@link CatchUpLog} (catchUp.ts) before it
 * counts as healthy again. A replica that missed batches the log no longer holds is out of sync.
 *
 * This file is the set: which replicas get each batch, what an end-of-batch's answers add up to,
 * membership (the DMS's replica set and quarantine) and /health. What happens on one replica's
 * link — streams, lag, acknowledgements, failures — is replicaLinks.ts; the cold-boot
 * synchronisation probe is replicaSyncPoll.ts.
 *
 * With `replication: norm` (docs/replication-norm.md) records, eob and bbn go once to the NORM
 * multicast group (normReplication.ts) instead of once per replica; each replica still gets its
 * eob / bbn on its TCP stream and answers there, so an eob is durable only when every healthy
 * replica said so, and catch-up stays on TCP.
 */
import type { LogFn } from '../../lib/logging';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import type { HealthPart, HealthStatus } from '../../lib/observability';
import type { AckResult, BbnElement, BatchedRecordChunk, EobElement } from '../../stream/chunk';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { catchUpReplica } from './catchUp';
import { batchKey, CatchUpLog, type LoggedBatch } from './catchUpLog';
import { newReplica, type Replica, type ReplicaState } from './replica';
import { ReplicaLinks, type ReplicaConnector } from './replicaLinks';
import { ReplicaSyncPoll } from './replicaSyncPoll';
import type { NormReplication } from './normReplication';
import type { SnTarget } from './settings';
import type { SyncProbe } from './syncProbe';
import { inSpan, SpanKind } from '../../lib/tracing/spans';

export type { ReplicaState } from './replica';
export type { ReplicaConnector } from './replicaLinks';

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
  readonly onEvent?: LogFn;
  /** Told how many batches each replica has not made durable yet (the replica lag metric). */
  readonly onLag?: (replica: string, batches: number) => void;
  /** Asks a node whether it is in cold-boot synchronisation (syncProbe.ts); absent: never asked, no replica is `syncing`. */
  readonly syncProbe?: SyncProbe;
  /** How often healthy and syncing replicas are asked; default 500 ms. */
  readonly syncPollMs?: number;
  /** `replication: norm`: the multicast stream batches are written to once (closed with the set); absent: TCP per replica. */
  readonly norm?: NormReplication;
}

/** The replicas of one SCC. */
export class ReplicaSet {
  private readonly replicas: Replica[];
  private readonly log: CatchUpLog;
  private readonly minBackoff: number;
  /** One replica's link: streams, lag, acknowledgements, failures (and the context catch-up works through). */
  private readonly links: ReplicaLinks;
  private readonly syncPoll: ReplicaSyncPoll | undefined;
  private closed = false;

  /** @param opts targets and bounds */
  constructor(private readonly opts: ReplicaSetOptions) {
    this.minBackoff = opts.backoffMs?.min ?? 100;
    this.log = new CatchUpLog({
      maxBytes: opts.logBytes ?? 256 * 1024 * 1024,
      onLost: (names, b) => {
        for (const r of this.replicas) if (names.includes(r.target.name)) this.links.outOfSync(r, `batch ${b.batchId.toString()} of '${b.dataset}' was dropped from the catch-up log`);
      },
    });
    const now = Date.now();
    this.replicas = opts.targets.map((target) => newReplica(target, this.minBackoff, now));
    this.links = new ReplicaLinks({
      log: this.log,
      maxLagBytes: opts.maxLagBytes ?? 64 * 1024 * 1024,
      ackTimeoutMs: opts.ackTimeoutMs ?? 30_000,
      minBackoffMs: this.minBackoff,
      maxBackoffMs: opts.backoffMs?.max ?? 5000,
      ...(opts.connect && { connect: opts.connect }),
      closed: () => this.closed,
      ...(opts.onEvent && { onEvent: opts.onEvent }),
      ...(opts.onLag && { onLag: opts.onLag }),
      syncing: async (r) => (await this.opts.syncProbe?.(r.target)) === 'syncing',
      resendMismatched: opts.norm !== undefined,
    });
    if (opts.syncProbe) this.syncPoll = new ReplicaSyncPoll(opts.syncProbe, opts.syncPollMs ?? 500, () => this.replicas, this.links);
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
    if (this.opts.norm) {
      // Once on the group; each live replica's TCP stream is opened for its eob (a failure to open marks it down).
      for (const r of live) this.links.client(r, b.dataset, b.recordSize).catch(() => undefined);
      await this.opts.norm.records(b.dataset, c.batchId, b.recordSize, c.buf);
      return;
    }
    for (const r of live) this.links.sendRecords(r, b.dataset, b.recordSize, c.batchId, c.buf);
    await Promise.all(live.map((r) => this.links.underLag(r)));
  }

  /** Closes a batch on every live replica; ok once every healthy replica has it durable. */
  async eob(el: EobElement, recordSize = this.opts.recordSize): Promise<AckResult> {
    const b = this.log.open(el.dataset, el.batchId, recordSize, this.tracked());
    this.log.end(b, { kind: 'eob', recordCount: el.recordCount, ...(el.closingHash ? { closingHash: el.closingHash } : {}) });
    const live = this.replicas.filter((r) => this.isLive(r, b));
    for (const r of this.replicas) if (!live.includes(r) && r.state !== 'out-of-sync') this.markBehind(r, b);
    const counted = live.filter((r) => r.state === 'healthy');
    // On the group first: a replica's eob waits there until the group's records and eob reached it.
    await this.opts.norm?.eob(b.dataset, b.batchId, el.recordCount, el.closingHash);
    // One `scc.replicate` span a replica, under the batch's `scc.batch` (batchSpans.ts): its close until durable there.
    const results = await Promise.all(
      live.map((r) =>
        inSpan('scc.replicate', async (span) => {
          const res = await this.links.closeOn(r, b, el.recordCount, el.closingHash);
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
    for (const r of refusers) this.links.fail(r, `refused batch ${el.batchId.toString()} that other replicas made durable: ${(resultOf(r) as HdwpStreamError).message}`);
    if (okCount === 0) return { ok: false, code: HDWP_ERROR_FRAME_CODES.internal, message: `no healthy replica made batch ${el.batchId.toString()} durable: ${this.describe()}` };
    return el.closingHash ? { ok: true, closingHash: el.closingHash } : { ok: true };
  }

  /** Discards a batch on every live replica; the replicas that are down get the bbn when caught up. */
  async bbn(el: BbnElement, recordSize = this.opts.recordSize): Promise<AckResult> {
    const b = this.log.open(el.dataset, el.batchId, recordSize, this.tracked());
    this.log.end(b, { kind: 'bbn', reason: el.reason });
    const live = this.replicas.filter((r) => this.isLive(r, b));
    for (const r of this.replicas) if (!live.includes(r) && r.state !== 'out-of-sync') this.markBehind(r, b);
    await this.opts.norm?.bbn(b.dataset, b.batchId, el.reason);
    await Promise.all(live.map((r) => this.links.discard(r, b, el.reason)));
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
      replication: this.opts.norm?.health() ?? { mode: 'tcp' },
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
        ...(this.opts.norm && { tcp_resends: this.links.resends(r) }),
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
      this.links.closeStreams(r);
      this.links.wakeLag(r);
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
        this.links.closeStreams(r);
        r.lagBytes = 0;
        this.links.wakeLag(r);
        for (const b of this.log.waitingFor(name)) r.behind.add(b.key);
        r.state = 'quarantined';
        r.reason = 'quarantined on the DMS: no queries, no batches (kept in the catch-up log for it) until released';
        r.since = Date.now();
        this.links.lag(r);
        this.opts.onEvent?.(`replica ${name} is quarantined (DMS): queries and batches go to the other replicas`, 'warn');
        quarantined.push(name);
      } else if (!names.has(name) && r.state === 'quarantined') {
        r.state = 'down';
        r.reason = `released from quarantine; ${r.behind.size} batch(es) to catch up`;
        r.since = Date.now();
        r.backoff = this.minBackoff;
        this.opts.onEvent?.(`replica ${name} is released from quarantine (DMS): catching up before it takes queries`, 'info');
        void catchUpReplica(this.links, r);
        released.push(name);
      }
    }
    return { quarantined, released };
  }

  /** Closes every stream and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    this.syncPoll?.stop();
    const all: Promise<unknown>[] = [];
    for (const r of this.replicas) {
      clearTimeout(r.timer);
      r.epoch++;
      all.push(...this.links.closeStreams(r));
      this.links.wakeLag(r);
    }
    await Promise.all(all);
    this.opts.norm?.close();
    this.log.clear();
  }

  private tracked(): string[] {
    return this.replicas.filter((r) => r.state !== 'out-of-sync').map((r) => r.target.name);
  }

  /** The replica gets this batch's elements as they come (not through catch-up). */
  private isLive(r: Replica, b: LoggedBatch): boolean {
    return (r.state === 'healthy' || r.state === 'catching-up' || r.state === 'syncing') && !r.behind.has(b.key);
  }

  private markBehind(r: Replica, b: LoggedBatch): void {
    if (b.waitingFor.has(r.target.name)) r.behind.add(b.key);
  }

  private describe(): string {
    return this.replicas.map((r) => `${r.target.name} ${r.state} (${r.reason})`).join('; ');
  }
}

/** Key helper re-exported for the sink's bookkeeping. */
export { batchKey };

