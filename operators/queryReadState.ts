/**
 * What reading one batch, or a group of batches, needs of its query's reads (operators/queryReads.ts
 * implements it; operators/batchRead.ts and operators/summaryGroup.ts use it): the query and what it
 * compiled to, where its results go and how they are counted.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { QueryResultElement, QueryResults, RunningQuery } from '../stream/queryElement';
import type { StageCounters } from '../stream/stageCounters';
import type { MergedPartials } from './mergedPartials';
import type { MergedRows } from './mergedRows';
import type { ReadQueue } from './readScheduler';
import type { ScanSpan } from './scanSpan';
import type { CompiledQuery, ScanMeter, ScanOptions } from './scanTypes';

/** What a query's reads share with the operator: its counters and reports, the read slots. */
export interface QueryReadContext {
  readonly counters: StageCounters;
  readonly meter?: ScanMeter;
  readonly report: (message: string) => void;
  readonly maxPending: number;
  readonly queryThreads: number;
  readonly scheduler: ScanOptions['scheduler'];
}

/** One query's reads as a batch (or a group of batches) sees them. */
export interface QueryReadState {
  readonly q: RunningQuery;
  readonly compiled: CompiledQuery;
  readonly ctx: QueryReadContext;
  readonly traced: ScanSpan;
  readonly results: QueryResults;
  /** Merged partials (aggregate with merge_batches). */
  readonly merged: MergedPartials | undefined;
  /** Merged rows (records with merge_batches). */
  readonly rows: MergedRows | undefined;
  /** The query's place in the read queues. */
  readonly queue: ReadQueue;
  /** Records matched so far (against the query's `limit`). */
  matchedTotal: number;
  /** Whether the query has what its `limit` asked for. */
  limitReached(): boolean;
  /** Hands an element to the sink. */
  emit(el: QueryResultElement): void;
  /** A batch ended with `recordCount` records sent: its eob. */
  end(batchId: BatchID, recordCount: number): void;
  /** A batch cannot be answered here: a bbn with `code`. */
  fail(batchId: BatchID, code: number, message: string): void;
  /** Sends a batch's matching records (masked, as records or columns frames). */
  send(batchId: BatchID, records: Buffer): Promise<void>;
}
