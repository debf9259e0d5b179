/**
 * What the query client's execute calls take: the HDQuery JSON wire form (docs/query.md) minus the
 * parts the client fills in itself (token, return address, targets), plus a time window that names
 * the batches when `batch_ids` is not given.
 *
 * Straight to an SCC, a window of at most {@link MAX_ENUMERATED_INTERVALS} intervals is enumerated
 * here as before (`batch_ids`, what every SCC reads); a longer one, `ts > 0` or a year of one-minute
 * batches, goes as HDQuery `time_window` (ours) and the SCC names the batches its replicas hold in
 * it (docs/query.md, "Time windows").
 */
import { generateBatchIdHexesTime } from '../engine-rs/batchId';
import type { Schema } from '../engine-rs/schema';
import type { SccTarget } from '../control/api';
import { hdQueryFromJson, QueryError, TIME_WINDOW_VERSION, type HdQuery, type ReturnAddress } from '../query/hdQuery';
import { enumeratedCount } from '../query/timeRange';
import { newQueryId, newQueryToken } from '../query/token';

/** Keys of the execute input that are not HDQuery keys. */
const WINDOW_KEYS = ['start_time', 'end_time'] as const;
/** Keys the client owns: a caller cannot set them. */
const CLIENT_KEYS = ['token', 'return_address', 'targets'] as const;

/**
 * Direct SCC mode: the most intervals a window is enumerated into `batch_ids` on the client; a longer
 * window goes as `time_window`, resolved at the SCC. 4 096 ids are about 540 KB of query JSON and fit
 * one leg's query frame (7 000), so a small window costs nothing more than before (no round to the
 * replicas' batch index); past it, enumerating pays for intervals nobody ingested (each a lookup on
 * every replica) and a window of a day at 60 s is already 1 441 of them, a month 43 201.
 */
export const MAX_ENUMERATED_INTERVALS = 4096;

/** What {@link buildQuery} needs besides the input text. */
export interface BuildContext {
  readonly schema: Schema;
  readonly returnAddress: ReturnAddress;
  readonly targets: readonly SccTarget[];
  /** Query id to use when the input has none (prepareQuery's). */
  readonly queryId?: number;
  /**
   * The upstream names a window's batches (Proxy mode: the Proxy resolves the window against the
   * batches the Storage Nodes hold, docs/proxy.md), so the window is not enumerated here and the
   * query's `batch_ids` stay empty until the result event names them.
   */
  readonly upstreamNamesBatches?: boolean;
}

/**
 * Turns execute input (JSON text or object) into a complete HdQuery: `dataset` defaults to the loaded
 * schema's id, `query_id` to a fresh one, `batch_ids` to one per interval of [start_time, end_time]
 * (the schema's time_index_interval). Throws QueryError naming the key.
 */
export function buildQuery(input: string | Record<string, unknown>, ctx: BuildContext): HdQuery {
  return buildQueryInput(input, ctx).query;
}

/** {@link buildQuery}, also giving the input's `start_time`/`end_time` window when it had one (Proxy mode sends the window). */
export function buildQueryInput(input: string | Record<string, unknown>, ctx: BuildContext): { query: HdQuery; window: { start: number; end: number } | undefined } {
  let doc: unknown = input;
  if (typeof input === 'string') {
    try {
      doc = JSON.parse(input);
    } catch (err) {
      throw new QueryError('(root)', `the query is neither HDQuery JSON nor SQL the client can run without a Proxy: ${(err as Error).message}`);
    }
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new QueryError('(root)', 'the query must be a JSON object');
  const o = { ...(doc as Record<string, unknown>) };
  for (const k of CLIENT_KEYS) if (k in o) throw new QueryError(k, 'is set by the client; leave it out');
  const start = o.start_time;
  const end = o.end_time;
  for (const k of WINDOW_KEYS) delete o[k];
  if (start !== undefined || end !== undefined) {
    if (o.batch_ids !== undefined) throw new QueryError('start_time', 'give batch_ids or a start_time/end_time window, not both');
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) throw new QueryError('start_time', 'start_time and end_time are Unix seconds (integers), both given');
    if ((end as number) < (start as number)) throw new QueryError('end_time', 'is before start_time');
    const iv = ctx.schema.timeIndexInterval;
    if (!ctx.upstreamNamesBatches) {
      if (enumeratedCount({ start: start as number, end: end as number }, iv) <= MAX_ENUMERATED_INTERVALS) o.batch_ids = generateBatchIdHexesTime(start as number, end as number, iv);
      else o.time_window = { version: TIME_WINDOW_VERSION, start, end, interval: iv };
    }
  }
  o.dataset ??= ctx.schema.id;
  o.query_id ??= ctx.queryId ?? newQueryId();
  o.token = newQueryToken().toString('hex');
  o.return_address = { host: ctx.returnAddress.host, port: ctx.returnAddress.port, ...(ctx.returnAddress.tls === true && { tls: true }) };
  o.targets = ctx.targets.map((t) => ({ host: t.host, port: t.port, ...(t.grpcPort ? { grpc_port: t.grpcPort } : {}) }));
  const window = start === undefined ? undefined : { start: start as number, end: end as number };
  return { query: hdQueryFromJson(o), window };
}
