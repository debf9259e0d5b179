/**
 * A group of a query's batches folded in one read (docs/query.md, "Merged results"): with merged
 * partials, a batch whose summary answers the query, or a small one (a few hundred records), costs
 * far less to fold than to read one by one, an open, a step and a close, each a hand-off to the
 * native pool and a turn of the read scheduler. A group takes one read slot and one native call,
 * which answers batches from their summaries and scans small ones whole with the query's filter and
 * aggregate (as their own reads would, within about one read step's bytes); its folded batches join
 * the query's accumulator and are listed at once (one frame completes them), each counted as its
 * own read would count it. The batches it does not fold go back to be read as usual (their own
 * open says why one cannot be read); those it did not try go to the next group.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { CompletedBatch } from './mergedPartials';
import type { QueryReadState } from './queryReadState';
import type { ReadSlot } from './readScheduler';
import type { SummaryAnswers } from './scanTypes';

/** Batches one group asks for at most: a cancel or a fairer query waits for at most this many footers. */
export const SUMMARY_GROUP_BATCHES = 64;

const NO_RECORDS = Buffer.alloc(0);

/** What a group left: batches to read one by one, and batches to group again (not tried). */
export interface GroupLeft {
  /** To read as usual (in order). */
  readonly read: readonly BatchID[];
  /** Not tried within the group's budget (in order): for the next group. */
  readonly again: readonly BatchID[];
}

const NOTHING_LEFT: GroupLeft = { read: [], again: [] };

/**
 * Folds what it can of `group` (batches of the query of `r`, in order). Returns the batches left;
 * none when the query stopped meanwhile (the worker then stops too, and nothing of the group was
 * folded).
 */
export async function readSummaryGroup(r: QueryReadState, group: readonly BatchID[]): Promise<GroupLeft> {
  const { q, compiled, merged } = r;
  if (!compiled.fromSummaries || !merged) return { read: group, again: [] };
  await r.results.flow.whenAtMost(r.ctx.maxPending);
  if (q.signal.aborted) return NOTHING_LEFT;
  let answers: SummaryAnswers;
  let slot: ReadSlot;
  try {
    slot = await r.queue.acquire(q.signal);
  } catch {
    // Cancelled while waiting (or the query left its queue): nothing was read.
    return NOTHING_LEFT;
  }
  try {
    answers = await compiled.fromSummaries(group);
  } catch {
    // Not answered as a group: each batch's own read says what is wrong.
    return { read: group, again: [] };
  } finally {
    slot.release();
  }
  if (q.signal.aborted) return NOTHING_LEFT;
  const read: BatchID[] = [];
  const again: BatchID[] = [];
  const completes: CompletedBatch[] = [];
  const { counters, meter } = r.ctx;
  // The group's steps as one (the meter only sums them).
  let matched = 0;
  let scanned = 0;
  let seen = 0;
  let blocksRead = 0;
  let blocksSkipped = 0;
  for (let i = 0; i < group.length; i++) {
    const n = answers.records[i] as number;
    if (n < 0) {
      (n === -2 ? again : read).push(group[i] as BatchID);
      continue;
    }
    // Counted as the batch's own read counts its steps (a summary-answered batch: every record matched, none read).
    const step = { matched: answers.matched[i] as number, scanned: answers.scanned[i] as number, blocksSkipped: answers.skipped[i] as number, blocksRead: (answers.blocks[i] as number) - (answers.skipped[i] as number) };
    r.traced.step(step, compiled.recordSize);
    completes.push({ batchId: group[i] as BatchID, recordCount: step.matched });
    matched += step.matched;
    scanned += step.scanned;
    seen += Math.max(step.scanned, step.matched);
    blocksRead += step.blocksRead;
    blocksSkipped += step.blocksSkipped;
  }
  if (completes.length === 0) return { read, again };
  meter?.step({ records: NO_RECORDS, matched, scanned, blocksRead, blocksSkipped, done: true });
  counters.received += seen;
  counters.dropped += seen - matched;
  counters.sent += matched;
  r.matchedTotal += matched;
  // Folded and listed at once, so a frame covers exactly the batches it completes.
  merged.addAll(answers.partial, completes);
  return { read, again };
}
