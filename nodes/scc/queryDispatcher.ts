/**
 * The SCC's query dispatch (docs/query.md, "Dispatch" and "What the SCC does"): validates a query,
 * checks the client's return address, admits it by QoS, places its batches on healthy replicas
 * ({@link QueryRun}) and cancels it on request. Every refusal is a {@link QueryDispatchFailure}
 * carrying the gRPC status the service answers with.
 */
import type tls from 'node:tls';
import { status } from '@grpc/grpc-js';
import type { CancelReply, DispatchReply } from '../../query/dispatch/dispatchService';
import { parseHdQuery, QueryError, type HdQuery } from '../../query/hdQuery';
import { sameToken } from '../../query/token';
import { LegConnectionPool, type LegConnectionPoolOptions } from './legConnections';
import { QueryAdmission } from './queryAdmission';
import { hostPort, ReachabilityCache, REACHABILITY_TIMEOUT_MS } from '../../lib/reachability';
import { QueryRun, type QueryRunOptions } from './queryRun';
import type { ReplicaState } from './replicas';
import type { SnTarget } from './settings';
import { WindowRefusal, type QueryWindowResolver } from './queryWindow';
import type { LogFn } from '../../lib/logging';

/** A refused Dispatch or CancelQuery: the gRPC status and a message naming what is wrong. */
export class QueryDispatchFailure extends Error {
  /** @param code gRPC status; @param message the details sent to the client */
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
    this.name = 'QueryDispatchFailure';
  }
}

/** Largest Dispatch query JSON: 16 MiB holds 100 000 batch ids. */
export const MAX_DISPATCH_JSON_BYTES = 16 * 1024 * 1024;
/** Finished queries remembered, so a late cancel is answered `cancelled: false` rather than NOT_FOUND. */
const RECENT_QUERIES = 1024;

/** Options of {@link QueryDispatcher}. */
export interface QueryDispatcherOptions {
  /** The SCC's NODE_NAME (in messages). */
  readonly nodeName: string;
  /** SN_TARGETS: queries go to each node's control_port (read per query: the replica set may change). */
  readonly targets: readonly SnTarget[] | (() => readonly SnTarget[]);
  /** RECORD_SIZE, sent in the legs' hello. */
  readonly recordSize: number;
  /** Each dataset's record size (its schema's on the DMS); absent: `recordSize` for every dataset. */
  readonly recordSizeOf?: (dataset: string) => number;
  /** Replica states by name; undefined while no replica set is registered (every target counts as healthy). */
  readonly health: () => Readonly<Record<string, ReplicaState>> | undefined;
  /** Most queries running at once; default 256. */
  readonly maxQueries?: number;
  /** A query still running after this long is cancelled (0: never); default 1 hour. */
  readonly maxQueryMs?: number;
  /** Time to connect to a node; default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Time to connect to the return address; default 2 s. */
  readonly reachTimeoutMs?: number;
  /** How long a return address that answered is trusted without a new probe; default {@link DEFAULT_REACH_TRUST_MS}, 0 probes every dispatch. */
  readonly reachTrustMs?: number;
  /** The SCC's TLS client options for clients listening with mutual TLS (`return_address.tls`): its notices, and the return address check. */
  readonly resultTls?: () => tls.ConnectionOptions;
  /** Mutual TLS of the query legs to a node (the SCC's identity, linkTls.ts); undefined, or no function: plain TCP. */
  readonly legTls?: (node: SnTarget) => tls.ConnectionOptions | undefined;
  /** Idle query-leg connections kept per node (legConnections.ts); default: kept 10 s, reused up to 60 s after they opened. */
  readonly legConnections?: LegConnectionPoolOptions;
  /** How often running queries look at replica health; default 200 ms. */
  readonly healthCheckMs?: number;
  /** A query's problems worth a log line (a leg that ended early, a cancel), each with its level. */
  readonly onEvent?: LogFn;
  /** Every bbn a node answered a query leg with (QueryRunOptions.onBadBatch). */
  readonly onBadBatch?: QueryRunOptions['onBadBatch'];
  /**
   * Resolves a query's `time_window` to the batches the healthy replicas hold (queryWindow.ts);
   * absent: a window is refused with FAILED_PRECONDITION.
   */
  readonly windows?: QueryWindowResolver;
}

