/**
 * HDQuery, the query's JSON wire form (docs/query.md, "HDQuery JSON"): the reference's fields
 * (query_id, batch_ids, sub_queries, targets, verify_hash, query_qos) plus the dataset, the client's
 * return address, the per-query token and an optional limit. {@link parseHdQuery} is the one check
 * every reader runs (the SCC before dispatch, a Storage Node before scanning); {@link serializeHdQuery}
 * applies the QoS clamping the reference asks of serialisers and refuses what a reader would refuse,
 * so a client learns of a bad query before sending it.
 */
import { sccTargetJson, type SccTarget } from '../control/api';
import { HDWP_MAX_DATASET_ID_LEN, HDWP_MAX_JSON_LEN } from '../engine-rs/hdwpFrame';
import { checkAggregate, type AggregateSpec } from './aggregate';
import { checkSubQueries, filterJson, isObject, jsonType, refuseUnknownKeys, type SubQuery } from './filter';
import { QueryError } from './queryError';
import { isZeroToken, TOKEN_LEN } from './token';
import { checkTimeRange } from './timeRange';
import { MAX_TRACESTATE_LEN, TRACEPARENT, type TraceContext } from '../lib/tracing/traceContext';

export { FILTER_OPS, MAX_BRANCHES, MAX_FILTERS_PER_SUB_QUERY, MAX_IN_VALUES } from './filter';
export type { Filter, FilterOp, SubQuery } from './filter';
export { QueryError } from './queryError';
export type { AggregateSpec, AggregateKey, AggregateMeasure, AggregateFn, AggregatePartial, AggregateGroup } from './aggregate';

/** Where Storage Nodes stream a query's results: the client's listener. */
export interface ReturnAddress {
  readonly host: string;
  readonly port: number;
  /**
   * Ours: the listener speaks mutual TLS (a client holding a DMS-CA certificate). Storage Nodes
   * and SCCs then open the result stream with their own node certificate, or fail the query
   * naming why when they have none.
   */
  readonly tls?: boolean;
}

/** One batch that failed delivery during a query (one per failed batch, not per notice). */
export interface BatchError {
  /** The batch id, 128 lowercase hex digits. */
  readonly batchId: string;
  /** The bbn / error code (docs/query.md, "Error / bbn codes"). */
  readonly code: number;
  readonly message: string;
  /** The Storage Node (or SCC) that reported it. */
  readonly node?: string;
}

/** A query, as parsed from or serialised to its JSON wire form. */
export interface HdQuery {
  /** uint32. */
  readonly queryId: number;
  /** The dataset id (schema `id`) the batches belong to. */
  readonly dataset: string;
  /** Batch ids as 128 lowercase hex digits, no duplicates. */
  readonly batchIds: readonly string[];
  /** OR-ed filter groups; empty reads every record of the batches. */
  readonly subQueries: readonly SubQuery[];
  /** SCCs on the data plane (for clients; an SCC ignores it); `grpc_port` in the JSON. */
  readonly targets: readonly SccTarget[];
  readonly verifyHash: boolean;
  /** 1..255 once parsed; serialising clamps whatever is here. */
  readonly queryQos: number;
  readonly returnAddress: ReturnAddress;
  /** 16 bytes, never all zero. */
  readonly token: Uint8Array;
  /** Stop after this many matching records in total (a hint). */
  readonly limit?: number;
  /**
   * One record's worth of bytes (0xff visible, 0x00 over hidden fields) the Storage Node ANDs into
   * every record it streams, after filtering: the HD Proxy's hidden fields (docs/proxy.md).
   */
  readonly fieldMask?: Uint8Array;
  /**
   * Ours (docs/query.md, "Columnar results"): `'columns'` asks the Storage Nodes for columns frames
   * (Arrow-layout columns decoded on the node, after the field mask) instead of records frames.
   * Absent or `'records'`: raw records, the reference's contract.
   */
  readonly resultFormat?: ResultFormat;
  /** With `resultFormat: 'columns'`: the fields to send, in column order (absent: every field). */
  readonly columns?: readonly string[];
  /**
   * Ours (docs/query.md, "Aggregates"): the Storage Nodes send one partial aggregate per batch
   * (an HDWP aggregate frame) instead of its records. `limit` must be absent.
   */
  readonly aggregate?: AggregateSpec;
  /**
   * Ours (docs/query.md, "Top records"): each batch sends only its `k` best matching records by
   * `field` (largest with `desc`), every record tied with the k-th kept — for `ORDER BY field LIMIT k`.
   * Not with `limit` or `aggregate`.
   */
  readonly top?: TopSpec;
  /**
   * Ours (docs/query.md, "Merged results"): the client reads merged results — a node may complete
   * many batches with one frame (an aggregate partial of version 2, or an `eobs` frame after the
   * rows of several batches). Absent or false: one eob (or partial and eob) per batch.
   */
  readonly mergeBatches?: boolean;
  /**
   * Ours (docs/query.md, "Trace context"): the W3C trace context of the span that sent the query
   * (`trace_context` in the JSON: `traceparent`, optional `tracestate`); readers start their spans
   * under it. Absent when the sender does not trace.
   */
  readonly traceContext?: TraceContext;
  /**
   * Ours (docs/query.md, "Time windows"; `time_window` in the JSON, version 1): the query reads the
   * time-form batches of `interval` the Storage Nodes hold in `[start, end]` instead of naming them
   * in `batchIds` (which is then empty). The SCC resolves it from its replicas' batch index before
   * placing the batches and answers the ids it named (DispatchReply `batch_ids`); legs to the nodes
   * carry only the ids.
   */
  readonly timeWindow?: TimeWindow;
}

