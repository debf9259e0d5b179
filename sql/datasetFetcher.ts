/**
 * Fetching a dataset's rows for a plan: one HDQuery per dataset read through the SDK's
 * PlatformQueryClient (straight to the SCCs or through the Proxy), each batch handed over as it
 * arrives. With HD_SQL_IDENTITY=user each read carries its statement's SQL user (sql/sqlUser.ts)
 * to the Proxy as X-Forwarded-Role / X-Forwarded-Email instead of the service's identity.
 */
import type * as arrow from 'apache-arrow';
import { HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';
import type { Schema } from '../engine-rs/schema';
import { status as grpcStatus } from '@grpc/grpc-js';
import { DispatchError } from '../query/dispatch/dispatchClient';
import type { BatchError } from '../query/hdQuery';
import { recordWindow } from '../query/timeRange';
import type { PlatformQueryClient } from '../sdk/platformQueryClient';
import type { AggregatePartial } from './aggregateMerge';
import type { AggregateSpec } from './aggregatePushdown';
import type { DatasetRead } from './planner';
import { SqlError } from './sqlError';
import { currentSqlUser } from './sqlUser';
import { inSpan } from '../lib/tracing/spans';

/** Options of {@link QueryClientFetcher}. */
export interface QueryClientFetcherOptions {
  /**
   * Send each statement's SQL user as X-Forwarded-Role / X-Forwarded-Email (HD_SQL_IDENTITY=user,
   * Proxy mode); a read with no user is refused rather than sent with whoever asked last.
   */
  readonly forwardSqlUser?: boolean;
  /**
   * How the Storage Nodes send the rows: `'columns'` (default) — decoded on the nodes, only the
   * columns the statement reads (docs/query.md, "Columnar results"); `'records'` — raw records,
   * decoded here (HD_SQL_RESULT_FORMAT=records, e.g. for nodes older than columnar results).
   */
  readonly resultFormat?: 'records' | 'columns';
}

/** How a fetch ended. */
export interface FetchOutcome {
  /** Batches that failed (bad batch notices, no replica): their records are absent. */
  readonly batchErrors: readonly BatchError[];
  readonly missingBatches: number;
}

/** Fetches the records of one dataset read. */
export interface DatasetFetcher {
  /**
   * Runs the read and awaits `onBatch` for each batch, decoding only `read.columns` when given
   * (batches with every column are accepted too: the engine keeps the projected ones). Rejects with SqlError `query_timeout` when
   * `deadline` passes (the query is cancelled at the SCCs), `upstream_unavailable` when the SCC
   * cannot be reached; aborting `signal` cancels the query.
   */
  fetch(read: DatasetRead, onBatch: (b: arrow.RecordBatch) => Promise<void>, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome>;
  /**
   * Runs the read with the HDQuery `aggregate` extension (docs/query.md): each batch's partial
   * goes to `onPartial` instead of its records; batch accounting as for `fetch`. Rejects like
   * `fetch`, and also when a node refuses the aggregate (code 11): the engine then takes the record
   * path (docs/sql.md, "Aggregate pushdown"). Optional: a fetcher without it never pushes aggregates.
   */
  fetchAggregate?(read: DatasetRead, aggregate: AggregateSpec, onPartial: (p: AggregatePartial) => void, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome>;
}

/**
 * A fetcher over a pool of PlatformQueryClients sharing one result listener (one port: HD_SQL's
 * PLATFORM_DATA_RETURN_PORT). A client runs one query at a time with its own accounting, so the pool
 * size is how many reads run at once; further reads wait for a free client, in arrival order.
 */
export class QueryClientFetcher implements DatasetFetcher {
  private readonly idle: PlatformQueryClient[];
  private readonly waiting = new Set<(c: PlatformQueryClient) => void>();

  /** @param clients clients pointed at their upstream (SCC targets or Proxy); the schema is loaded per read. */
  constructor(
    clients: PlatformQueryClient | readonly PlatformQueryClient[],
    private readonly options: QueryClientFetcherOptions = {},
  ) {
    this.idle = Array.isArray(clients) ? [...clients] : [clients as PlatformQueryClient];
    if (this.idle.length === 0) throw new RangeError('QueryClientFetcher needs at least one query client');
  }

  async fetch(read: DatasetRead, onBatch: (b: arrow.RecordBatch) => Promise<void>, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome> {
    return inSpan('sql.fetch', () => this.withClient(opts, (c) => this.run(c, read, { onBatch }, opts)), { attributes: { 'hd.dataset': read.schema.id, 'hd.aggregate': false } });
  }

  /**
   * The read with the HDQuery `aggregate` extension, placed as `fetch` places records (the SCCs or
   * the Proxy, the SQL user forwarded), without `result_format: "columns"` or `columns` (docs/query.md
   * refuses them with `aggregate`). Each batch's partial goes to `onPartial`; a batch with a bad
   * batch notice is a batch error exactly as on the record path. A node's refusal — batch errors
   * with code 11 (the SCC gives up the leg), or a stream that ends with error 11 (more than
   * `max_groups` groups in a batch; the query is cancelled at once) — rejects with SqlError
   * `query_failed`, which makes the engine take the record path.
   */
  async fetchAggregate(read: DatasetRead, aggregate: AggregateSpec, onPartial: (p: AggregatePartial) => void, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome> {
    return inSpan('sql.fetch', () => this.withClient(opts, (c) => this.run(c, read, { aggregate, onPartial }, opts)), { attributes: { 'hd.dataset': read.schema.id, 'hd.aggregate': true } });
  }

  /** Runs `fn` with a client of the pool, waiting for one in arrival order; hands it on after. */
  private async withClient(opts: { deadline: number; signal?: AbortSignal }, fn: (c: PlatformQueryClient) => Promise<FetchOutcome>): Promise<FetchOutcome> {
    const c = this.idle.pop() ?? (await this.waitForClient(opts));
    try {
      return await fn(c);
    } finally {
      const next = this.waiting.values().next();
      if (!next.done) {
        this.waiting.delete(next.value);
        next.value(c);
      } else this.idle.push(c);
    }
  }

  /**
   * Waits, in arrival order, for a client another read hands back; a cancel (`signal`) or the
   * statement's deadline ends the wait (57014) and takes the read out of the queue.
   */
  private waitForClient(opts: { deadline: number; signal?: AbortSignal }): Promise<PlatformQueryClient> {
    return new Promise<PlatformQueryClient>((resolve, reject) => {
      const leave = (err: SqlError): void => {
        if (!this.waiting.delete(take)) return;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      const take = (client: PlatformQueryClient): void => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        resolve(client);
      };
      const onAbort = (): void => leave(new SqlError('query_timeout', 'canceling statement due to user request (it was waiting for a free read of the Storage Nodes, HD_SQL_CONCURRENT_READS)'));
      const timer = setTimeout(() => leave(new SqlError('query_timeout', 'timed out waiting for a free read of the Storage Nodes (HD_SQL_CONCURRENT_READS are all busy; HD_SQL_QUERY_TIMEOUT_MS)')), Math.max(0, opts.deadline - Date.now()));
      this.waiting.add(take);
      if (opts.signal?.aborted) onAbort();
      else opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async run(c: PlatformQueryClient, read: DatasetRead, how: ReadShape, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome> {
    if (opts.signal?.aborted) throw new SqlError('query_timeout', 'canceling statement due to user request');
    const left = opts.deadline - Date.now();
    if (left <= 0) throw new SqlError('query_timeout', 'timed out before the Storage Nodes were asked (HD_SQL_QUERY_TIMEOUT_MS)');
    if (this.options.forwardSqlUser) {
      const user = currentSqlUser();
      if (!user) throw new SqlError('internal', 'HD_SQL_IDENTITY=user: this statement has no authenticated SQL user to read as');
      // A client runs one read at a time, so its control headers are this read's (they replace the previous user's).
      c.addControlHeader('x-forwarded-role', user.role);
      c.addControlHeader('x-forwarded-email', user.email);
    }
    // Only the intervals that can hold the window's records (the reference's enumeration adds one past the end).
    // However long, the window costs the batches that exist: the Proxy, or straight to the SCCs the
    // SCC (a window over a few thousand intervals goes as `time_window`), names the batches the
    // Storage Nodes hold in it (docs/sql.md, "Time window").
    const w = recordWindow({ start: read.startTime, end: read.endTime }, read.schema.timeIndexInterval);
    c.loadDatasetSchema(read.schema as Schema);
    let why: 'timeout' | 'cancel' | undefined;
    const timer = setTimeout(() => {
      why = 'timeout';
      c.cancelQuery();
    }, left);
    const onAbort = (): void => {
      why ??= 'cancel';
      c.cancelQuery();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    // A node's refusal of the aggregate (error 11 ending its stream): stop the query now, not at the deadline.
    let refused: string | undefined;
    const onStreamError = (code: number, message: string, node: string): void => {
      if (code !== HDWP_ERROR_FRAME_CODES.badQuery || refused !== undefined || why) return;
      refused = `${node}: ${message}`;
      c.cancelQuery();
    };
    try {
      const query = { start_time: w.start, end_time: w.end, sub_queries: read.subQueries, query_qos: opts.qos };
      if ('aggregate' in how) {
        await c.executeStream(query, () => undefined, {
          aggregate: how.aggregate,
          // A node answers many batches with one merged partial (docs/query.md, "Merged results").
          mergeBatches: true,
          onPartial: (p) => {
            if (!why && refused === undefined) how.onPartial(p as AggregatePartial);
          },
          onStreamError,
        });
      } else {
        const { onBatch } = how;
        await c.executeStream(
          query,
          async (b) => {
            if (!why) await onBatch(b);
          },
          { ...(read.columns ? { columns: read.columns } : {}), columnar: this.options.resultFormat !== 'records', ...(read.top ? { top: read.top } : {}), mergeBatches: true },
        );
      }
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      // The SCC's refusals of a window it cannot resolve (nodes/scc/queryWindow.ts): too many batches exist in it, or no replica could say which.
      if (err instanceof DispatchError && err.details.startsWith('time_window')) {
        if (err.code === grpcStatus.INVALID_ARGUMENT && /holds more than \d+ batches/.test(err.details)) throw new SqlError('limit_exceeded', `the time range of ${read.schema.id} [${w.start}, ${w.end}] is too long to read at once: ${err.details} (on ${read.schema.timeField})`, { cause: err });
        if (err.code === grpcStatus.FAILED_PRECONDITION || err.code === grpcStatus.UNAVAILABLE) throw new SqlError('upstream_unavailable', `the SCC could not name the batches of ${read.schema.id} in [${w.start}, ${w.end}]: ${err.details}`, { cause: err });
      }
      if (/UNAVAILABLE|ECONNREFUSED|No connection established|DEADLINE/i.test(msg)) throw new SqlError('upstream_unavailable', `the SCC cannot be reached: ${msg}`, { cause: err });
      throw new SqlError('internal', `dispatch of the read of ${read.schema.id} failed: ${msg}`, { cause: err });
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
    if (why === 'timeout') throw new SqlError('query_timeout', `timed out waiting for the Storage Nodes (HD_SQL_QUERY_TIMEOUT_MS); the query was cancelled at the SCCs`);
    if (why === 'cancel') throw new SqlError('query_timeout', 'canceling statement due to user request');
    const batchErrors = c.getBatchErrors();
    if ('aggregate' in how) {
      if (refused !== undefined) throw new SqlError('query_failed', `the Storage Nodes refused the aggregate of ${read.schema.id}: ${refused}`);
      const refusal = batchErrors.find((e) => e.code === HDWP_ERROR_FRAME_CODES.badQuery);
      if (refusal) throw new SqlError('query_failed', `the Storage Nodes refused the aggregate of ${read.schema.id}: ${refusal.message}`);
    }
    return { batchErrors, missingBatches: c.getMissingBatchIds().length };
  }
}

/** What a read asks for: records (decoded batches) or partial aggregates. */
type ReadShape = { readonly onBatch: (b: arrow.RecordBatch) => Promise<void> } | { readonly aggregate: AggregateSpec; readonly onPartial: (p: AggregatePartial) => void };
