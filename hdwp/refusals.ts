/**
 * Structured details of the HDWP refusals whose error frame code alone does not say enough, in one
 * place: each has one writer (the node that refuses) and one reader (the peer that acts on it).
 * HDWP v1's error frame carries only a code and a message (docs/hdwp.md), so the detail travels in
 * the message's fixed wording; nothing else in the code base reads those sentences.
 *
 * - A batch that is no longer open at the SCC (`operators/batchTimeout.ts` refuses its eob or bbn;
 *   the ingester's `sccSink` reads whether it was closed and how many records it holds).
 * - A query already running on a node's connection (`sources/queryListener.ts` refuses the second
 *   leg; the SCC's `nodes/scc/queryLeg.ts` retries it shortly).
 */
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';

/** A batch's state once it left `open` (docs/scc.md, "Batch states"). */
export type EndedBatchState = 'closed' | 'discarded';

/**
 * What ended a batch: `eob` — its eob closed it; `timeout` — the batch timeout closed or discarded it;
 * `bbn` — its bbn discarded it; `eobRefused` — its eob was refused downstream (count, digest or hash
 * mismatch, no replica made it durable); `tooManyOpen` — it was refused on arrival because the limit
 * of open batches was reached.
 */
export type BatchEndCause = 'eob' | 'timeout' | 'bbn' | 'eobRefused' | 'tooManyOpen';

/** Why a batch is no longer open, as the SCC's batch table records it. */
export interface BatchEnd {
  readonly state: EndedBatchState;
  readonly cause: BatchEndCause;
  /** The detail after the cause: the bbn's reason, the timeout settings, the refusal's message. */
  readonly detail?: string;
}

/** The refusal of an eob or bbn for a batch that is no longer open, as its sender reads it back. */
export interface BatchStateRefusal {
  readonly state: EndedBatchState;
  readonly cause: BatchEndCause;
  /** Records the batch holds (a closed batch). */
  readonly holds?: number;
}

/** The text of each cause in refusals and logs (the wording tests and operators know). */
const CAUSE_TEXT: Readonly<Record<BatchEndCause, (state: EndedBatchState) => string>> = {
  eob: () => 'closed by its eob',
  timeout: (state) => `${state} by the batch timeout`,
  bbn: () => 'discarded by its bbn',
  eobRefused: () => 'its eob was refused',
  tooManyOpen: () => 'refused',
};

/** How a {@link BatchEnd} reads in messages: `closed by its eob`, `discarded by its bbn: <reason>`, ... */
export function batchEndText(end: BatchEnd): string {
  const head = CAUSE_TEXT[end.cause](end.state);
  return end.detail === undefined ? head : `${head}: ${end.detail}`;
}

/**
 * The error frame code and message that refuse an element (`kind`) of a batch that is no longer
 * open: code 5 (timeout) when the batch timeout ended it, else 1 (protocol); a closed batch's
 * message says how many records it holds ({@link readBatchStateRefusal} reads it back).
 */
export function batchStateRefusal(dataset: string, batchId: BatchID, kind: 'eob' | 'bbn', end: BatchEnd, holds: number): { code: number; message: string } {
  const held = end.state === 'closed' ? `; the batch holds ${holds} records` : '';
  return {
    code: end.cause === 'timeout' ? HDWP_ERROR_FRAME_CODES.timeout : HDWP_ERROR_FRAME_CODES.protocol,
    message: `batch ${batchId.toString()} of '${dataset}' is ${end.state} (${batchEndText(end)}); its ${kind} is refused${held}`,
  };
}

const REFUSAL = / is (closed|discarded) \((closed by its eob|closed by the batch timeout|discarded by the batch timeout|discarded by its bbn|its eob was refused|refused)/;
const HOLDS = /; its (?:eob|bbn) is refused; the batch holds (\d+) records/;
const CAUSE_OF: Readonly<Record<string, BatchEndCause>> = {
  'closed by its eob': 'eob',
  'closed by the batch timeout': 'timeout',
  'discarded by the batch timeout': 'timeout',
  'discarded by its bbn': 'bbn',
  'its eob was refused': 'eobRefused',
  refused: 'tooManyOpen',
};

/**
 * The detail of a refusal written by {@link batchStateRefusal}, from an error frame's code and
 * message (a peer's error, as `HdwpStreamError.frameCode` / `.message` carry it); undefined for any
 * other error.
 */
export function readBatchStateRefusal(frameCode: number | undefined, message: string): BatchStateRefusal | undefined {
  if (frameCode !== HDWP_ERROR_FRAME_CODES.protocol && frameCode !== HDWP_ERROR_FRAME_CODES.timeout) return undefined;
  const m = REFUSAL.exec(message);
  if (!m) return undefined;
  const state = m[1] as EndedBatchState;
  const cause = CAUSE_OF[m[2] as string] as BatchEndCause;
  const h = state === 'closed' ? HOLDS.exec(message) : null;
  return h ? { state, cause, holds: Number(h[1]) } : { state, cause };
}

/** The error frame code and message that refuse a query already running on the same connection. */
export function queryAlreadyRunning(queryId: number): { code: number; message: string } {
  return { code: HDWP_ERROR_FRAME_CODES.badQuery, message: `query_id: query ${queryId} is already running on this connection` };
}

/**
 * True for the refusal written by {@link queryAlreadyRunning} (and by nodes that word it "... is
 * already running on this node"): the node still runs an earlier leg of the query.
 */
export function isQueryAlreadyRunning(frame: { readonly code: number; readonly message: string }): boolean {
  return frame.code === HDWP_ERROR_FRAME_CODES.badQuery && / is already running\b/.test(frame.message);
}