/** HDQuery `time_window`: an inclusive window in Unix seconds at a dataset's time_index_interval. */
export interface TimeWindow {
  readonly start: number;
  readonly end: number;
  /** The dataset's time_index_interval in seconds, 1..2^32 − 1: the width of the time-form ids asked for. */
  readonly interval: number;
}

/** The version of `time_window` this build writes and reads. */
export const TIME_WINDOW_VERSION = 1;

/** HDQuery `top`: the best k records of each batch by one field. */
export interface TopSpec {
  readonly field: string;
  /** 1..{@link MAX_TOP_K}. */
  readonly k: number;
  /** Largest first (ORDER BY … DESC); false: smallest first. */
  readonly desc: boolean;
}

/** The largest `top.k`. */
export const MAX_TOP_K = 1_000_000;

/** How a Storage Node sends a query's matching records. */
export type ResultFormat = 'records' | 'columns';

/** At most this many names in `columns`. */
export const MAX_RESULT_COLUMNS = 4096;

function resultColumns(raw: unknown): string[] {
  if (!Array.isArray(raw)) throw new QueryError('columns', `expected an array of field names, got ${jsonType(raw)}`);
  if (raw.length > MAX_RESULT_COLUMNS) throw new QueryError('columns', `${raw.length} names, the limit is ${MAX_RESULT_COLUMNS}`);
  const seen = new Set<string>();
  return raw.map((c, i) => {
    if (typeof c !== 'string' || c === '' || c.length > 255) throw new QueryError(`columns[${i}]`, `expected a field name (1..255 characters), got ${jsonType(c)}`);
    if (seen.has(c)) throw new QueryError(`columns[${i}]`, `'${c}' is named twice`);
    seen.add(c);
    return c;
  });
}

/** Lowest and highest query_qos. */
export const QOS_MIN = 1;
/** Highest query_qos. */
export const QOS_MAX = 255;
/** At most this many batch ids in one query. */
export const MAX_BATCH_IDS = 100_000;
/** Largest query JSON a Storage Node takes (the HDWP query frame limit). */
export const MAX_QUERY_JSON_BYTES = HDWP_MAX_JSON_LEN;
/** Largest `field_mask`, in bytes (a record is never larger). */
export const MAX_FIELD_MASK_BYTES = 1024 * 1024;

