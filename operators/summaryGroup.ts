/**
 * A group of a query's batches answered from their segment summaries in one read (docs/query.md,
 * "Merged results"): with merged partials and a filter the batches' zones prove for every record,
 * a batch's answer is its summary, and reading it one by one costs an open, a step and a close,
 * each a hand-off to the native pool and a turn of the read scheduler. A group takes one read slot
 * and one native call; its answered batches fold into the query's accumulator and are listed at
 * once (one frame completes them), each counted as a batch read whole from its summary. The batches
 * it does not answer go back to be read as usual, and their own open says why one cannot be read.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { CompletedBatch } from './mergedPartials';
import type { QueryReadState } from './queryReadState';
import type { ReadSlot } from './readScheduler';
import type { SummaryAnswers } from './scanTypes';

/** Batches one group asks for at most: a cancel or a fairer query waits for at most this many footers. */
export const SUMMARY_GROUP_BATCHES = 64;

const NO_RECORDS = Buffer.alloc(0);

/**
 * Answers what it can of `group` (batches of the query of `r`, in order) from their summaries.
 * Returns the batches left to read as usual (in order); none when the query stopped meanwhile (the
 * worker then stops too, and nothing of the group was folded).
 */
export async function readSummaryGroup(r: QueryReadState, group: readonly BatchID[]): Promise<readonly BatchID[]> {
  const { q, compiled, merged } = r;
  if (!compiled.fromSummaries || !merged) return group;
  await r.results.flow.whenAtMost(r.ctx.maxPending);
  if (q.signal.aborted) return [];
  let answers: SummaryAnswers;
  let slot: ReadSlot;
  try {
    slot = await r.queue.acquire(q.signal);
  } catch {
    // Cancelled while waiting (or the query left its queue): nothing was read.
    return [];
  }
  try {
    answers = await compiled.fromSummaries(group);
  } catch {
    // Not answered as a group: each batch's own read says what is wrong.
    return group;
  } finally {
    slot.release();
  }
  if (q.signal.aborted) return [];
  const left: BatchID[] = [];
  const completes: CompletedBatch[] = [];
  let records = 0;
  let blocks = 0;
  for (let i = 0; i < group.length; i++) {
    const n = answers.records[i] as number;
    if (n < 0) {
      left.push(group[i] as BatchID);
      continue;
    }
    completes.push({ batchId: group[i] as BatchID, recordCount: n });
    records += n;
    blocks += answers.blocks[i] as number;
  }
  if (completes.length === 0) return left;
  const { counters, meter } = r.ctx;
  // Every record of an answered batch matched, none was read: as a summary-answered batch's one step.
  const step = { records: NO_RECORDS, matched: records, scanned: 0, blocksRead: 0, blocksSkipped: blocks, done: true };
  meter?.step(step);
  r.traced.fromSummaries(completes.length, records, blocks);
  counters.received += records;
  counters.sent += records;
  r.matchedTotal += records;
  // Folded and listed at once, so a frame covers exactly the batches it completes.
  merged.addAll(answers.partial, completes);
  return left;
}
