/**
 * The elements that flow through a pipeline. A stream carries chunks of many records (or raw bytes
 * before parsing) and control elements, never one emission per record (DESIGN.md §1.2).
 */
import type { BatchID } from '../engine-rs/batchId';
import type { QueryAggregateElement, QueryColumnsElement, QueryElement, QueryEobsElement, QueryResultElement } from './queryElement';

/** Upper bound of a chunk's payload. Sources cut blocks at or below it; operators never grow past it. */
export const MAX_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Raw bytes read from a file or socket, before parsing. `offset` is the position of `buf[0]` in the
 * source, so a parser can say where a problem lies.
 */
export interface ByteChunk {
  readonly kind: 'bytes';
  /** Where the bytes come from (a path or URL), for messages. */
  readonly source: string;
  /** Byte offset of `buf[0]` within the source. */
  readonly offset: number;
  readonly buf: Buffer;
}

/**
 * Packed fixed-width records of one dataset: `count` records of `recordSize` bytes each, back to
 * back. `batchId` is set once a batching stage has assigned the records to a batch.
 */
export interface RecordChunk {
  readonly kind: 'records';
  /** Dataset id (the schema's `id`). */
  readonly dataset: string;
  readonly batchId?: BatchID;
  readonly count: number;
  readonly recordSize: number;
  /** Exactly `count * recordSize` bytes. */
  readonly buf: Buffer;
}

/** A record chunk that belongs to a batch. */
export interface BatchedRecordChunk extends RecordChunk {
  readonly batchId: BatchID;
}

/**
 * How a sink answers a closing element that came in over the network (`hdwpSource`): `ok` once the
 * batch is durable (eob) or discarded (bbn), optionally with the closing hash to echo; otherwise the
 * error frame code (docs/hdwp.md) and message that refuse the batch.
 */
export type AckResult =
  | { readonly ok: true; readonly closingHash?: Uint8Array }
  | { readonly ok: false; readonly code: number; readonly message: string };

/** Answers the sender of a closing element; calls after the first are ignored. */
export type AckHook = (result: AckResult) => void;

/** End of batch: every record of `batchId` has been sent; `recordCount` of them in total. */
export interface EobElement {
  readonly kind: 'eob';
  readonly dataset: string;
  readonly batchId: BatchID;
  readonly recordCount: number;
  /** Closing hash of the batch's hash chain, when one is known (the SCC's result travels to the SNs). */
  readonly closingHash?: Uint8Array;
  /** The sender's batch digest (BLAKE3-256 of the batch's records as sent), when its eob carried one. */
  readonly digest?: Uint8Array;
  /** Present when a remote sender waits for the batch to become durable (see {@link AckResult}). */
  readonly ack?: AckHook;
}

/**
 * Why a stage discarded a batch, for the stages after it (the `reason` text is for people and the
 * wire): `sender` — the sender's own bbn (hdwpSource); `timeout` — a batch timeout with action bbn
 * (timeBatch, batchTimeout); `rewind` — an open window discarded because its records are read again
 * after a rebalance (timeBatch, operators/windowRewind.ts); `refused` — an eob refused on the way
 * (hashChain: count, digest or hash mismatch); `disconnect` — the sender's stream ended with the
 * batch open (hdwpSource, `on_disconnect: discard`).
 */
export type BbnCause = 'sender' | 'timeout' | 'rewind' | 'refused' | 'disconnect';

/** Bad batch notice: the batch is incomplete or corrupt and is to be discarded. */
export interface BbnElement {
  readonly kind: 'bbn';
  readonly dataset: string;
  readonly batchId: BatchID;
  readonly reason: string;
  /** Which stage discarded the batch and why (see {@link BbnCause}); absent on a bbn built outside the stages (tests, tools). */
  readonly cause?: BbnCause;
  /** Present when a remote sender waits for the batch to be discarded (see {@link AckResult}). */
  readonly ack?: AckHook;
}

/** A control element closing a batch. */
export type ControlElement = EobElement | BbnElement;

/** Everything a pipeline stream may carry (a Storage Node's query path adds {@link QueryElement}, docs/query.md). */
export type Chunk = ByteChunk | RecordChunk | EobElement | BbnElement | QueryElement | QueryColumnsElement | QueryAggregateElement | QueryEobsElement;