const KEYS = ['query_id', 'dataset', 'batch_ids', 'sub_queries', 'targets', 'verify_hash', 'query_qos', 'return_address', 'token', 'limit', 'field_mask', 'result_format', 'columns', 'aggregate', 'top', 'merge_batches', 'trace_context', 'time_window'] as const;
const BATCH_HEX = /^[0-9a-fA-F]{128}$/;
const LOWER_HEX = /^[0-9a-f]*$/;
const TOKEN_HEX = new RegExp(`^[0-9a-fA-F]{${TOKEN_LEN * 2}}$`);

/**
 * The reference's QoS rule: an integer is clamped to 1..255; anything else (absent, not a number,
 * not an integer) counts as 1.
 */
export function clampQos(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) return QOS_MIN;
  return Math.min(QOS_MAX, Math.max(QOS_MIN, v));
}

function int(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new QueryError(path, `expected an integer ${min}..${max}, got ${jsonType(v)}`);
  return v;
}

function hostPort(raw: unknown, path: string, what: string): { host: string; port: number; rest: Record<string, unknown> } {
  if (!isObject(raw)) throw new QueryError(path, `expected ${what}, got ${jsonType(raw)}`);
  if (typeof raw.host !== 'string' || raw.host === '' || raw.host.length > 255) throw new QueryError(`${path}.host`, `expected a host name or address (1..255 characters), got ${jsonType(raw.host)}`);
  return { host: raw.host, port: int(raw.port, `${path}.port`, 1, 65535), rest: raw };
}

function fieldMask(raw: unknown): Uint8Array {
  if (typeof raw !== 'string') throw new QueryError('field_mask', `expected hex digits (one record's bytes, 0xff visible, 0x00 hidden), got ${jsonType(raw)}`);
  if (raw.length === 0 || raw.length % 2 !== 0) throw new QueryError('field_mask', `expected an even, non-zero number of hex digits (2 a byte), got ${raw.length}`);
  if (raw.length > MAX_FIELD_MASK_BYTES * 2) throw new QueryError('field_mask', `${raw.length / 2} bytes, the limit is ${MAX_FIELD_MASK_BYTES}`);
  if (!/^[0-9a-fA-F]*$/.test(raw)) throw new QueryError('field_mask', 'expected hex digits only (0-9, a-f)');
  return Buffer.from(raw, 'hex');
}

function batchIds(raw: unknown): string[] {
  if (!Array.isArray(raw)) throw new QueryError('batch_ids', `expected an array of batch ids (128 hex digits each), got ${jsonType(raw)}`);
  if (raw.length > MAX_BATCH_IDS) throw new QueryError('batch_ids', `${raw.length} batch ids, the limit is ${MAX_BATCH_IDS}`);
  return lowerHexIds(raw) ?? checkedIds(raw);
}

/**
 * The common case, checked in bulk (every reader parses every query's ids: thousands a statement):
 * ids already 128 lower-case hex digits and strictly ascending (as the clients and the SCC send
 * time-form ids), hence distinct. Undefined when any id is otherwise: {@link checkedIds} then says
 * which and why, or accepts them.
 */
function lowerHexIds(raw: unknown[]): string[] | undefined {
  let prev = '';
  for (const b of raw) {
    if (typeof b !== 'string' || b.length !== 128 || b <= prev) return undefined;
    prev = b;
  }
  // One scan of all the digits at once (the lengths are known): a regex run per id costs more.
  return LOWER_HEX.test(raw.join('')) ? (raw.slice() as string[]) : undefined;
}

/** Each id checked on its own, with the error naming the first bad one; upper case folded, duplicates refused. */
function checkedIds(raw: unknown[]): string[] {
  const seen = new Map<string, number>();
  return raw.map((b, i) => {
    if (typeof b !== 'string' || !BATCH_HEX.test(b)) throw new QueryError(`batch_ids[${i}]`, `expected a batch id as 128 hex digits (its 64 bytes), got ${jsonType(b).slice(0, 40)}`);
    const hex = b.toLowerCase();
    const first = seen.get(hex);
    if (first !== undefined) throw new QueryError(`batch_ids[${i}]`, `the same batch as batch_ids[${first}]: each batch is read once`);
    seen.set(hex, i);
    return hex;
  });
}

