/**
 * The batches the open and long time window tests read (sqlLongWindow.test.ts through a Proxy,
 * sqlDirectWindow.test.ts straight to the SCC): four one-minute `flows` batches of
 * {@link PER_BATCH} records lying years and months apart, sent to the test cluster's SCC.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import type { Cluster } from '../support/cluster';
import { untilBatchIndexHolds } from './proxyCluster';

/** The `flows` dataset's schema (pipelines/examples/data/flows.schema.json). */
export const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
/** Seconds in a day. */
export const DAY = 86_400;
/** Seconds in a (365-day) year. */
export const YEAR = 365 * DAY;
/** Now, in whole seconds, when the test file loaded. */
export const NOW = Math.floor(Date.now() / 1000);
const M = NOW - (NOW % 60);
/** Batch starts: two years back (outside a year's lookback), 300 days, 100 days and an hour back. */
export const STARTS = [M - 2 * YEAR, M - 300 * DAY, M - 100 * DAY, M - 3600];
/** Records per batch: one a second from the batch's start, `bytes` counting 0 up. */
export const PER_BATCH = 60;

/** Sends the batches at {@link STARTS} to `cluster`'s SCC, record `i`'s `dst_port` being `dstPort(i)`, and waits until every Storage Node's batch index holds them. */
export async function sendWindowBatches(cluster: Cluster, dstPort: (i: number) => string): Promise<void> {
  {
    await using ingest = new PlatformIngestClient();
    ingest.loadDatasetSchema(schemaJson);
    ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
    for (const s of STARTS) {
      const id = ingest.generateBatchIdTime(s, s + 60);
      const recs = Array.from({ length: PER_BATCH }, (_, i) => ingest.convertRecordToBinary({ ts: String(s + i), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: dstPort(i), proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' }));
      assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
      assert.ok(await ingest.sendEob(id), String(ingest.lastError));
    }
  }
  await untilBatchIndexHolds(cluster, STARTS.length);
}
