/**
 * The elements of a Storage Node's query path (docs/query.md, "Storage Node scan and result
 * streams"): the `queryListener` source emits one {@link QueryElement} per accepted query; the
 * `scan` operator turns it into {@link QueryResultElement}s (chunks of matching records and one eob
 * or bbn per batch) that the `resultStream` sink writes to the query's return address.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { BbnFrame, EobFrame, EobsFrame, ErrorFrame, QueryAuth } from '../engine-rs/hdwpFrame';
import type { ReturnAddress, TopSpec } from '../query/hdQuery';
import type { BatchedRecordChunk, BbnElement, Chunk, EobElement } from './chunk';
import type { Flow } from './flow';
import type { TraceContext } from '../lib/tracing/traceContext';

/** What a node needs of a validated HDQuery to run it. */
export interface QuerySpec {
  readonly queryId: number;
  /** Dataset id (schema `id`) the batches belong to. */
  readonly dataset: string;
  /** The batches to read, each once, in the order given. */
  readonly batchIds: readonly BatchID[];
  /** The `sub_queries` array as JSON text (`[]`: every record), compiled by the scan against the dataset schema. */
  readonly subQueriesJson: string;
  /** Number of sub-queries (0: no filter). */
  readonly branches: number;
  readonly verifyHash: boolean;
  /** query_qos clamped to 1..255: the query's weight in the read queues. */
  readonly qos: number;
  /** Where the results go: the client's listener. */
  readonly returnAddress: ReturnAddress;
  /** Stop after about this many matching records in total (a hint). */
  readonly limit?: number;
  /** HDQuery `field_mask`: one record long (0x00 over hidden fields), ANDed into every record streamed. */
  readonly fieldMask?: Buffer;
  /** HDQuery `aggregate` as JSON text: one partial per batch instead of records (compiled by the scan against the schema and the field mask). */
  readonly aggregateJson?: string;
  /** HDQuery `top`: each batch sends only its best `k` matching records by `field` (ties kept). */
  readonly top?: TopSpec;
  /** HDQuery `merge_batches`: the client reads merged results (one frame completing many batches: v2 partials, eobs). */
  readonly mergeBatches?: boolean;
  /** HDQuery `result_format: "columns"`: send these fields (schema names, column order; absent: every field) as columns frames instead of records. */
  readonly columnar?: { readonly fields?: readonly string[] };
  /** HDQuery `trace_context`: the W3C context of the SCC's span that sent this leg; the node's scan span is its child. */
  readonly traceContext?: TraceContext;
}

/** Why a query stopped early: an error frame code (docs/query.md) and a message. */
export interface QueryStop {
  readonly code: number;
  readonly message: string;
}

/**
 * One query running on this node. The listener creates it; the scan and the result stream share it.
 * `signal` aborts (with a {@link QueryStop} as its reason) on cancel, when the SCC's control
 * connection drops, when the result stream fails, or when the node shuts down.
 */
export interface RunningQuery {
  readonly spec: QuerySpec;
  /** The query id and token every result frame carries. */
  readonly auth: QueryAuth;
  /** Record size the SCC's hello named: used for the result stream when the node has no schema of the dataset. */
  readonly helloRecordSize: number;
  /** Who sent it (`ip:port` of the SCC's control connection), for messages. */
  readonly from: string;
  readonly signal: AbortSignal;
  /** Stops the query (idempotent; the first reason wins). */
  stop(reason: QueryStop): void;
  /**
   * Tells the SCC on the query's control connection: the per-batch eob / bbn echoes (progress; one
   * eobs for batches that ended together) and a query-level error. The query block is added here;
   * calls after {@link end} are dropped.
   */
  reply(frame: EobFrame | EobsFrame | BbnFrame | ErrorFrame): void;
  /** The query is over on this node (its result stream closed, or it failed before one opened); idempotent. */
  end(): void;
  /** True once {@link end} was called. */
  readonly ended: boolean;
}

/** A query accepted by the listener, on its way to the scan. */
export interface QueryElement {
  readonly kind: 'query';
  readonly query: RunningQuery;
}

/**
 * The result stream of one query as the scan describes it to the sink: its record size, how many
 * batch ends (eob or bbn) it will carry, and a per-query {@link Flow} that holds the scan back while
 * the sink is behind on this query's stream (a slow client slows only its own query).
 */
export interface QueryResults {
  readonly query: RunningQuery;
  readonly recordSize: number;
  /** Batches of the query on this node; the stream closes after this many eob / bbn. */
  readonly batches: number;
  readonly flow: Flow;
  /** The node's scan span, sent after the result stream's hello (HDWP trace_context) when the query is traced. */
  readonly traceContext?: TraceContext;
}

/** Matching records of one batch of a query. */
export interface QueryRecordsChunk extends BatchedRecordChunk {
  readonly results: QueryResults;
}

/** Matching rows of one batch of a query as a columnar body (HDQuery `result_format: "columns"`; engine-rs/columnar.ts). */
export interface QueryColumnsElement {
  readonly kind: 'columns';
  readonly dataset: string;
  readonly batchId: BatchID;
  /** Rows in `body`, at least 1. */
  readonly rows: number;
  readonly body: Buffer;
  readonly results: QueryResults;
}

/** One batch's partial aggregate (HDQuery `aggregate`), sent instead of its records, before its eob. */
export interface QueryAggregateElement {
  readonly kind: 'aggregate';
  readonly dataset: string;
  readonly batchId: BatchID;
  /** The aggregate frame's JSON: `{ "v": 1, "groups": [...] }`, or v2 with `batches` (merged). */
  readonly json: string;
  /**
   * A merged partial (v2): the batches it completes, each with its matching records. The sink sends
   * no eob frame for them; once the frame is handed to the socket it tells the SCC their ends in one eobs.
   */
  readonly completes?: readonly { readonly batchId: BatchID; readonly recordCount: number }[];
  readonly results: QueryResults;
}

/**
 * The end of several batches of a query at once (HDQuery `merge_batches`): their rows went before,
 * under the first that matched a record (docs/query.md, "Merged results"); one `eobs` frame.
 */
export interface QueryEobsElement {
  readonly kind: 'eobs';
  readonly dataset: string;
  readonly completes: readonly { readonly batchId: BatchID; readonly recordCount: number }[];
  readonly results: QueryResults;
}

/** The end of one batch of a query: `recordCount` matching records were sent for it. */
export interface QueryEobElement extends EobElement {
  readonly results: QueryResults;
}

/** One batch of a query failed on this node: `code` 12 (hash mismatch) or 13 (batch unreadable). */
export interface QueryBbnElement extends BbnElement {
  readonly results: QueryResults;
  readonly code: number;
}

/** What the scan gives the result stream. */
export type QueryResultElement = QueryRecordsChunk | QueryColumnsElement | QueryAggregateElement | QueryEobElement | QueryEobsElement | QueryBbnElement;

/** True for the elements of a query's result stream. */
export function isQueryResult(c: Chunk): c is QueryResultElement {
  return (c.kind === 'records' || c.kind === 'columns' || c.kind === 'aggregate' || c.kind === 'eob' || c.kind === 'eobs' || c.kind === 'bbn') && 'results' in c && c.results !== undefined;
}
