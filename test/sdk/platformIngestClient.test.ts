/**
 * PlatformIngestClient against a real SCC and two real Storage Nodes (hd run processes), plus the
 * reference's send rules that need no cluster.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HashChain } from '../../engine-rs/hashChain';
import { segmentFileName, verifySegment } from '../../engine-rs/segment';
import { readSegment } from '../../engine-rs/segmentReader';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort } from '../support/hdProcess';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const RS = 64;

function flow(i: number): Record<string, string> {
  return { ts: String(1_700_000_000 + (i % 60)), src_ip: `10.0.${(i >> 8) & 255}.${i & 255}`, dst_ip: '192.168.1.1', src_port: String(1024 + (i % 50000)), dst_port: '443', proto: i % 3 ? 'tcp' : 'udp', packets: String(i), bytes: String(i * 100), duration_ms: String(i % 1000) };
}

/** Finds the segment of `batch` under a Storage Node's data directory. */
function findSegment(dir: string, name: string): string | undefined {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name === name) return path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name);
  }
  return undefined;
}

const rules = suite('PlatformIngestClient send rules (no cluster)');
rules('every send is false with no SCC targets; empty record is false; errors say why', async () => {
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  const id = c.generateBatchIdNumber(1);
  assert.is(await c.streamInsert(id, c.convertRecordToBinary(flow(1))), false);
  assert.match(String(c.lastError?.message), /no SCC targets/);
  assert.is(await c.sendEob(id), false);
  assert.is(await c.sendBbn(id), false);
  assert.is(await c.streamInsert(id, c.convertRecordToBinary(flow(1)), true), false);
  assert.is(await c.sendEob(id, true), false);
  c.setSccTargets(['127.0.0.1:1']);
  assert.is(await c.streamInsert(id, Buffer.alloc(0)), false);
  assert.match(String(c.lastError?.message), /empty record/);
  assert.is(await c.streamInsert(id, Buffer.alloc(RS + 1)), false);
  assert.match(String(c.lastError?.message), /whole 64-byte records/);
  assert.match(c.getMetrics(), /^records_ingested 0$/m);
  await c.stop();
});
rules('an unreachable SCC: false with the address in the error, nothing counted', async () => {
  const port = await freePort();
  const c = new PlatformIngestClient('', '', { connectTimeoutMs: 2000 });
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`127.0.0.1:${port}`]);
  assert.is(await c.streamInsert(c.generateBatchIdNumber(1), c.convertRecordToBinary(flow(1))), false);
  assert.match(String(c.lastError?.message), new RegExp(`SCC 127\\.0\\.0\\.1:${port}`));
  assert.match(c.getMetrics(), /^bytes_ingested 0$/m);
  await c.stop();
});
rules('bad targets and schemas are refused with the entry named', () => {
  const c = new PlatformIngestClient();
  assert.throws(() => c.setSccTargets(['host:99999']), /SCC target 0 port must be a TCP port/);
  assert.throws(() => c.setSccTargets([{ host: '', port: 1 }]), /SCC target 0 must be/);
  assert.throws(() => c.loadDatasetSchema('{"id":"x"}'), /record_size/);
  assert.throws(() => c.addControlHeader('bad header', 'v'), /not an HTTP header name/);
  assert.is(c.convertRecordToBinary({ ts: '1' }).length, 0, 'no schema: empty buffer');
  assert.is(c.appendRecordToArrow({ ts: '1' }), false);
  assert.is(c.flushArrowBatch(), null);
});
rules('appendRecordToArrow / flushArrowBatch build a record batch in the schema types', () => {
  const c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  for (let i = 0; i < 5; i++) assert.ok(c.appendRecordToArrow(flow(i)));
  const batch = c.flushArrowBatch();
  assert.ok(batch);
  assert.is(batch?.numRows, 5);
  assert.is(String(batch?.getChild('src_ip')?.get(3)), '10.0.0.3');
  assert.is(String(batch?.getChild('proto')?.get(0)), 'udp');
  assert.is(String(batch?.getChild('proto')?.get(1)), 'tcp');
  assert.is(c.flushArrowBatch(), null, 'a flush empties the buffer');
  assert.equal(JSON.parse(c.getHealthStatus()).status, 'ok');
});
rules.run();

