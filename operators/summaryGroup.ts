/**
 * A group of a query's batches answered in one read (docs/query.md, "Merged results"): with merged
 * partials, a batch whose summary answers the query, or a small one (a few hundred records), costs
 * far less to fold than to read one by one, an open, a step and a close, each a hand-off to the
 * native pool and a turn of the read scheduler. A group takes one read slot and one native call,
 * which answers batches from their summaries and scans small ones whole with the query's filter and
 * aggregate (as their own reads would, within about one read step's bytes); its folded batches join
 * the query's accumulator and are listed at once (one frame completes them), each counted as its
 * own read would count it. The batches it does not fold go back to be read as usual (their own
 * open says why one cannot be read); those it did not try go to the next group. With merged rows a
 * group scans small batches whole the same way and their matches join the held rows.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { CompletedBatch } from './mergedPartials';
import type { QueryReadState } from './queryReadState';
import type { ReadSlot } from './readScheduler';
import { MergedRows } from './mergedRows';
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
  const { compiled, merged } = r;
  const fromSummaries = compiled.fromSummaries;
  if (!fromSummaries || !merged) return { read: group, again: [] };
  const answers = await groupCall(r, group, fromSummaries);
  if (!('records' in answers)) return answers;
  const completes: CompletedBatch[] = [];
  const left = countGroup(r, group, answers, true, (i, matched) => completes.push({ batchId: group[i] as BatchID, recordCount: matched }));
  // Folded and listed at once, so a frame covers exactly the batches it completes.
  if (completes.length > 0) merged.addAll(answers.partial, completes);
  return left;
}

/**
 * Scans what it can of `group` whole in one call, with merged rows (docs/query.md, "Merged
 * results"): each scanned batch's matches join the held rows (its best with a `top`), or go out
 * at once with its eob when too large to hold. Returns the batches left, as
 * {@link readSummaryGroup} does.
 */
export async function readRowsGroup(r: QueryReadState, group: readonly BatchID[]): Promise<GroupLeft> {
  const { compiled, rows } = r;
  const fromRows = compiled.fromRows;
  if (!fromRows || !rows) return { read: group, again: [] };
  const answers = await groupCall(r, group, fromRows);
  if (!('records' in answers)) return answers;
  const rs = compiled.recordSize;
  const scanned: { batchId: BatchID; records: Buffer }[] = [];
  let at = 0;
  const left = countGroup(r, group, answers, false, (i, matched) => {
    const kept = answers.kept[i] as number;
    const records = answers.rows.subarray(at, at + kept * rs);
    at += kept * rs;
    // With a top the call kept each batch's best, as its own read keeps them; the rest count as dropped.
    r.ctx.counters.dropped += matched - kept;
    scanned.push({ batchId: group[i] as BatchID, records });
  });
  for (const { batchId, records } of scanned) {
    // Stopped meanwhile: what is held is discarded with the query, nothing more goes out.
    if (r.q.signal.aborted) return NOTHING_LEFT;
    if (compiled.selectTop || records.length <= MergedRows.MAX_BATCH_BYTES) {
      // A view of the group's buffer (ours): held rows are counted sent when they go out.
      rows.add(batchId, records);
    } else {
      // Too large to hold: sent now, and ended with its own eob, as its own read would.
      await r.send(batchId, records);
      r.end(batchId, records.length / rs);
    }
  }
  return left;
}

/**
 * Waits for the query's flow and a read slot, then calls `call` for `group`. Returns its answer,
 * or what is left when it did not answer (the query stopped: nothing; the call failed: every batch
 * to read as usual, each read saying what is wrong).
 */
async function groupCall<A>(r: QueryReadState, group: readonly BatchID[], call: (ids: readonly BatchID[]) => Promise<A>): Promise<A | GroupLeft> {
  const q = r.q;
  await r.results.flow.whenAtMost(r.ctx.maxPending);
  if (q.signal.aborted) return NOTHING_LEFT;
  let slot: ReadSlot;
  try {
    slot = await r.queue.acquire(q.signal);
  } catch {
    // Cancelled while waiting (or the query left its queue): nothing was read.
    return NOTHING_LEFT;
  }
  let answers: A;
  try {
    answers = await call(group);
  } catch {
    // Not answered as a group: each batch's own read says what is wrong.
    return { read: group, again: [] };
  } finally {
    slot.release();
  }
  return q.signal.aborted ? NOTHING_LEFT : answers;
}

/**
 * Counts the batches a group answered as their own reads would count their steps (the meter sums
 * them as one step), calling `answered(i, matched)` for each in order; returns the others.
 * `folded`: the matches are sent now, folded into a partial (rows count as sent when they go out).
 */
function countGroup(r: QueryReadState, group: readonly BatchID[], answers: Omit<SummaryAnswers, 'partial'>, folded: boolean, answered: (i: number, matched: number) => void): GroupLeft {
  const read: BatchID[] = [];
  const again: BatchID[] = [];
  const { compiled } = r;
  const { counters, meter } = r.ctx;
  let matched = 0;
  let scanned = 0;
  let seen = 0;
  let blocksRead = 0;
  let blocksSkipped = 0;
  let any = false;
  for (let i = 0; i < group.length; i++) {
    const n = answers.records[i] as number;
    if (n < 0) {
      (n === -2 ? again : read).push(group[i] as BatchID);
      continue;
    }
    // Counted as the batch's own read counts its steps (a summary-answered batch: every record matched, none read).
    const step = { matched: answers.matched[i] as number, scanned: answers.scanned[i] as number, blocksSkipped: answers.skipped[i] as number, blocksRead: (answers.blocks[i] as number) - (answers.skipped[i] as number) };
    r.traced.step(step, compiled.recordSize);
    answered(i, step.matched);
    any = true;
    matched += step.matched;
    scanned += step.scanned;
    seen += Math.max(step.scanned, step.matched);
    blocksRead += step.blocksRead;
    blocksSkipped += step.blocksSkipped;
  }
  if (!any) return { read, again };
  meter?.step({ records: NO_RECORDS, matched, scanned, blocksRead, blocksSkipped, done: true });
  counters.received += seen;
  counters.dropped += seen - matched;
  if (folded) counters.sent += matched;
  r.matchedTotal += matched;
  return { read, again };
}
