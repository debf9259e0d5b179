/**
 * BATCH_TIMEOUT_MS / TIMEOUT_ACTION end to end: an SCC process with a short batch timeout and a
 * Storage Node process behind it. A batch whose sender goes quiet is closed (EOB) or discarded (BBN)
 * by the SCC, and the Storage Node ends up with the segment or with nothing.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { startCluster, type Cluster } from '../support/cluster';
import { batch, closingHashOf, filesOn, getJson, recordsOf, RS, until, verifiedClosingHash } from './ingestKit';

const DS = 'flows';

/** A cluster of one SCC (BATCH_TIMEOUT_MS 1 s, the given action) and one Storage Node. */
function timeoutCluster(action: 'EOB' | 'BBN'): Promise<Cluster> {
  return startCluster({ storageNodes: 1, recordSize: RS, sccEnv: { BATCH_TIMEOUT_MS: '1000', TIMEOUT_ACTION: action } });
}

async function lateEob(client: HdwpClient, n: number, count: number): Promise<HdwpStreamError> {
  const err = await client.sendEob(batch(n), count).then(
    () => undefined,
    (x: unknown) => x,
  );
  assert.instance(err, HdwpStreamError, 'a late eob is refused');
  return err as HdwpStreamError;
}

const eob = suite('TIMEOUT_ACTION=EOB (real processes)');
let eobCluster: Cluster;
eob.before(async () => {
  eobCluster = await timeoutCluster('EOB');
});
eob.after(async () => {
  await eobCluster?.stop();
});
eob('a quiet batch is closed with the records seen; the Storage Node commits it; the late eob gets error 5', async () => {
  const c = eobCluster;
  const client = await HdwpClient.connect({ host: c.host, port: c.scc.productionPort, role: 'ingestClient', datasetId: DS, recordSize: RS });
  const records = recordsOf(640, 1);
  await client.sendRecords(batch(1), records);
  // No eob: after 1 s without activity the SCC closes the batch itself.
  const sn = c.sns[0];
  await until(() => filesOn(sn, DS).segments.length === 1);
  assert.equal(filesOn(sn, DS).segments, [`${batch(1).toHex()}.hdseg`]);
  assert.ok((await verifiedClosingHash(sn, DS, batch(1))).equals(await closingHashOf(batch(1), records)));
  const err = await lateEob(client, 1, 640);
  assert.is(err.frameCode, 5);
  assert.match(err.message, /closed by the batch timeout/);
  // Records for the closed batch are refused; the stream and other batches go on.
  await client.sendRecords(batch(1), recordsOf(5, 9));
  await client.sendRecords(batch(2), recordsOf(7, 2));
  assert.is((await client.sendEob(batch(2), 7)).recordCount, 7);
  assert.equal(filesOn(sn, DS).segments.length, 2);
  assert.ok((await verifiedClosingHash(sn, DS, batch(1))).equals(await closingHashOf(batch(1), records)), 'the closed batch kept its records');
  await client.close();
});
eob.run();

const bbn = suite('TIMEOUT_ACTION=BBN (real processes)');
let bbnCluster: Cluster;
bbn.before(async () => {
  bbnCluster = await timeoutCluster('BBN');
});
bbn.after(async () => {
  await bbnCluster?.stop();
});
bbn('a quiet batch is discarded: the Storage Node drops its partial segment; the late eob gets error 5', async () => {
  const c = bbnCluster;
  const client = await HdwpClient.connect({ host: c.host, port: c.scc.productionPort, role: 'ingestClient', datasetId: DS, recordSize: RS });
  const sn = c.sns[0];
  await client.sendRecords(batch(1), recordsOf(640, 1));
  // The records reach the node (a partial segment), then the timeout's bbn removes them.
  const discarded = async (): Promise<boolean> => /hd_batches_discarded_total\{reason="bbn"\} 1/.test(await (await fetch(`http://127.0.0.1:${sn.observabilityPort}/metrics`)).text());
  await until(discarded);
  assert.equal(filesOn(sn, DS), { segments: [], partials: [] });
  const err = await lateEob(client, 1, 640);
  assert.is(err.frameCode, 5);
  assert.match(err.message, /discarded by the batch timeout/);
  const health = await getJson<{ status: string }>(`http://127.0.0.1:${c.scc.observabilityPort}/health`);
  assert.is(health.status, 'ok');
  // A batch that closes in time is unaffected.
  await client.sendRecords(batch(2), recordsOf(3, 2));
  assert.is((await client.sendEob(batch(2), 3)).recordCount, 3);
  assert.equal(filesOn(sn, DS).segments, [`${batch(2).toHex()}.hdseg`]);
  await client.close();
});
bbn.run();