/** Default time a reachable return address is trusted: a few seconds, so a client's stream of small queries pays one probe, and a listener gone for longer is refused again. */
export const DEFAULT_REACH_TRUST_MS = 5000;

/** Counters of the dispatcher. */
export interface QueryDispatchStats {
  readonly running: number;
  readonly dispatched: number;
  readonly refused: number;
  readonly cancelled: number;
  /** Query-leg connections: reused from the pool, opened fresh, handed back, closed while idle, idle now. */
  readonly legConnections: LegConnectionPool['stats'];
}

/** Serves Dispatch and CancelQuery for one SCC. */
export class QueryDispatcher {
  private readonly runs = new Map<number, QueryRun>();
  /** Ids being checked (between validation and placement), so a duplicate cannot slip in. */
  private readonly starting = new Set<number>();
  private readonly recent = new Map<number, Uint8Array>();
  private readonly admission: QueryAdmission;
  private readonly reachable: ReachabilityCache;
  private readonly pool: LegConnectionPool;
  private healthTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private counts = { dispatched: 0, refused: 0, cancelled: 0 };

  /** The replicas now (SN_TARGETS, or the DMS's replica set). */
  private targets(): readonly SnTarget[] {
    return typeof this.opts.targets === 'function' ? this.opts.targets() : this.opts.targets;
  }

  /** @param opts targets, health, limits */
  constructor(private readonly opts: QueryDispatcherOptions) {
    this.admission = new QueryAdmission(opts.maxQueries ?? 256);
    this.reachable = new ReachabilityCache(opts.reachTrustMs ?? DEFAULT_REACH_TRUST_MS);
    this.pool = new LegConnectionPool(opts.legConnections);
  }

  /** What the dispatcher has done so far. */
  get stats(): QueryDispatchStats {
    return { running: this.runs.size, ...this.counts, legConnections: this.pool.stats };
  }

  /** Runs a query given as HDQuery JSON; resolves with where its batches went. */
  async dispatch(json: string): Promise<DispatchReply> {
    try {
      return await this.start(json);
    } catch (err) {
      this.counts.refused++;
      throw err;
    }
  }

  /** Cancels a running query on every node holding it. */
  cancel(queryId: number, tokenHex: string): CancelReply {
    if (!/^[0-9a-fA-F]{32}$/.test(tokenHex)) throw new QueryDispatchFailure(status.INVALID_ARGUMENT, `token: expected 32 hex digits, got ${JSON.stringify(tokenHex.slice(0, 40))}`);
    const token = Buffer.from(tokenHex, 'hex');
    const run = this.runs.get(queryId);
    if (run && sameToken(run.query.token, token)) {
      this.counts.cancelled++;
      return { cancelled: true, nodes: run.cancel() };
    }
    const done = this.recent.get(queryId);
    if (!run && done && sameToken(done, token)) return { cancelled: false, nodes: 0 };
    throw new QueryDispatchFailure(status.NOT_FOUND, `no query ${queryId} with that token on ${this.opts.nodeName}`);
  }

  /** Cancels every running query and stops; later dispatches are refused. */
  close(): void {
    this.closed = true;
    for (const run of [...this.runs.values()]) run.cancel();
    this.pool.close();
    clearInterval(this.healthTimer);
    this.healthTimer = undefined;
  }