/**
 * Checks an already-parsed JSON value as an HDQuery and returns it typed. Unknown keys are refused;
 * `query_qos` follows {@link clampQos}. Throws {@link QueryError} naming the key.
 */
export function hdQueryFromJson(raw: unknown): HdQuery {
  if (!isObject(raw)) throw new QueryError('', `an HDQuery is a JSON object, got ${jsonType(raw)}`);
  refuseUnknownKeys(raw, KEYS, '');
  for (const k of ['query_id', 'dataset', 'return_address', 'token'] as const) if (raw[k] === undefined) throw new QueryError(k, 'required');
  const queryId = int(raw.query_id, 'query_id', 0, 0xffffffff);
  const dataset = raw.dataset;
  if (typeof dataset !== 'string' || dataset === '' || Buffer.byteLength(dataset) > HDWP_MAX_DATASET_ID_LEN) {
    throw new QueryError('dataset', `expected a dataset id (1..${HDWP_MAX_DATASET_ID_LEN} UTF-8 bytes), got ${jsonType(dataset)}`);
  }
  const targetsRaw = raw.targets ?? [];
  if (!Array.isArray(targetsRaw)) throw new QueryError('targets', `expected an array of SccAddress, got ${jsonType(targetsRaw)}`);
  const targets = targetsRaw.map((t, i): SccTarget => {
    const path = `targets[${i}]`;
    const a = hostPort(t, path, 'an SccAddress {host, port, grpc_port?}');
    refuseUnknownKeys(a.rest, ['host', 'port', 'grpc_port'], path);
    return a.rest.grpc_port === undefined ? { host: a.host, port: a.port } : { host: a.host, port: a.port, grpcPort: int(a.rest.grpc_port, `${path}.grpc_port`, 1, 65535) };
  });
  const verifyHash = raw.verify_hash ?? false;
  if (typeof verifyHash !== 'boolean') throw new QueryError('verify_hash', `expected true or false, got ${jsonType(verifyHash)}`);
  const ret = hostPort(raw.return_address, 'return_address', 'a return address {host, port, tls?}');
  refuseUnknownKeys(ret.rest, ['host', 'port', 'tls'], 'return_address');
  const retTls = ret.rest.tls ?? false;
  if (typeof retTls !== 'boolean') throw new QueryError('return_address.tls', `expected true or false, got ${jsonType(retTls)}`);
  if (typeof raw.token !== 'string' || !TOKEN_HEX.test(raw.token)) throw new QueryError('token', `expected ${TOKEN_LEN * 2} hex digits (${TOKEN_LEN} random bytes), got ${jsonType(raw.token).slice(0, 50)}`);
  const token = Buffer.from(raw.token, 'hex');
  if (isZeroToken(token)) throw new QueryError('token', 'an all-zero token is refused: draw 16 random bytes (newQueryToken)');
  const q: HdQuery = {
    queryId,
    dataset,
    batchIds: batchIds(raw.batch_ids ?? []),
    subQueries: checkSubQueries(raw.sub_queries ?? []),
    targets,
    verifyHash,
    queryQos: clampQos(raw.query_qos),
    returnAddress: retTls ? { host: ret.host, port: ret.port, tls: true } : { host: ret.host, port: ret.port },
    token,
  };
  return {
    ...q,
    ...(raw.limit === undefined ? {} : { limit: int(raw.limit, 'limit', 0, Number.MAX_SAFE_INTEGER) }),
    ...(raw.field_mask === undefined ? {} : { fieldMask: fieldMask(raw.field_mask) }),
    ...resultShape(raw.result_format, raw.columns),
    ...aggregateOf(raw.aggregate, raw.limit, raw.result_format),
    ...topOf(raw.top, raw.limit, raw.aggregate),
    ...(raw.merge_batches === undefined ? {} : { mergeBatches: bool(raw.merge_batches, 'merge_batches') }),
    ...(raw.trace_context === undefined ? {} : { traceContext: traceContextOf(raw.trace_context) }),
    ...(raw.time_window === undefined ? {} : { timeWindow: timeWindowOf(raw.time_window, q.batchIds.length) }),
  };
}

