/**
 * Sends one batch through an ingest client while its SCC may be failing: the fault trials and the
 * SCC restart test share it.
 */
import type { BatchID } from '../../engine-rs/batchId';
import type { PlatformIngestClient } from '../../sdk/platformIngestClient';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A batch sent as `chunks`, pausing `pauses[k]` ms after chunk `k`. */
export interface ChunkedBatch {
  readonly id: BatchID;
  readonly chunks: readonly Buffer[];
  readonly pauses: readonly number[];
}

/**
 * Streams the chunks of `p` then closes it with an eob, retrying every refused call every 50 ms
 * until `deadline` (ms since the epoch). `acked`: the eob was acknowledged; `failures`: how many
 * calls were refused on the way.
 */
export async function sendBatchRetrying(c: PlatformIngestClient, p: ChunkedBatch, deadline: number): Promise<{ acked: boolean; failures: number }> {
  let ok = true;
  let failures = 0;
  for (const [k, chunk] of p.chunks.entries()) {
    // A false streamInsert left its records out of the batch: send them again.
    while (!(await c.streamInsert(p.id, chunk))) {
      failures++;
      if (Date.now() > deadline) {
        ok = false;
        break;
      }
      await sleep(50);
    }
    if (!ok) break;
    await sleep(p.pauses[k] ?? 0);
  }
  let acked = false;
  // A false sendEob keeps the batch: the next sendEob re-sends it whole.
  while (ok && !(acked = await c.sendEob(p.id)) && Date.now() < deadline) {
    failures++;
    await sleep(50);
  }
  return { acked, failures };
}
