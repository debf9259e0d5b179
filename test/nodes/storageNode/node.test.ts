import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { from, lastValueFrom } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID, generateBatchIdNumber, readSegment, segmentFileName, verifySegment } from '../../../engine-rs/index';
import type { AckResult, Chunk } from '../../../stream/chunk';
import { parseStorageNodeConfig } from '../../../nodes/storageNode/config';
import { StorageNode } from '../../../nodes/storageNode/node';
import { segmentStore } from '../../../nodes/storageNode/segmentStore';

const R = 32;
const DS = 'flows';

function records(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < b.length; i++) b[i] = (i * 13 + seed) & 0xff;
  return b;
}

function node(root: string, extra: Record<string, unknown> = {}, logs: string[] = []): StorageNode {
  const config = parseStorageNodeConfig(
    {
      node_name: 'sn-test',
      production_port: 6987,
      production_ip: '127.0.0.1',
      observability_port: 0,
      reserve_bytes: 0,
      storage_devices: [
        { name: 'fast', address: path.join(root, 'fast'), type: 'nvme' },
        { name: 'slow', address: path.join(root, 'slow'), type: 'hdd' },
      ],
      ...extra,
    },
    { baseDir: root },
  );
  return new StorageNode({ config, algorithm: 'sha512', blockSize: 8, log: (l) => logs.push(l) });
}

/** Runs batches (id → records) through the node's store via the sink; returns the acks. */
async function ingest(n: StorageNode, batches: [BatchID, Buffer][]): Promise<AckResult[]> {
  const acks: AckResult[] = [];
  const els: Chunk[] = [];
  for (const [id, d] of batches) {
    els.push({ kind: 'records', dataset: DS, batchId: id, count: d.length / R, recordSize: R, buf: d });
    els.push({ kind: 'eob', dataset: DS, batchId: id, recordCount: d.length / R, ack: (a) => acks.push(a) });
  }
  await lastValueFrom(segmentStore({ open: async () => n.store })(from(els)), { defaultValue: undefined });
  return acks;
}

