/**
 * The write path end to end, as real processes on loopback: one SCC (`hd run pipelines/scc.yaml`)
 * and two Storage Nodes (`hd run pipelines/storage-node.yaml --config`), fed by an HdwpClient the way
 * an ingest client feeds them. What lands on disk is read back from the nodes' own directories.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/index';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { startCluster, type Cluster } from '../support/cluster';
import { helloBytes, RawPeer } from '../sources/hdwpKit';
import { encodeRecords } from '../../engine-rs/hdwp';
import { batch, closingHashOf, filesOn, getJson, recordsOf, replicaStates, RS, segmentBytes, until, verifiedClosingHash } from './ingestKit';

const DS = 'flows';

/** What was acknowledged: batch → its records and the closing hash the SCC answered with. */
type Acked = Map<number, { id: BatchID; records: Buffer; closingHash: Buffer }>;

async function connect(c: Cluster, dataset = DS): Promise<HdwpClient> {
  return HdwpClient.connect({ host: c.host, port: c.scc.productionPort, role: 'ingestClient', datasetId: dataset, recordSize: RS });
}

/** Sends batch `n` (`count` records in three frames' worth of calls) and waits for its durable ack. */
async function ingestBatch(client: HdwpClient, n: number, count: number, acked: Acked): Promise<void> {
  const id = batch(n);
  const records = recordsOf(count, n);
  const third = Math.floor(count / 3) * RS;
  await client.sendRecords(id, records.subarray(0, third));
  await client.sendRecords(id, records.subarray(third, 2 * third));
  await client.sendRecords(id, records.subarray(2 * third));
  const ack = await client.sendEob(id, count);
  acked.set(n, { id, records, closingHash: Buffer.from(ack.closingHash) });
}

/** Both nodes hold exactly the acknowledged batches, byte-identical, each verifying with the SCC's closing hash. */
async function assertReplicated(c: Cluster, acked: Acked): Promise<void> {
  const want = [...acked.values()].map((a) => `${a.id.toHex()}.hdseg`).sort();
  for (const sn of c.sns) assert.equal(filesOn(sn, DS).segments, want, `${sn.name} holds every acknowledged batch`);
  for (const a of acked.values()) {
    const expected = await closingHashOf(a.id, a.records);
    assert.ok(a.closingHash.equals(expected), 'the ack carries the sha512 chain of the records');
    const [one, two] = c.sns.map((sn) => segmentBytes(sn, DS, a.id) as Buffer);
    assert.ok(one.equals(two), `batch ${a.id.toString()}: segments byte-identical on both nodes`);
    for (const sn of c.sns) assert.ok((await verifiedClosingHash(sn, DS, a.id)).equals(expected), `${sn.name}: chain verifies with the SCC's closing hash`);
  }
}

const ingest = suite('ingest through an SCC into two Storage Nodes (real processes)');
let cluster: Cluster;
const acked: Acked = new Map();
ingest.before(async () => {
  cluster = await startCluster({ recordSize: RS });
});
ingest.after(async () => {
  await cluster?.stop();
});

ingest('several batches land byte-identical and verified on both nodes, with the SCC closing hash', async () => {
  const client = await connect(cluster);
  for (let n = 1; n <= 6; n++) await ingestBatch(client, n, 700 + n * 111, acked);
  // An empty batch is a batch too.
  const empty = batch(7);
  const ack = await client.sendEob(empty, 0);
  acked.set(7, { id: empty, records: Buffer.alloc(0), closingHash: Buffer.from(ack.closingHash) });
  await client.close();
  await assertReplicated(cluster, acked);
  assert.equal(await replicaStates(cluster.scc.observabilityPort), ['sn1 healthy', 'sn2 healthy']);
});

ingest('kill -9 of a Storage Node mid-ingest: ingest goes on, /health shows it down; restarted, it is caught up', async () => {
  const client = await connect(cluster);
  const sn2 = cluster.sns[1];
  let n = 100;
  // Ingest runs in the background the whole time; the kill lands while batches are in flight.
  let stop = false;
  let failure: unknown;
  const pump = (async () => {
    try {
      while (!stop) await ingestBatch(client, n++, 1500, acked);
    } catch (err) {
      failure = err;
    }
  })();
  await until(() => n >= 104 || failure !== undefined);
  await sn2.proc.kill9();
  await until(async () => (await replicaStates(cluster.scc.observabilityPort))[1] !== 'sn2 healthy' || failure !== undefined);
  const health = await getJson<{ status: string; replicas: { replicas: { name: string; state: string; reason: string }[] } }>(`http://127.0.0.1:${cluster.scc.observabilityPort}/health`);
  assert.is(health.status, 'degraded');
  const down = health.replicas.replicas[1];
  assert.ok(down.state === 'down' || down.state === 'catching-up', `sn2 is ${down.state}`);
  // Batches keep being acknowledged (by sn1 alone) while sn2 is away.
  const before = n;
  await until(() => n >= before + 4 || failure !== undefined);
  assert.is(failure, undefined, String(failure));

  await cluster.restartSn(1);
  await until(async () => (await replicaStates(cluster.scc.observabilityPort)).join() === 'sn1 healthy,sn2 healthy' || failure !== undefined);
  const afterRestart = n;
  await until(() => n >= afterRestart + 2 || failure !== undefined);
  stop = true;
  await pump;
  assert.is(failure, undefined, String(failure));
  await client.close();
  assert.match(sn2.proc.output(), /recovery: \d+ complete segments verified/);
  // Everything acknowledged, before, during and after the outage, is on both nodes and verifies.
  await until(async () => (await replicaStates(cluster.scc.observabilityPort)).join() === 'sn1 healthy,sn2 healthy');
  await assertReplicated(cluster, acked);
  for (const sn of cluster.sns) assert.equal(filesOn(sn, DS).partials, [], `${sn.name}: nothing left half-written`);
});

