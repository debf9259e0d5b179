/**
 * Reliability issue #15, item 1: an acknowledged batch is never partial. An SCC and two Storage
 * Nodes as real `hd run` processes; ingest clients (PlatformIngestClient) send batches in several
 * calls while the SCC is killed with SIGKILL and restarted. A batch whose `sendEob` resolved true
 * must be stored whole, as sent, on both Storage Nodes (segment chain verified, bytes compared):
 * the client re-sends a batch whole when its stream was replaced, and the eob carries the record
 * count and batch digest of everything sent, which an SCC holding anything else refuses (error 14).
 *
 * The randomized part prints its seed; rerun one with HD_SCC_RESTART_SEED=<seed> (and
 * HD_SCC_RESTART_TRIALS=<n>, default 8).
 */
import net from 'node:net';
import path from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchDigest } from '../../engine-rs/hashChain';
import { encodeFrame, encodeRecords, FrameDecoder, HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwp';
import type { Frame } from '../../engine-rs/hdwpFrame';
import { segmentFileName, verifySegment } from '../../engine-rs/segment';
import { readSegment } from '../../engine-rs/segmentReader';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { mulberry32 } from '../../lib/mulberry32';
import { startCluster, type Cluster, type ClusterSn } from '../support/cluster';
import { startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { sendBatchRetrying } from '../support/sendBatchRetrying';
import { batch, filesOn, sleep, until } from './ingestKit';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const DS = 'flows';
/** The flows schema's record size. */
const RS = 64;

let cluster: Cluster;
/** The SCC process now running (the cluster's first, or a restarted one). */
let scc: HdProcess;

/** SIGKILL the SCC (a crash) and start it again on the same ports and replicas. */
async function killScc(): Promise<void> {
  await scc.kill9();
}
async function startScc(): Promise<void> {
  const s = cluster.scc;
  scc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: cluster.host,
    PRODUCTION_PORT: String(s.productionPort),
    COMMAND_PORT: String(s.commandPort),
    OBSERVABILITY_PORT: String(s.observabilityPort),
    QUERY_GRPC_PORT: String(s.queryGrpcPort),
    RECORD_SIZE: String(RS),
    NODE_NAME: 'scc-test',
    SN_TARGETS: cluster.sns.map((sn) => `${sn.name}:${cluster.host}:${sn.commandPort}:${sn.productionPort}`).join(','),
  });
  await waitForPort(cluster.host, s.productionPort, scc);
}

/** `count` records of RS bytes that depend on `seed`. */
function records(count: number, seed: number): Buffer {
  const b = Buffer.alloc(count * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 131 + seed * 17 + (i >> 7) + (seed >> 3)) & 0xff;
  return b;
}

const segmentPath = (sn: ClusterSn, id: ReturnType<typeof batch>): string => path.join(sn.dir, 'd0', DS, segmentFileName(id));

/** The records a Storage Node holds for `id`, its segment's chain verified first (as verify_hash does); undefined when it holds none. */
async function storedOn(sn: ClusterSn, id: ReturnType<typeof batch>): Promise<Buffer | undefined> {
  const file = segmentPath(sn, id);
  if (!existsSync(file)) return undefined;
  const v = await verifySegment(file);
  if (!v.ok) {
    if (!existsSync(file)) return undefined;
    throw new Error(`${sn.name}: segment of ${id.toString()} does not verify: ${v.code} ${v.message}`);
  }
  return readSegment(file);
}

async function digestOf(buf: Buffer): Promise<Buffer> {
  const d = new BatchDigest();
  void d.update(buf);
  return d.finish();
}

const newClient = (): PlatformIngestClient => {
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  return c;
};

const setup = async (): Promise<void> => {
  cluster = await startCluster({ storageNodes: 2, recordSize: RS });
  scc = cluster.scc.proc;
};
const teardown = async (): Promise<void> => {
  if (scc !== cluster?.scc.proc) await scc?.stop();
  await cluster?.stop();
};