async function get(n: StorageNode, p: string): Promise<{ status: number; type: string; text: string }> {
  const a = n.observabilityAddress;
  if (!a) throw new Error('not started');
  const res = await fetch(`http://${a.host}:${a.port}${p}`);
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no metric ${name}`);
  return Number(line.split(' ')[1]);
}

const lifecycle = suite('StorageNode');
lifecycle('start creates devices, serves /health and /metrics; counters move with ingest', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const logs: string[] = [];
  const n = node(root, {}, logs);
  await n.start();
  try {
    assert.ok(existsSync(path.join(root, 'fast')) && existsSync(path.join(root, 'slow')));
    assert.match(logs[0], /recovery: 0 complete segments verified \(0 batches indexed\), 0 partials discarded, 0 quarantined/);
    assert.match(logs[1], /storage node 'sn-test' ready: HDWP ingest on 127\.0\.0\.1:6987, \/health and \/metrics on http:\/\/127\.0\.0\.1:\d+; devices \(round_robin\): fast \(nvme, .*\), slow \(hdd, .*\)/);

    let h = await get(n, '/health');
    assert.is(h.status, 200);
    assert.match(h.type, /application\/json/);
    let body = JSON.parse(h.text);
    assert.is(body.status, 'ok');
    assert.is(body.node, 'sn-test');
    assert.is(body.role, 'storageNode');
    assert.equal(body.devices.list.map((d: { name: string; use: string }) => [d.name, d.use]), [
      ['fast', 'write'],
      ['slow', 'write'],
    ]);
    assert.ok(body.devices.list.every((d: { free_bytes: number }) => d.free_bytes > 0));
    assert.equal(body.batches, { open: 0, stored: 0, datasets: 0 });
    assert.is(body.recovery.done, true);

    const before = await get(n, '/metrics');
    assert.match(before.type, /text\/plain/);
    assert.is(metric(before.text, 'hd_records_ingested_total'), 0);

    const a = generateBatchIdNumber(1n);
    const b = generateBatchIdNumber(2n);
    const acks = await ingest(n, [
      [a, records(20, 1)],
      [b, records(3, 2)],
    ]);
    assert.ok(acks.every((x) => x.ok));
    // Without the OCF cache a group's lookups are the index's paths, in order; none for one not held.
    assert.equal(await n.readLocations(DS, [b, generateBatchIdNumber(9n), a]), [{ path: n.index.get(DS, b)?.path, tier: 'core' }, undefined, { path: n.index.get(DS, a)?.path, tier: 'core' }]);

    const m = (await get(n, '/metrics')).text;
    assert.is(metric(m, 'hd_records_ingested_total'), 23);
    assert.is(metric(m, 'hd_bytes_ingested_total'), 23 * R);
    assert.is(metric(m, 'hd_batches_closed_total'), 2);
    assert.is(metric(m, 'hd_batches_open'), 0);
    assert.is(metric(m, 'hd_fsync_duration_seconds_count'), 2);
    assert.match(m, /# TYPE hd_replica_lag_batches gauge/);
    assert.match(m, /process_cpu_user_seconds_total/);

    h = await get(n, '/health');
    body = JSON.parse(h.text);
    assert.equal(body.batches, { open: 0, stored: 2, datasets: 1 });

    const list = JSON.parse((await get(n, `/v1/batches?dataset=${DS}`)).text);
    assert.is(list.dataset, DS);
    assert.equal(list.batches.map((x: { batch_id: string; records: number; device: string }) => [x.batch_id, x.records, x.device]), [
      [a.toHex(), 20, 'fast'],
      [b.toHex(), 3, 'slow'],
    ]);
    assert.is(list.batches[0].closing_hash, n.index.get(DS, a)?.closingHash.toString('hex'));
    assert.equal(JSON.parse((await get(n, '/v1/batches')).text), { datasets: [{ dataset: DS, batches: 2 }] });
    assert.equal(JSON.parse((await get(n, '/v1/batches?dataset=none')).text).batches, []);
    assert.is((await get(n, '/nope')).status, 404);
  } finally {
    await n.stop();
  }
});
lifecycle('recovery after a crash: complete batches indexed, partials deleted, damaged quarantined', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const first = node(root);
  await first.start();
  const ids = [1n, 2n, 3n].map((x) => generateBatchIdNumber(x));
  const data = ids.map((_, i) => records(17 + i, i));
  await ingest(
    first,
    ids.map((id, i) => [id, data[i]]),
  );
  const paths = ids.map((id) => first.index.get(DS, id)?.path as string);
  await first.stop();

  // The crash: a batch that never committed left its partial file; batch 3's records got damaged.
  const dir = path.dirname(paths[0]);
  const unacked = generateBatchIdNumber(99n);
  copyFileSync(paths[0], path.join(dir, `${segmentFileName(unacked)}.partial`));
  const bytes = readFileSync(paths[2]);
  bytes[300] ^= 0x40;
  writeFileSync(paths[2], bytes);

  const logs: string[] = [];
  const second = node(root, {}, logs);
  await second.start();
  try {
    const r = second.recoverySummary;
    assert.ok(r);
    assert.is(r.complete, 2);
    assert.equal(r.discarded.map((p) => path.basename(p)), [`${segmentFileName(unacked)}.partial`]);
    assert.is(r.quarantined.length, 1);
    assert.is(r.quarantined[0].path, path.join(path.dirname(paths[2]), 'quarantine', path.basename(paths[2])));
    assert.match(r.quarantined[0].code, /^ERR_SEGMENT_(BLOCK_CHECKSUM|CHAIN)$/);
    assert.match(logs[0], /2 complete segments verified \(2 batches indexed\), 1 partial discarded, 1 quarantined .* quarantined: .*ERR_SEGMENT_/);
    for (const i of [0, 1]) {
      const e = second.index.get(DS, ids[i]);
      assert.ok(e && e.records === 17 + i);
      assert.equal(await readSegment(e.path), data[i]);
    }
    assert.not.ok(second.index.has(DS, ids[2]), 'a damaged segment is never served');
    assert.not.ok(existsSync(paths[2]));
    assert.ok(readdirSync(path.join(path.dirname(paths[2]), 'quarantine')).length === 1);
    const h = JSON.parse((await get(second, '/health')).text);
    assert.is(h.status, 'degraded');
    assert.is(h.recovery.quarantined.length, 1);
    // The batch that was lost to damage can be ingested again.
    assert.ok((await ingest(second, [[ids[2], data[2]]]))[0].ok);
    assert.ok((await verifySegment(second.index.get(DS, ids[2])?.path as string)).ok);
  } finally {
    await second.stop();
  }
});
lifecycle('before recovery has run: /health says initializing (503) and /v1/batches refuses (503)', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const n = node(root);
  const { host, port } = await n.observability.listen();
  try {
    const h = await fetch(`http://${host}:${port}/health`);
    assert.is(h.status, 503);
    const body = (await h.json()) as { status: string; recovery: { done: boolean } };
    assert.is(body.status, 'initializing');
    assert.is(body.recovery.done, false);
    const b = await fetch(`http://${host}:${port}/v1/batches?dataset=${DS}`);
    assert.is(b.status, 503);
    assert.match(await b.text(), /recovery has not finished/);
  } finally {
    await n.observability.close();
  }
});
lifecycle('stop aborts open batches', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const n = node(root, { storage_devices: [{ name: 'only', address: path.join(root, 'only'), type: 'dir' }] });
  await n.start();
  const id = generateBatchIdNumber(5n);
  await n.store.append({ dataset: DS, batchId: id, recordSize: R, count: 2, buf: records(2, 0) });
  assert.ok(existsSync(path.join(root, 'only', DS, `${segmentFileName(id)}.partial`)));
  assert.is(await n.stop(), 2);
  assert.not.ok(existsSync(path.join(root, 'only', DS, `${segmentFileName(id)}.partial`)));
});
lifecycle('a quarantine-free restart finds the same batches (recovery is idempotent)', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const a = node(root);
  await a.start();
  await ingest(a, [[generateBatchIdNumber(7n), records(4, 4)]]);
  await a.stop();
  for (let i = 0; i < 2; i++) {
    const b = node(root);
    await b.start();
    assert.is(b.index.size, 1);
    assert.equal(b.recoverySummary?.discarded, []);
    await b.stop();
  }
});
lifecycle.run();

