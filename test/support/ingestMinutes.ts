/**
 * Ingests one-minute batches into a cluster through its SCC with the SDK's ingest client, each
 * acknowledged durable before the next: the setup most query tests share.
 */
import * as assert from 'uvu/assert';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import type { Cluster } from './cluster';

/**
 * For each minute `b` of `minutes`, from `t0` (a minute boundary): the batch of that interval, with
 * the records `recordsOf(b)` gives (field → text, as convertRecordToBinary takes them). Resolves with
 * the batch ids in order.
 */
export async function ingestMinutes(cluster: Cluster, schemaJson: string, t0: number, minutes: number, recordsOf: (b: number) => Record<string, string>[]): Promise<string[]> {
  await using ingest = new PlatformIngestClient();
  ingest.loadDatasetSchema(schemaJson);
  ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const ids: string[] = [];
  for (let b = 0; b < minutes; b++) {
    const id = ingest.generateBatchIdTime(t0 + b * 60, t0 + b * 60 + 60);
    const recs = recordsOf(b).map((r) => ingest.convertRecordToBinary(r));
    assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
    assert.ok(await ingest.sendEob(id), String(ingest.lastError));
    ids.push(id.toHex());
  }
  return ids;
}