// ---------------------------------------------------------------------------------------------
const minimal = suite('SCC restart mid-batch (real processes): the minimal case of issue #15');
minimal.before(setup);
minimal.after(teardown);

minimal('100 records, SCC killed and restarted, 50 more and the eob: stored whole (150 on both nodes) or not acknowledged, never 50', async () => {
  const c = newClient();
  const id = batch(1500);
  const first = records(100, 1);
  const rest = records(50, 2);
  assert.ok(await c.streamInsert(id, first), String(c.lastError));
  await until(() => cluster.sns.every((sn) => filesOn(sn, DS).partials.length === 1));
  await killScc();
  await startScc();
  assert.ok(await c.streamInsert(id, rest), String(c.lastError));
  const acked = await c.sendEob(id);
  // The client re-sent the batch whole on its new stream, so the batch is acknowledged.
  assert.ok(acked, `sendEob: ${String(c.lastError)}`);
  const all = Buffer.concat([first, rest]);
  for (const sn of cluster.sns) {
    const got = await storedOn(sn, id);
    assert.ok(got, `${sn.name} holds the batch`);
    assert.is((got as Buffer).length / RS, 150, `${sn.name}: 150 records, not ${(got as Buffer).length / RS}`);
    assert.ok((got as Buffer).equals(all), `${sn.name}: exactly the records sent, in order`);
  }
  assert.is(c.unacknowledgedBytes, 0, 'an acknowledged batch releases its kept records');
  await c.stop();
});

minimal('a sender that does not re-send (the issue\'s client: the rest and the eob on a new stream) is refused with error 14 and nothing is stored', async () => {
  const id = batch(1501);
  const first = records(100, 3);
  const rest = records(50, 4);
  const a = await HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: DS, recordSize: RS });
  await a.sendRecords(id, first);
  await until(() => cluster.sns.every((sn) => filesOn(sn, DS).partials.some((p) => p.startsWith(id.toHex()))));
  await killScc();
  await a.closed;
  await startScc();
  const b = await HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: DS, recordSize: RS });
  await b.sendRecords(id, rest);
  const err = await b.sendEob(id, 150, undefined, await digestOf(Buffer.concat([first, rest]))).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(err, HdwpStreamError, 'the eob is refused');
  assert.is((err as HdwpStreamError).frameCode, HDWP_ERROR_FRAME_CODES.batchMismatch);
  assert.match((err as HdwpStreamError).message, /batch mismatch: its eob counts 150 records, 50 arrived/);
  for (const sn of cluster.sns) assert.is(await storedOn(sn, id), undefined, `${sn.name} stores nothing of it`);
  await b.close();
});
minimal.run();

// ---------------------------------------------------------------------------------------------
const check = suite('the eob check at a real SCC: count, digest, malformed payloads');
check.before(setup);
check.after(teardown);

const connect = (): Promise<HdwpClient> => HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: DS, recordSize: RS });

async function refused(p: Promise<unknown>): Promise<HdwpStreamError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(err, HdwpStreamError, 'refused');
  return err as HdwpStreamError;
}

async function nothingStored(id: ReturnType<typeof batch>): Promise<void> {
  for (const sn of cluster.sns) {
    assert.is(await storedOn(sn, id), undefined, `${sn.name} stores nothing of batch ${id.toString()}`);
  }
}