  private async start(json: string): Promise<DispatchReply> {
    if (this.closed) throw new QueryDispatchFailure(status.UNAVAILABLE, `${this.opts.nodeName} is shutting down`);
    let query: HdQuery;
    try {
      query = parseHdQuery(json, { maxBytes: MAX_DISPATCH_JSON_BYTES });
    } catch (err) {
      if (err instanceof QueryError) throw new QueryDispatchFailure(status.INVALID_ARGUMENT, err.message);
      throw err;
    }
    const id = query.queryId;
    if (this.runs.has(id) || this.starting.has(id)) throw new QueryDispatchFailure(status.ALREADY_EXISTS, `query_id: query ${id} is still running on ${this.opts.nodeName}`);
    if (!this.admission.tryAdmit(query.queryQos)) {
      const limit = this.admission.limitFor(query.queryQos);
      throw new QueryDispatchFailure(status.RESOURCE_EXHAUSTED, `admission full on ${this.opts.nodeName}: ${this.admission.active} queries running; a query of query_qos ${query.queryQos} is admitted below ${limit} (max_queries ${this.admission.maxQueries})`);
    }
    this.starting.add(id);
    let admitted = false;
    try {
      const { host, port } = query.returnAddress;
      const why = await this.reachable.check(host, port, this.opts.reachTimeoutMs ?? REACHABILITY_TIMEOUT_MS);
      if (why) throw new QueryDispatchFailure(status.FAILED_PRECONDITION, `return address ${hostPort(host, port)} is not reachable from ${this.opts.nodeName}: ${why}`);
      // A window (ours) becomes the batches the replicas hold in it: from here on the query names them.
      const windowIds = query.timeWindow ? await this.resolveWindow(query) : undefined;
      if (windowIds) {
        const { timeWindow: _w, ...named } = query;
        query = { ...named, batchIds: windowIds };
        // Nothing exists in the window: nothing to run, and the client expects no batch.
        if (windowIds.length === 0) {
          this.counts.dispatched++;
          this.remember(id, query.token);
          return { queryId: id, batches: 0, nodes: [], missingBatchIds: [], batchIds: [] };
        }
      }
      if (this.closed) throw new QueryDispatchFailure(status.UNAVAILABLE, `${this.opts.nodeName} is shutting down`);
      const run = new QueryRun({
        query,
        targets: this.targets(),
        recordSize: this.opts.recordSizeOf?.(query.dataset) ?? this.opts.recordSize,
        health: this.opts.health,
        maxQueryMs: this.opts.maxQueryMs ?? 3_600_000,
        connectTimeoutMs: this.opts.connectTimeoutMs,
        pool: this.pool,
        ...(this.opts.resultTls && { resultTls: this.opts.resultTls }),
        ...(this.opts.legTls && { legTls: this.opts.legTls }),
        onEvent: this.opts.onEvent,
        ...(this.opts.onBadBatch && { onBadBatch: this.opts.onBadBatch }),
        onFinished: (r) => this.finished(r),
      });
      this.runs.set(id, run);
      admitted = true;
      const placed = run.start();
      if (placed.batches === 0 && placed.missing.length > 0) {
        const states = this.opts.health() ?? {};
        const described = this.targets().map((t) => `${t.name} ${states[t.name] ?? 'unknown'}`).join(', ');
        throw new QueryDispatchFailure(status.UNAVAILABLE, `no healthy replica for any of the ${placed.missing.length} batch(es) of query ${id} (${described})`);
      }
      this.counts.dispatched++;
      this.watchHealth();
      return { queryId: id, batches: placed.batches, nodes: placed.nodes, missingBatchIds: placed.missing, ...(windowIds && { batchIds: windowIds }) };
    } finally {
      this.starting.delete(id);
      if (!admitted) this.admission.release();
    }
  }

  /** The batches of the query's `time_window` (queryWindow.ts), a refusal as a QueryDispatchFailure of its status. */
  private async resolveWindow(query: HdQuery): Promise<string[]> {
    const w = query.timeWindow;
    if (!w) return [];
    if (!this.opts.windows) throw new QueryDispatchFailure(status.FAILED_PRECONDITION, `time_window: ${this.opts.nodeName} does not resolve time windows; send batch_ids`);
    try {
      return await this.opts.windows.resolve(query.dataset, w);
    } catch (err) {
      if (err instanceof WindowRefusal) throw new QueryDispatchFailure(err.code, err.message);
      throw err;
    }
  }

  /** Keeps a finished query's token, so a late cancel is answered `cancelled: false`. */
  private remember(id: number, token: Uint8Array): void {
    this.recent.set(id, token);
    if (this.recent.size > RECENT_QUERIES) this.recent.delete(this.recent.keys().next().value as number);
  }

  private finished(run: QueryRun): void {
    const id = run.query.queryId;
    if (this.runs.get(id) !== run) return;
    this.runs.delete(id);
    this.admission.release();
    this.remember(id, run.query.token);
    if (this.runs.size === 0) {
      clearInterval(this.healthTimer);
      this.healthTimer = undefined;
    }
  }

  private watchHealth(): void {
    if (this.healthTimer || this.runs.size === 0) return;
    this.healthTimer = setInterval(() => {
      for (const run of [...this.runs.values()]) run.checkHealth();
    }, this.opts.healthCheckMs ?? 200);
    this.healthTimer.unref();
  }
}