// Far above the batches the kill -9 test pumps (one per loop turn for as long as the outage lasts).
const B = 1_000_000;

ingest('malformed frames, an oversize frame, a connection dropped mid-frame: each gets error 1 or is closed; the SCC and other streams go on', async () => {
  const good = await connect(cluster);
  const id = batch(B + 500);
  const records = recordsOf(900, B + 500);
  await good.sendRecords(id, records.subarray(0, 300 * RS));

  // Garbage instead of a frame.
  const garbage = await RawPeer.connect(cluster.scc.productionPort);
  await garbage.write(Buffer.from('GET / HTTP/1.1\r\nHost: scc\r\n\r\n'));
  const e1 = await garbage.errorAndClose();
  assert.is(e1.code, 1);
  assert.match(e1.message, /ERR_HDWP_BAD_MAGIC/);

  // A valid hello, then a records frame with a flipped payload byte (checksum mismatch).
  const corrupt = await RawPeer.connect(cluster.scc.productionPort);
  await corrupt.write(helloBytes('ingestClient', DS, RS));
  await corrupt.next('credit');
  const frame = Buffer.from(encodeRecords(batch(B + 501), RS, recordsOf(3, B + 501)));
  frame[frame.length - 1] ^= 0xff;
  await corrupt.write(frame);
  const e2 = await corrupt.errorAndClose();
  assert.is(e2.code, 1);
  assert.match(e2.message, /ERR_HDWP_CHECKSUM_MISMATCH/);

  // A header declaring a 2 GiB payload: refused from the header alone, before any payload.
  const huge = await RawPeer.connect(cluster.scc.productionPort);
  await huge.write(helloBytes('ingestClient', DS, RS));
  await huge.next('credit');
  const header = Buffer.alloc(16);
  header.write('HDWP', 0, 'latin1');
  header.writeUInt8(1, 4);
  header.writeUInt8(2, 5);
  header.writeUInt32BE(0x7fff_ffff, 8);
  await huge.write(header);
  const e3 = await huge.errorAndClose();
  assert.is(e3.code, 1);
  assert.match(e3.message, /ERR_HDWP_TOO_LARGE/);

  // Half a records frame, then the connection is gone.
  const cut = await RawPeer.connect(cluster.scc.productionPort);
  await cut.write(helloBytes('ingestClient', DS, RS));
  await cut.next('credit');
  const whole = encodeRecords(batch(B + 502), RS, recordsOf(50, B + 502));
  await cut.write(whole.subarray(0, Math.floor(whole.length / 2)));
  cut.socket.destroy();
  await cut.closed;

  // The stream that behaved finishes its batch as if nothing happened.
  await good.sendRecords(id, records.subarray(300 * RS));
  const ack = await good.sendEob(id, 900);
  acked.set(B + 500, { id, records, closingHash: Buffer.from(ack.closingHash) });
  await good.close();
  await assertReplicated(cluster, acked);
  for (const n of [B + 501, B + 502]) for (const sn of cluster.sns) assert.is(segmentBytes(sn, DS, batch(n)), undefined, 'nothing of the broken streams was committed');
  const health = await getJson<{ status: string }>(`http://127.0.0.1:${cluster.scc.observabilityPort}/health`);
  assert.is(health.status, 'ok');
  assert.is(cluster.scc.proc.proc.exitCode, null, 'the SCC is still running');
});

ingest('a stream for another dataset and a refused batch leave everything stored untouched', async () => {
  const other = await connect(cluster, 'ticks');
  const id = batch(600);
  await other.sendRecords(id, recordsOf(10, 600));
  const refused = (await other.sendEob(id, 11).catch((x: unknown) => x)) as HdwpStreamError;
  assert.instance(refused, HdwpStreamError);
  assert.match(refused.message, /its eob counts 11 records, 10 arrived/);
  const ok = await other.sendEob(batch(601), 0);
  assert.is(ok.recordCount, 0);
  await other.close();
  for (const sn of cluster.sns) assert.equal(filesOn(sn, 'ticks').segments, [`${batch(601).toHex()}.hdseg`]);
  await assertReplicated(cluster, acked);
});
ingest.run();