check('a count that differs from the records that arrived: error 14, nothing acknowledged or stored', async () => {
  const c = await connect();
  const id = batch(1600);
  const r = records(10, 5);
  await c.sendRecords(id, r);
  const e = await refused(c.sendEob(id, 11, undefined, await digestOf(r)));
  assert.is(e.frameCode, 14);
  assert.match(e.message, /batch mismatch: its eob counts 11 records, 10 arrived/);
  await nothingStored(id);
  await c.close();
});
check('the same count with other records (digest differs): error 14, nothing acknowledged or stored', async () => {
  const c = await connect();
  const id = batch(1601);
  await c.sendRecords(id, records(10, 6));
  const e = await refused(c.sendEob(id, 10, undefined, await digestOf(records(10, 7))));
  assert.is(e.frameCode, 14);
  assert.match(e.message, /batch mismatch: the sender's batch digest differs/);
  await nothingStored(id);
  // The stream stays open, and the matching digest is acknowledged.
  const ok = batch(1602);
  const r = records(10, 8);
  await c.sendRecords(ok, r);
  const ack = await c.sendEob(ok, 10, undefined, await digestOf(r));
  assert.is(ack.recordCount, 10);
  for (const sn of cluster.sns) assert.ok((await storedOn(sn, ok))?.equals(r), `${sn.name} holds the batch`);
  // An eob without a digest (a sender from before the field) is still checked by its count.
  const old = batch(1603);
  await c.sendRecords(old, r);
  assert.is((await c.sendEob(old, 10)).recordCount, 10);
  await c.close();
});

/** Sends hello, a records frame and `eobBytes` on a raw socket; returns every frame the SCC answered until it closed. */
async function rawSession(id: ReturnType<typeof batch>, r: Buffer, eobBytes: Buffer): Promise<Frame[]> {
  const sock = net.connect({ host: cluster.host, port: cluster.scc.productionPort });
  const decoder = new FrameDecoder();
  const frames: Frame[] = [];
  let credit = false;
  sock.on('data', (chunk: Buffer) => {
    for (const f of decoder.push(chunk)) {
      frames.push(f);
      if (f.kind === 'credit' && !credit) {
        credit = true;
        sock.write(encodeRecords(id, RS, r));
        sock.write(eobBytes);
      }
    }
  });
  sock.on('error', () => undefined);
  sock.write(encodeFrame({ kind: 'hello', version: 1, role: 'ingestClient', datasetId: DS, recordSize: RS }));
  await new Promise((resolve) => sock.once('close', resolve));
  return frames;
}

/** `eob` bytes with its digest part replaced by `tail`, checksum re-sealed. */
function eobWithTail(id: ReturnType<typeof batch>, count: number, tail: Buffer): Buffer {
  const good = encodeFrame({ kind: 'eob', batchId: id, recordCount: count, closingHash: Buffer.alloc(0) });
  const payload = Buffer.concat([good.subarray(16), tail]);
  const h = Buffer.from(good.subarray(0, 16));
  h.writeUInt32BE(payload.length, 8);
  h.writeUInt32BE(crc32c(h.subarray(0, 12), payload), 12);
  return Buffer.concat([h, payload]);
}

function crc32c(...parts: Uint8Array[]): number {
  let c = 0xffffffff;
  for (const p of parts) {
    for (const byte of p) {
      c ^= byte;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    }
  }
  return (c ^ 0xffffffff) >>> 0;
}

check('malformed eob payloads (truncated digest, oversized digest, unknown digest kind): error 1 naming the decoder code, stream closed, nothing acknowledged or stored', async () => {
  const r = records(10, 9);
  const d = await digestOf(r);
  const cases: [number, Buffer, string][] = [
    [1610, Buffer.concat([Buffer.from([1]), d.subarray(0, 31)]), 'ERR_HDWP_TRUNCATED_FIELD'],
    [1611, Buffer.concat([Buffer.from([1]), d, Buffer.from([0])]), 'ERR_HDWP_INCONSISTENT_LENGTH'],
    [1612, Buffer.concat([Buffer.from([7]), d]), 'ERR_HDWP_INVALID_VALUE'],
  ];
  for (const [n, tail, code] of cases) {
    const id = batch(n);
    const frames = await rawSession(id, r, eobWithTail(id, 10, tail));
    const kinds = frames.map((f) => f.kind).filter((k) => k !== 'credit');
    assert.equal(kinds, ['hello', 'error'], `${code}: hello and credit, then the error; no eob acknowledgement`);
    const err = frames[frames.length - 1] as Frame;
    assert.ok(err.kind === 'error' && err.code === HDWP_ERROR_FRAME_CODES.protocol && err.message.includes(code), `${code}: ${JSON.stringify(err)}`);
    await nothingStored(id);
  }
});
check.run();

// ---------------------------------------------------------------------------------------------
const random = suite('SCC killed at random moments: 0 lost and 0 phantom records among acknowledged batches');
random.before(setup);
random.after(teardown);

random('several clients, batches in several calls, one SCC kill + restart per trial', async () => {
  const seed = Number(process.env.HD_SCC_RESTART_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const trials = Number(process.env.HD_SCC_RESTART_TRIALS ?? 8);
  console.log(`sccRestartAck: seed ${seed}, ${trials} trials (HD_SCC_RESTART_SEED=${seed} to rerun)`);
  const rnd = mulberry32(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
  const CLIENTS = 3;
  const BATCHES = 3;
  let acked = 0;
  let notAcked = 0;
  /** Acknowledged batches during which a send failed (the SCC was down or the stream broke). */
  let disturbed = 0;
  const checks: { id: ReturnType<typeof batch>; sent: Buffer; where: string }[] = [];
  for (let t = 0; t < trials; t++) {
    // Every random choice is drawn before anything runs, so a seed replays the same trial.
    const plans = Array.from({ length: CLIENTS }, (_, ci) =>
      Array.from({ length: BATCHES }, (_, bi) => ({
        id: batch(100_000 + t * 100 + ci * 10 + bi),
        chunks: Array.from({ length: int(2, 5) }, (_, k) => records(int(1, 60), t * 1000 + ci * 100 + bi * 10 + k)),
        pauses: Array.from({ length: 6 }, () => int(0, 40)),
      })),
    );
    const killAt = int(0, 250);
    const downFor = int(0, 150);
    const deadline = Date.now() + 25_000;
    const runClient = async (ci: number): Promise<void> => {
      const c = newClient();
      for (const p of plans[ci] ?? []) {
        const { acked: eob, failures } = await sendBatchRetrying(c, p, deadline);
        if (eob) {
          acked++;
          if (failures > 0) disturbed++;
          checks.push({ id: p.id, sent: Buffer.concat(p.chunks), where: `trial ${t} client ${ci} batch ${p.id.toString()}` });
        } else {
          notAcked++;
          await c.sendBbn(p.id);
        }
      }
      await c.stop();
    };
    const killer = (async () => {
      await sleep(killAt);
      await killScc();
      await sleep(downFor);
      await startScc();
    })();
    await Promise.all([killer, ...Array.from({ length: CLIENTS }, (_, ci) => runClient(ci))]);
  }
  let lost = 0;
  let phantom = 0;
  const problems: string[] = [];
  for (const { id, sent, where } of checks) {
    for (const sn of cluster.sns) {
      const got = (await storedOn(sn, id)) ?? Buffer.alloc(0);
      if (got.equals(sent)) continue;
      const have = got.length / RS;
      const want = sent.length / RS;
      if (have < want) lost += want - have;
      else phantom += have - want;
      problems.push(`${where} on ${sn.name}: ${have} records stored, ${want} sent${have === want ? ' (other bytes)' : ''}`);
      if (have === want) phantom += have;
    }
  }
  console.log(`sccRestartAck: seed ${seed}: ${acked} batches acknowledged (${disturbed} of them after a failed send), ${notAcked} not; ${lost} lost, ${phantom} phantom records`);
  assert.equal(problems, [], `seed ${seed}`);
  assert.is(lost, 0);
  assert.is(phantom, 0);
  assert.ok(acked > 0, 'some batches were acknowledged');
});
random.run();