/** `time_window`: `{version: 1, start, end, interval}`, never beside named `batch_ids`. */
function timeWindowOf(raw: unknown, namedBatches: number): TimeWindow {
  if (!isObject(raw)) throw new QueryError('time_window', `expected {version: ${TIME_WINDOW_VERSION}, start, end, interval}, got ${jsonType(raw)}`);
  refuseUnknownKeys(raw, ['version', 'start', 'end', 'interval'], 'time_window');
  if (raw.version !== TIME_WINDOW_VERSION) throw new QueryError('time_window.version', `expected ${TIME_WINDOW_VERSION} (the version this build reads), got ${jsonType(raw.version)}`);
  if (namedBatches > 0) throw new QueryError('time_window', `give batch_ids or time_window, not both (${namedBatches} batch ids are named)`);
  const r = checkTimeRange(raw.start, raw.end, int(raw.interval, 'time_window.interval', 1, 0xffff_ffff), { start: 'time_window.start', end: 'time_window.end' });
  return { start: r.start, end: r.end, interval: r.interval };
}

/** `trace_context` (also the payload of an HDWP trace_context frame): `{traceparent, tracestate?}`, a W3C traceparent (version 00 layout) and optional tracestate. */
export function traceContextOf(raw: unknown): TraceContext {
  if (!isObject(raw)) throw new QueryError('trace_context', `expected {traceparent, tracestate?}, got ${jsonType(raw)}`);
  refuseUnknownKeys(raw, ['traceparent', 'tracestate'], 'trace_context');
  const tp = raw.traceparent;
  if (typeof tp !== 'string' || tp.length > 256 || !TRACEPARENT.test(tp)) throw new QueryError('trace_context.traceparent', `expected a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), got ${jsonType(tp).slice(0, 60)}`);
  const ts = raw.tracestate;
  if (ts === undefined) return { traceparent: tp };
  if (typeof ts !== 'string' || ts.length > MAX_TRACESTATE_LEN) throw new QueryError('trace_context.tracestate', `expected a W3C tracestate of at most ${MAX_TRACESTATE_LEN} characters, got ${jsonType(ts).slice(0, 60)}`);
  return { traceparent: tp, tracestate: ts };
}

function aggregateOf(raw: unknown, limit: unknown, format: unknown): { aggregate?: AggregateSpec } {
  if (raw === undefined) return {};
  if (limit !== undefined) throw new QueryError('limit', 'not with aggregate (a partial aggregate covers every matching record)');
  if (format !== undefined && format !== 'records') throw new QueryError('result_format', 'not with aggregate (its results are partial aggregates)');
  return { aggregate: checkAggregate(raw) };
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new QueryError(path, `expected true or false, got ${jsonType(v)}`);
  return v;
}

function topOf(raw: unknown, limit: unknown, aggregate: unknown): { top?: TopSpec } {
  if (raw === undefined) return {};
  if (limit !== undefined) throw new QueryError('limit', 'not with top (top already bounds what each batch sends)');
  if (aggregate !== undefined) throw new QueryError('top', 'not with aggregate (an aggregate sends no records)');
  if (!isObject(raw)) throw new QueryError('top', `expected {field, k, desc}, got ${jsonType(raw)}`);
  refuseUnknownKeys(raw, ['field', 'k', 'desc'], 'top');
  if (typeof raw.field !== 'string' || raw.field === '' || raw.field.length > 255) throw new QueryError('top.field', `expected a field name, got ${jsonType(raw.field)}`);
  if (typeof raw.desc !== 'boolean') throw new QueryError('top.desc', `expected true or false, got ${jsonType(raw.desc)}`);
  return { top: { field: raw.field, k: int(raw.k, 'top.k', 1, MAX_TOP_K), desc: raw.desc } };
}

function resultShape(format: unknown, columns: unknown): { resultFormat?: ResultFormat; columns?: string[] } {
  if (format !== undefined && format !== 'records' && format !== 'columns') throw new QueryError('result_format', `expected "records" or "columns", got ${jsonType(format)}`);
  if (columns !== undefined && format !== 'columns') throw new QueryError('columns', 'only with result_format "columns"');
  return { ...(format === undefined ? {} : { resultFormat: format }), ...(columns === undefined ? {} : { columns: resultColumns(columns) }) };
}

