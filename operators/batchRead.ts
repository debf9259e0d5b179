/**
 * One batch of a query read step by step (docs/query.md, "Storage Node scan and result streams"):
 * each step waits for the query's flow and a read slot of the weighted fair read scheduler, then its
 * matches are sent (masked, as records or columns frames), folded into an aggregate, kept for the
 * batch's top, or held for merged rows; the batch then ends with an eob, or a bbn (12 when the
 * recomputed hash chain differs, 13 when it cannot be read).
 */
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES as CODES } from '../engine-rs/hdwpFrame';
import { MergedRows } from './mergedRows';
import type { FoldableBatch } from './mergedPartials';
import type { QueryReadState } from './queryReadState';
import type { BatchScan, BatchScanStep, BatchUnreadable } from './scanTypes';

/** The partial of a batch in which no record matched (docs/query.md, "Aggregates"). */
const EMPTY_PARTIAL = '{"v":1,"groups":[]}';

function isUnreadable(x: BatchScan | BatchUnreadable): x is BatchUnreadable {
  return 'code' in x;
}

/**
 * Reads `batchId` for the query of `r` to its end, or until the query stops. `stop`: the worker
 * takes no further batch (the query was cancelled, or refused as a whole).
 */
export async function readBatch(r: QueryReadState, batchId: BatchID): Promise<'next' | 'stop'> {
  const { q, compiled, results, merged, rows, traced } = r;
  const { counters, meter, report, maxPending } = r.ctx;
  const spec = q.spec;
  if (r.limitReached()) {
    // The query has what it asked for: the batches left are closed unread.
    r.end(batchId, 0);
    return 'next';
  }
  const opened = await compiled.open(batchId, spec.verifyHash);
  if (isUnreadable(opened)) {
    r.fail(batchId, opened.code, opened.message);
    return 'next';
  }
  let sent = 0;
  let partial: string | undefined;
  let last: BatchScanStep | undefined;
  let folded = false;
  let best: Buffer | undefined;
  let topMatched = 0;
  // Merged rows: this batch's matches, held while they stay small.
  let held: Buffer[] | undefined = rows ? [] : undefined;
  let heldBytes = 0;
  try {
    while (!last?.done) {
      await results.flow.whenAtMost(maxPending);
      if (q.signal.aborted || r.limitReached()) break;
      const slot = await r.queue.acquire(q.signal);
      try {
        last = await opened.next();
      } finally {
        slot.release();
      }
      meter?.step(last);
      traced.step(last, compiled.recordSize);
      // A batch answered from its summary matched records the kernel never read: they count as received.
      const seen = Math.max(last.scanned, last.matched);
      counters.received += seen;
      counters.dropped += seen - last.matched;
      if (compiled.aggregate) {
        // The step's matches were folded into the batch's partial natively; it comes with the last step.
        counters.sent += last.matched;
        sent += last.matched;
        r.matchedTotal += last.matched;
        if (last.partial !== undefined) partial = last.partial;
        continue;
      }
      if (last.matched === 0) continue;
      if (q.signal.aborted) {
        counters.dropped += last.matched;
        break;
      }
      if (compiled.selectTop) {
        // Top records: the step's matches join the batch's best so far; the best go out at the batch's end.
        topMatched += last.matched;
        best = compiled.selectTop(best === undefined ? last.records : Buffer.concat([best, last.records]));
        continue;
      }
      if (held !== undefined) {
        heldBytes += last.records.length;
        r.matchedTotal += last.matched;
        if (heldBytes <= MergedRows.MAX_BATCH_BYTES) {
          held.push(last.records);
          continue;
        }
        // Too large to hold: what was held goes out, and the batch streams as before.
        for (const h of held) await r.send(batchId, h);
        sent += (heldBytes - last.records.length) / compiled.recordSize;
        r.matchedTotal -= last.matched;
        held = undefined;
      }
      await r.send(batchId, last.records);
      sent += last.matched;
      r.matchedTotal += last.matched;
    }
    if (best !== undefined && last?.done && !q.signal.aborted && !rows) {
      const n = best.length / compiled.recordSize;
      counters.dropped += topMatched - n;
      await r.send(batchId, best);
      sent += n;
      r.matchedTotal += n;
    }
    // Merged partials: folded and listed at once, so a frame covers exactly the batches it completes.
    if (merged && opened.foldInto && last?.done && !(spec.verifyHash && last.hashOk === false) && !q.signal.aborted) {
      merged.add(opened as FoldableBatch, { batchId, recordCount: sent });
      folded = true;
    }
  } catch (err) {
    if (q.signal.aborted) return 'stop';
    if ((err as { code?: unknown }).code === 'ERR_SCAN_TOO_MANY_GROUPS') {
      // The query cannot be aggregated here: refused as a bad query (the client falls back to records).
      const message = `${(err as Error).message} (batch ${batchId.toHex()} of '${spec.dataset}')`;
      counters.errors++;
      report(`query ${spec.queryId}: ${message}`);
      q.reply({ kind: 'error', code: CODES.badQuery, message });
      q.stop({ code: CODES.badQuery, message });
      return 'stop';
    }
    r.fail(batchId, CODES.batchUnreadable, `batch ${batchId.toHex()} of '${spec.dataset}' could not be read: ${(err as Error).message}`);
    return 'next';
  } finally {
    opened.close();
  }
  if (q.signal.aborted) return 'stop';
  if (spec.verifyHash && last?.done && last.hashOk === false) {
    r.fail(batchId, CODES.hashMismatch, `batch ${batchId.toHex()} of '${spec.dataset}': the recomputed hash chain does not match the closing hash stored at ingest`);
  } else if (rows && last?.done && (compiled.selectTop || held !== undefined)) {
    // Held: sent with other batches', completed by their eobs.
    const records = compiled.selectTop ? (best ?? Buffer.alloc(0)) : held && held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held ?? []);
    if (compiled.selectTop) counters.dropped += topMatched - records.length / compiled.recordSize;
    rows.add(batchId, records);
  } else if (!folded) {
    if (compiled.aggregate) r.emit({ kind: 'aggregate', dataset: spec.dataset, batchId, json: partial ?? EMPTY_PARTIAL, results });
    r.end(batchId, sent);
  }
  return 'next';
}