const real = suite('PlatformIngestClient → real SCC → two real Storage Nodes');
let cluster: Cluster;
real.before(async () => {
  cluster = await startCluster({ recordSize: RS });
});
real.after(async () => {
  await cluster?.stop();
});
real('records, eob and counters: the batch is durable and identical on both replicas', async () => {
  await using c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const id = c.generateBatchIdTime(1_700_000_000, 1_700_000_030);
  assert.is(id.timeStart, 1_699_999_980, 'the schema interval (60 s) floors the start');
  const one = c.convertRecordToBinary(flow(0));
  const many = Array.from({ length: 999 }, (_, i) => c.convertRecordToBinary(flow(i + 1)));
  assert.ok(await c.streamInsert(id, one), String(c.lastError));
  assert.ok(await c.streamInsert(id, many), String(c.lastError));
  assert.ok(await c.sendEob(id), String(c.lastError));
  const metrics = c.getMetrics();
  assert.match(metrics, /^records_ingested 1000$/m);
  assert.match(metrics, new RegExp(`^bytes_ingested ${1000 * RS}$`, 'm'));

  const all = Buffer.concat([one, ...many]);
  const chain = new HashChain(id, { recordSize: RS });
  await chain.update(all);
  const want = chain.finish().closingHash;
  for (const sn of cluster.sns) {
    const file = findSegment(sn.dir, segmentFileName(id));
    assert.ok(file, `${sn.name} holds the segment`);
    const v = await verifySegment(file as string);
    assert.ok(v.ok, `${sn.name}: ${JSON.stringify(v)}`);
    assert.ok((await readSegment(file as string)).equals(all), `${sn.name} holds the same bytes`);
    if (v.ok) assert.ok(Buffer.from(v.closingHash).equals(want), 'closing hash is the chain over the records');
  }
});
real('broadcast is not counted; bbn discards the batch; a refused eob is false with the reason', async () => {
  await using c = new PlatformIngestClient();
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const a = c.generateBatchIdString('broadcast-batch');
  assert.ok(await c.streamInsert(a, c.convertRecordToBinary(flow(7)), true));
  assert.ok(await c.sendEob(a, true));
  assert.match(c.getMetrics(), /^records_ingested 0$/m, 'the broadcast path is not counted');

  const b = c.generateBatchIdString('discarded-batch');
  assert.ok(await c.streamInsert(b, c.convertRecordToBinary(flow(8))));
  assert.ok(await c.sendBbn(b));
  for (const sn of cluster.sns) assert.is(findSegment(sn.dir, segmentFileName(b)), undefined, 'no segment for a discarded batch');
  assert.match(c.getMetrics(), /^records_ingested 1$/m);
});
real.run();

const kept = suite('PlatformIngestClient: records kept for a re-send are bounded (maxUnackedBytes)');
kept('past the limit streamInsert is false with the limit named, and sends nothing; a failed send keeps nothing', async () => {
  const dead = await freePort();
  await using c = new PlatformIngestClient('', '', { maxUnackedBytes: 1000, connectTimeoutMs: 2000 });
  c.loadDatasetSchema(schemaJson);
  c.setSccTargets([`127.0.0.1:${dead}`]);
  const id = c.generateBatchIdString('too-big');
  const twenty = Buffer.concat(Array.from({ length: 20 }, (_, i) => c.convertRecordToBinary(flow(i))));
  assert.is(await c.streamInsert(id, twenty), false);
  assert.match(String(c.lastError), /refused 1280 bytes of records: batches not yet acknowledged already keep 0 bytes .*maxUnackedBytes=1000/);
  assert.is(c.unacknowledgedBytes, 0);
  // Within the limit, but the SCC is unreachable: false, and the records are not kept.
  assert.is(await c.streamInsert(id, twenty.subarray(0, 10 * 64)), false);
  assert.match(String(c.lastError), new RegExp(`SCC 127\\.0\\.0\\.1:${dead}`));
  assert.is(c.unacknowledgedBytes, 0, 'records of a failed call are not part of the batch');
});
kept.run();
