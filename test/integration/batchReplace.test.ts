/**
 * Batch replace end to end (docs/scc.md, "Batch state machine"): an SCC process and two Storage
 * Node processes. A sender that died half way through a batch comes back on a new stream, sends a
 * bbn for it and the whole batch again: the replicas drop the partial copy and commit exactly the
 * resent batch. A batch already closed is not replaced: its bbn and eob are refused with code 1
 * naming the records it holds, and the stored segments stay as they were.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { closedAtSccReport, isClosedAtScc } from '../../sinks/sccSink';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { startCluster, type Cluster } from '../support/cluster';
import { batch, closingHashOf, filesOn, recordsOf, replicaStates, RS, until, verifiedClosingHash } from './ingestKit';

const DS = 'flows';
let cluster: Cluster;

const connect = (): Promise<HdwpClient> => HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingester', datasetId: DS, recordSize: RS });

async function refusal(p: Promise<unknown>): Promise<HdwpStreamError> {
  const err = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  assert.instance(err, HdwpStreamError, 'refused');
  return err as HdwpStreamError;
}

const replace = suite('batch replace: SCC + two Storage Nodes (real processes)');
replace.before(async () => {
  // The default batch timeout (60 s) keeps the dead sender's batch open for the whole test.
  cluster = await startCluster({ storageNodes: 2, recordSize: RS });
});
replace.after(async () => {
  await cluster?.stop();
});

replace('a half-sent batch is replaced: bbn on the new stream, the batch sent again, exactly the resent records committed on both replicas', async () => {
  const dead = await connect();
  await dead.sendRecords(batch(1), recordsOf(300, 1));
  // The partial copy reached both Storage Nodes before the sender "died".
  await until(() => cluster.sns.every((sn) => filesOn(sn, DS).partials.length === 1));
  await dead.close();

  const again = await connect();
  const full = recordsOf(500, 2);
  await again.sendBbn(batch(1), 'ingester restart: sending the batch afresh');
  await again.sendRecords(batch(1), full.subarray(0, 200 * RS));
  await again.sendRecords(batch(1), full.subarray(200 * RS));
  const ack = await again.sendEob(batch(1), 500);
  assert.is(ack.recordCount, 500);
  const want = await closingHashOf(batch(1), full);
  assert.ok(Buffer.from(ack.closingHash).equals(want), "the ack carries the resent batch's closing hash");
  for (const sn of cluster.sns) {
    assert.equal(filesOn(sn, DS), { segments: [`${batch(1).toHex()}.hdseg`], partials: [] }, `${sn.name}: one segment, no partial left`);
    assert.ok((await verifiedClosingHash(sn, DS, batch(1))).equals(want), `${sn.name} holds exactly the resent records`);
  }
  assert.equal(await replicaStates(cluster.scc.observabilityPort), ['sn1 healthy', 'sn2 healthy']);
  await again.close();
});

replace('a closed batch is not replaced: its bbn and its eob are refused with code 1 naming the 500 records it holds; the segments are untouched', async () => {
  const late = await connect();
  const bbnErr = await refusal(late.sendBbn(batch(1), 'ingester restart: sending the batch afresh'));
  assert.is(bbnErr.frameCode, 1);
  assert.match(bbnErr.message, /is closed \(closed by its eob\); its bbn is refused; the batch holds 500 records/);
  await late.sendRecords(batch(1), recordsOf(500, 2));
  const eobErr = await refusal(late.sendEob(batch(1), 500));
  assert.is(eobErr.frameCode, 1);
  assert.ok(isClosedAtScc(eobErr), 'the ingester recognises the duplicate');
  assert.match(closedAtSccReport('batch 1', 500, eobErr), /already durable at the SCC with the same 500 records/);
  assert.match(closedAtSccReport('batch 1', 499, eobErr), /holding 500 records, so the 499 records sent now were dropped/);
  const want = await closingHashOf(batch(1), recordsOf(500, 2));
  for (const sn of cluster.sns) {
    assert.equal(filesOn(sn, DS).segments.length, 1);
    assert.ok((await verifiedClosingHash(sn, DS, batch(1))).equals(want), `${sn.name} kept the batch as it was`);
  }
  // The stream goes on: a new batch on it commits.
  assert.is((await late.sendEob(batch(2), 0).catch(() => undefined))?.recordCount, 0);
  await late.sendRecords(batch(3), recordsOf(10, 3));
  assert.is((await late.sendEob(batch(3), 10)).recordCount, 10);
  await late.close();
});

replace('without the bbn the resend is mixed into the open batch and refused at its eob (why the ingester sends the bbn)', async () => {
  const dead = await connect();
  await dead.sendRecords(batch(4), recordsOf(30, 4));
  await until(() => cluster.sns.every((sn) => filesOn(sn, DS).partials.length === 1));
  await dead.close();
  const again = await connect();
  await again.sendRecords(batch(4), recordsOf(50, 5));
  const err = await refusal(again.sendEob(batch(4), 50));
  assert.match(err.message, /its eob counts 50 records, 80 arrived/);
  // A bbn now (the batch is discarded by the refusal) lets the sender replace it after all.
  await again.sendBbn(batch(4), 'sending the batch afresh');
  await again.sendRecords(batch(4), recordsOf(50, 5));
  assert.is((await again.sendEob(batch(4), 50)).recordCount, 50);
  for (const sn of cluster.sns) assert.ok((await verifiedClosingHash(sn, DS, batch(4))).equals(await closingHashOf(batch(4), recordsOf(50, 5))));
  await again.close();
});

replace.run();

const timedOut = suite('batch replace after TIMEOUT_ACTION=BBN discarded the half-sent batch (real processes)');
let bbnCluster: Cluster;
timedOut.before(async () => {
  bbnCluster = await startCluster({ storageNodes: 1, recordSize: RS, sccEnv: { BATCH_TIMEOUT_MS: '500', TIMEOUT_ACTION: 'BBN' } });
});
timedOut.after(async () => {
  await bbnCluster?.stop();
});
timedOut('the timeout discarded it (no partial left); records without a bbn are still refused; after the bbn the whole batch commits', async () => {
  const c = bbnCluster;
  const open = (): Promise<HdwpClient> => HdwpClient.connect({ host: c.host, port: c.scc.productionPort, role: 'ingester', datasetId: DS, recordSize: RS });
  const sn = c.sns[0];
  const dead = await open();
  await dead.sendRecords(batch(7), recordsOf(40, 7));
  await until(() => filesOn(sn, DS).partials.length === 1);
  await dead.close();
  await until(() => filesOn(sn, DS).partials.length === 0);
  const again = await open();
  await again.sendRecords(batch(7), recordsOf(5, 8));
  const err = await refusal(again.sendEob(batch(7), 5));
  assert.is(err.frameCode, 5, 'a batch the timeout discarded refuses a plain resend');
  const full = recordsOf(90, 9);
  await again.sendBbn(batch(7), 'sending the batch afresh');
  await again.sendRecords(batch(7), full);
  assert.is((await again.sendEob(batch(7), 90)).recordCount, 90);
  assert.ok((await verifiedClosingHash(sn, DS, batch(7))).equals(await closingHashOf(batch(7), full)));
  assert.equal(filesOn(sn, DS).partials, []);
  await again.close();
});
timedOut.run();
