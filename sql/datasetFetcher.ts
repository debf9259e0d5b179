/**
 * Fetching a dataset's rows for a plan: one HDQuery per dataset read through the SDK's
 * PlatformQueryClient (straight to the SCCs or through the Proxy), each batch handed over as it
 * arrives.
 */
import type * as arrow from 'apache-arrow';
import type { Schema } from '../engine-rs/schema';
import type { BatchError } from '../query/hdQuery';
import type { PlatformQueryClient } from '../sdk/platformQueryClient';
import type { DatasetRead } from './planner';
import { SqlError } from './sqlError';

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
}

/**
 * A fetcher over a pool of PlatformQueryClients sharing one result listener (one port: HD_SQL's
 * PLATFORM_DATA_RETURN_PORT). A client runs one query at a time with its own accounting, so the pool
 * size is how many reads run at once; further reads wait for a free client, in arrival order.
 */
export class QueryClientFetcher implements DatasetFetcher {
  private readonly idle: PlatformQueryClient[];
  private readonly waiting: ((c: PlatformQueryClient) => void)[] = [];

  /** @param clients clients pointed at their upstream (SCC targets or Proxy); the schema is loaded per read. */
  constructor(clients: PlatformQueryClient | readonly PlatformQueryClient[]) {
    this.idle = Array.isArray(clients) ? [...clients] : [clients as PlatformQueryClient];
    if (this.idle.length === 0) throw new RangeError('QueryClientFetcher needs at least one query client');
  }

  async fetch(read: DatasetRead, onBatch: (b: arrow.RecordBatch) => Promise<void>, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome> {
    const c = this.idle.pop() ?? (await new Promise<PlatformQueryClient>((resolve) => this.waiting.push(resolve)));
    try {
      return await this.run(c, read, onBatch, opts);
    } finally {
      const next = this.waiting.shift();
      if (next) next(c);
      else this.idle.push(c);
    }
  }

  private async run(c: PlatformQueryClient, read: DatasetRead, onBatch: (b: arrow.RecordBatch) => Promise<void>, opts: { deadline: number; signal?: AbortSignal; qos: number }): Promise<FetchOutcome> {
    if (opts.signal?.aborted) throw new SqlError('query_timeout', 'canceling statement due to user request');
    const left = opts.deadline - Date.now();
    if (left <= 0) throw new SqlError('query_timeout', 'timed out before the Storage Nodes were asked (HD_SQL_QUERY_TIMEOUT_MS)');
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
    try {
      await c.executeStream(
        { start_time: read.startTime, end_time: read.endTime, sub_queries: read.subQueries, query_qos: opts.qos },
        async (b) => {
          if (!why) await onBatch(b);
        },
        read.columns ? { columns: read.columns } : {},
      );
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      if (/UNAVAILABLE|ECONNREFUSED|No connection established|DEADLINE/i.test(msg)) throw new SqlError('upstream_unavailable', `the SCC cannot be reached: ${msg}`, { cause: err });
      throw new SqlError('internal', `dispatch of the read of ${read.schema.id} failed: ${msg}`, { cause: err });
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
    if (why === 'timeout') throw new SqlError('query_timeout', `timed out waiting for the Storage Nodes (HD_SQL_QUERY_TIMEOUT_MS); the query was cancelled at the SCCs`);
    if (why === 'cancel') throw new SqlError('query_timeout', 'canceling statement due to user request');
    return { batchErrors: c.getBatchErrors(), missingBatches: c.getMissingBatchIds().length };
  }
}