const ocf = suite('StorageNode with OCF');
ocf('segments are written to core devices; reads fill the cache device, then hit it', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const n = node(root, { use_ocf: true, ocf_cache_devices: ['fast'], ocf_core_devices: ['slow'] });
  await n.start();
  try {
    const id = generateBatchIdNumber(3n);
    const d = records(12, 3);
    await ingest(n, [[id, d]]);
    const e = n.index.get(DS, id);
    assert.ok(e && e.device === 'slow');
    assert.not.ok(existsSync(path.join(root, 'fast', DS)), 'nothing is written to the cache at ingest');
    const first = await n.readLocation(DS, id);
    assert.is(first?.tier, 'cache-fill');
    assert.is(first?.path, path.join(root, 'fast', DS, segmentFileName(id)));
    assert.equal(await readSegment(first?.path as string), d);
    const second = await n.readLocation(DS, id);
    assert.is(second?.tier, 'cache-hit');
    // A group's lookups: each id's location in order, through the cache; none for one not held.
    assert.equal(await n.readLocations(DS, [generateBatchIdNumber(4n), id, id]), [undefined, second, second]);
    assert.is(await n.readLocation(DS, generateBatchIdNumber(4n)), undefined);
    const h = JSON.parse((await get(n, '/health')).text);
    // The second read, and the two of readLocations above.
    assert.equal(h.ocf, { hits: 3, fills: 1, bypasses: 0 });
    assert.equal(h.devices.list.map((x: { name: string; use: string }) => [x.name, x.use]), [
      ['slow', 'write'],
      ['fast', 'cache'],
    ]);
  } finally {
    await n.stop();
  }
  // The cache holds copies only: a restart does not index them as batches of their own.
  const again = node(root, { use_ocf: true, ocf_cache_devices: ['fast'], ocf_core_devices: ['slow'] });
  await again.start();
  assert.is(again.index.size, 1);
  assert.is(again.recoverySummary?.complete, 2);
  await again.stop();
});
ocf('a full cache device is bypassed: the core copy is read', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sn-'));
  const config = parseStorageNodeConfig({
    node_name: 'sn-full',
    production_port: 6987,
    production_ip: '127.0.0.1',
    observability_port: 0,
    reserve_bytes: 1000,
    use_ocf: true,
    ocf_cache_devices: ['fast'],
    ocf_core_devices: ['slow'],
    storage_devices: [
      { name: 'fast', address: path.join(root, 'fast'), type: 'nvme' },
      { name: 'slow', address: path.join(root, 'slow'), type: 'hdd' },
    ],
  });
  // The cache device reports less than the reserve free, the core device plenty.
  const n = new StorageNode({ config, algorithm: 'sha512', blockSize: 8, log: () => undefined, freeSpace: async (dir) => (dir.endsWith('fast') ? 999 : 1e12) });
  await n.start();
  try {
    const id = generateBatchIdNumber(8n);
    await ingest(n, [[id, records(2, 1)]]);
    const e = n.index.get(DS, id);
    assert.equal(await n.readLocation(DS, id), { path: e?.path, tier: 'core' });
    assert.is(n.cache?.bypasses, 1);
    assert.not.ok(existsSync(path.join(root, 'fast', DS)));
  } finally {
    await n.stop();
  }
});
ocf.run();