/**
 * The element type of a stream, as the stage registry names it. Connected stages must agree:
 * - `bytes`: {@link ByteChunk}s;
 * - `records`: {@link RecordChunk}s without a batch;
 * - `batched-records`: {@link BatchedRecordChunk}s plus the {@link EobElement} / {@link BbnElement}
 *   that close each batch;
 * - `queries`: {@link QueryElement}s (queries a Storage Node accepted);
 * - `query-results`: {@link QueryResultElement}s (a query's matching records and batch ends).
 */
export type ElementType = 'bytes' | 'records' | 'batched-records' | 'queries' | 'query-results';

/** Every element type, for messages and validation. */
export const ELEMENT_TYPES: readonly ElementType[] = ['bytes', 'records', 'batched-records', 'queries', 'query-results'];

/** The TypeScript element type that goes with each {@link ElementType} tag. */
export interface ElementOf {
  bytes: ByteChunk;
  records: RecordChunk;
  'batched-records': BatchedRecordChunk | ControlElement;
  queries: QueryElement;
  'query-results': QueryResultElement;
}

/**
 * Builds a record chunk, checking the invariants every consumer relies on (the buffer holds exactly
 * `count` whole records and stays under {@link MAX_CHUNK_BYTES}).
 */
export function recordChunk(dataset: string, recordSize: number, count: number, buf: Buffer, batchId?: BatchID): RecordChunk {
  if (!Number.isInteger(recordSize) || recordSize <= 0) throw new RangeError(`recordSize must be a positive integer, got ${recordSize}`);
  if (buf.length !== count * recordSize) {
    throw new RangeError(`a chunk of ${count} records of ${recordSize} bytes holds ${count * recordSize} bytes, got ${buf.length}`);
  }
  if (buf.length > MAX_CHUNK_BYTES && count > 1) throw new RangeError(`a chunk holds at most ${MAX_CHUNK_BYTES} bytes, got ${buf.length}`);
  return batchId === undefined ? { kind: 'records', dataset, count, recordSize, buf } : { kind: 'records', dataset, batchId, count, recordSize, buf };
}

/**
 * The key of a batch in a stage's tables: batch ids are unique per dataset only. The one spelling
 * of it, shared by every stage that keeps state per batch.
 */
export function batchKey(dataset: string, batchId: BatchID): string {
  return `${dataset}\n${batchId.toHex()}`;
}

/**
 * `records` (packed records of `recordSize` bytes) cut at whole records into views of at most
 * {@link MAX_CHUNK_BYTES} each (a single record larger than that stays whole); none for an empty
 * buffer. The one chunk cutter: sources and operators that make records use it, so no chunk outgrows
 * the bound.
 */
export function cutRecords(records: Buffer, recordSize: number): Buffer[] {
  const step = Math.max(1, Math.floor(MAX_CHUNK_BYTES / recordSize)) * recordSize;
  const out: Buffer[] = [];
  for (let at = 0; at < records.length; at += step) out.push(records.subarray(at, at + step));
  return out;
}

/** `count` packed records of `dataset` as record chunks within {@link MAX_CHUNK_BYTES} (see {@link cutRecords}). */
export function recordChunks(dataset: string, recordSize: number, count: number, records: Buffer, batchId?: BatchID): RecordChunk[] {
  return cutRecords(records.subarray(0, count * recordSize), recordSize).map((buf) => recordChunk(dataset, recordSize, buf.length / recordSize, buf, batchId));
}

/** True for a record chunk that carries a batch id. */
export function isBatched(c: Chunk): c is BatchedRecordChunk {
  return c.kind === 'records' && c.batchId !== undefined;
}

/** How many items a chunk counts as in stage counters: records for record chunks, bytes for byte chunks, 0 for control elements. */
export function itemCount(c: Chunk): number {
  switch (c.kind) {
    case 'bytes':
      return c.buf.length;
    case 'records':
      return c.count;
    case 'columns':
      return c.rows;
    case 'aggregate':
    case 'eob':
    case 'eobs':
    case 'bbn':
    case 'query':
      return 0;
  }
}