/**
 * Parses and checks HDQuery JSON. `maxBytes` caps its UTF-8 size: {@link MAX_QUERY_JSON_BYTES}
 * (what a Storage Node takes) unless the reader allows more (the SCC splits a large batch list
 * over several query frames). Throws {@link QueryError}.
 */
export function parseHdQuery(json: string | Uint8Array, opts: { maxBytes?: number } = {}): HdQuery {
  const max = opts.maxBytes ?? MAX_QUERY_JSON_BYTES;
  const size = typeof json === 'string' ? Buffer.byteLength(json) : json.length;
  if (size > max) throw new QueryError('', `the query JSON is ${size} bytes, the limit is ${max}`);
  let raw: unknown;
  try {
    raw = JSON.parse(typeof json === 'string' ? json : Buffer.from(json.buffer, json.byteOffset, json.length).toString('utf8'));
  } catch (err) {
    throw new QueryError('', `not JSON: ${(err as Error).message}`);
  }
  return hdQueryFromJson(raw);
}

/** The JSON object of a query (QoS clamped), without checking it; its keys in wire order (`query_id`, `dataset`, `batch_ids` first). */
export function hdQueryJsonObject(q: HdQuery): Record<string, unknown> {
  return {
    query_id: q.queryId,
    dataset: q.dataset,
    batch_ids: [...q.batchIds],
    sub_queries: q.subQueries.map((s) => ({ filters: s.filters.map(filterJson) })),
    targets: q.targets.map(sccTargetJson),
    verify_hash: q.verifyHash,
    query_qos: clampQos(q.queryQos),
    return_address: { host: q.returnAddress.host, port: q.returnAddress.port, ...(q.returnAddress.tls === true ? { tls: true } : {}) },
    token: Buffer.from(q.token.buffer, q.token.byteOffset, q.token.byteLength).toString('hex'),
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.fieldMask !== undefined ? { field_mask: Buffer.from(q.fieldMask.buffer, q.fieldMask.byteOffset, q.fieldMask.byteLength).toString('hex') } : {}),
    ...(q.resultFormat !== undefined ? { result_format: q.resultFormat } : {}),
    ...(q.columns !== undefined ? { columns: [...q.columns] } : {}),
    ...(q.aggregate !== undefined ? { aggregate: q.aggregate } : {}),
    ...(q.top !== undefined ? { top: { field: q.top.field, k: q.top.k, desc: q.top.desc } } : {}),
    ...(q.mergeBatches !== undefined ? { merge_batches: q.mergeBatches } : {}),
    ...(q.traceContext !== undefined ? { trace_context: q.traceContext.tracestate === undefined ? { traceparent: q.traceContext.traceparent } : { ...q.traceContext } } : {}),
    ...(q.timeWindow !== undefined ? { time_window: { version: TIME_WINDOW_VERSION, start: q.timeWindow.start, end: q.timeWindow.end, interval: q.timeWindow.interval } } : {}),
  };
}

/**
 * The JSON wire form of `q`, with `query_qos` clamped to 1..255 (a non-integer becomes 1). Refuses,
 * with the same {@link QueryError} a reader would raise, a query a reader would refuse (17 branches,
 * an empty sub-query, a bad token, JSON over `maxBytes`).
 */
export function serializeHdQuery(q: HdQuery, opts: { maxBytes?: number } = {}): string {
  if (q.token.length !== TOKEN_LEN) throw new QueryError('token', `expected ${TOKEN_LEN} bytes, got ${q.token.length}`);
  const obj = hdQueryJsonObject(q);
  hdQueryFromJson(obj);
  const json = JSON.stringify(obj);
  const max = opts.maxBytes ?? MAX_QUERY_JSON_BYTES;
  const size = Buffer.byteLength(json);
  if (size > max) throw new QueryError('', `the query JSON is ${size} bytes, the limit is ${max}`);
  return json;
}
