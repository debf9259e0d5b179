/**
 * Direct I/O devices (`io: "direct"`, docs/storage-node.md "Direct I/O"): validated at the edge, a
 * node on one stores a batch over HDWP and serves the segment byte-for-byte as a buffered write
 * makes it, and a file system that refuses O_DIRECT is written buffered and said once.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { directIoSupported, generateBatchIdNumber, SegmentWriter, verifySegment } from '../../../engine-rs/index';
import { parseStorageNodeConfig, withDevices } from '../../../nodes/storageNode/config';
import { StorageNode } from '../../../nodes/storageNode/node';
import { connect, DS, R, records, sendBatch, startNode, storeBatches } from './ingestKit';
import { issues, mountRamfs, ramfsNode } from './ioKit';

const config = suite('direct I/O: config');
config('io defaults to buffered, takes direct, and refuses anything else naming the key', () => {
  const c = parseStorageNodeConfig(
    { node_name: 'sn', production_port: 6987, storage_devices: [{ name: 'a', address: 'a', type: 'nvme', io: 'direct' }, { name: 'b', address: 'b', type: 'ssd' }] },
    { baseDir: '/srv' },
  );
  assert.equal(
    c.storageDevices.map((d) => [d.name, d.io]),
    [
      ['a', 'direct'],
      ['b', 'buffered'],
    ],
  );
  const dev = (io: unknown): Record<string, unknown> => ({ storage_devices: [{ name: 'a', address: 'a', type: 'nvme', io }] });
  assert.equal(issues(dev('direkt')), ["storage_devices[0].io: must be 'buffered' (through the page cache), 'direct' (O_DIRECT) or 'uring' (O_DIRECT through io_uring), got 'direkt' (did you mean 'direct'?)"]);
  assert.match(issues(dev(1)).join(), /^storage_devices\[0\]\.io: must be 'buffered' .* got number 1$/);
  assert.match(issues(dev(null)).join(), /^storage_devices\[0\]\.io: .* got null$/);
  assert.match(issues({ storage_devices: [{ name: 'a', address: 'a', type: 'nvme', i0: 'direct' }] }).join(), /storage_devices\[0\]\.i0: unknown key \(did you mean 'io'\?\); a device has name, address, type and io/);
  // The DMS's devices go through the same checks.
  const base = parseStorageNodeConfig({ node_name: 'sn', production_port: 6987 }, { baseDir: '/srv' });
  assert.throws(() => withDevices(base, [{ name: 'a', address: 'a', type: 'nvme', io: 'odirect' }], "the DMS's devices"), /devices\[0\]\.io: must be 'buffered'/);
  assert.is(withDevices(base, [{ name: 'a', address: 'a', type: 'nvme', io: 'direct' }], 'x').storageDevices[0].io, 'direct');
});
config.run();

const node = suite('direct I/O: a Storage Node');
node('a node on a direct device stores a batch over HDWP and serves the same bytes a buffered write makes', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sndirect-'));
  if (!directIoSupported(dir)) {
    console.warn(`${os.tmpdir()} refuses O_DIRECT: the direct path is not exercised here (the fallback test below covers it)`);
  }
  const sn = await startNode(dir, { nodeName: 'sn-direct', devices: [{ name: 'd0', address: 'd0', type: 'nvme', io: 'direct' }] });
  const obsPort = sn.obsPort;
  try {
    const c = await connect(sn.port);
    // 5.2 MB: more than one 4 MiB direct window, and an unaligned tail.
    const id = generateBatchIdNumber(7n);
    const data = records(130_001, 4);
    const { hash, acked } = await sendBatch(c, id, data);
    assert.ok(acked.equals(hash));
    await c.close();

    const res = await fetch(`http://127.0.0.1:${obsPort}/v1/segment?dataset=${DS}&batch_id=${id.toHex()}`);
    assert.is(res.status, 200);
    const served = Buffer.from(await res.arrayBuffer());
    // The same batch written through the page cache here.
    const ref = path.join(dir, 'ref');
    mkdirSync(ref);
    const w = SegmentWriter.create({ dir: ref, datasetId: DS, batchId: id, recordSize: R, blockSize: 16, algorithm: 'sha256', io: 'buffered' });
    await w.append(data);
    const s = await w.finish(hash);
    assert.ok(served.equals(readFileSync(s.path)), 'served segment differs from the buffered one');
    const v = await verifySegment(path.join(dir, 'd0', DS, `${id.toHex()}.hdseg`));
    assert.ok(v.ok && v.records === 130_001);

    const health = (await (await fetch(`http://127.0.0.1:${obsPort}/health`)).json()) as { devices: { list: { name: string; io: string; io_configured: string }[] } };
    const d0 = health.devices.list.find((d) => d.name === 'd0');
    assert.is(d0?.io_configured, 'direct');
    assert.is(d0?.io, directIoSupported(dir) ? 'direct' : 'buffered');
  } finally {
    await sn.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

node('a device whose file system refuses O_DIRECT is written buffered, said once in the log and in /health', async () => {
  const ram = ramfsNode('snramfs', 'sn-ram', 'direct');
  if (!ram) return;
  const { dev, logs, node: n } = ram;
  try {
    const store = await n.start();
    const refusals = (): string[] => logs.filter((l) => l.includes('refuses O_DIRECT'));
    assert.equal(refusals(), [`storage node 'sn-ram': device 'ram' (${dev}) is configured for io 'direct' but its file system refuses O_DIRECT; its segments are written buffered (through the page cache)`]);
    assert.match(n.startupLine(), /devices \(round_robin\): ram \(dir, .*, buffered I\/O: O_DIRECT refused\)/);
    const acks = await storeBatches(store, [1n, 2n], 1000);
    assert.equal(
      acks.map((a) => (a.ok ? true : a.message)),
      [true, true],
    );
    assert.is(refusals().length, 1, 'said once, not per batch');
    const a = n.observabilityAddress;
    const health = (await (await fetch(`http://${a?.host}:${a?.port}/health`)).json()) as { devices: { list: { io: string; io_configured: string }[] } };
    assert.equal(
      health.devices.list.map((d) => [d.io, d.io_configured]),
      [['buffered', 'direct']],
    );
  } finally {
    await ram.close();
  }
});
node('a writer refused O_DIRECT after start (a dataset directory on another mount) turns the device buffered, said once', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-snramfs2-'));
  const dev = path.join(root, 'disk');
  mkdirSync(path.join(dev, DS), { recursive: true });
  if (!directIoSupported(root) || !mountRamfs(path.join(dev, DS))) {
    console.warn('needs O_DIRECT in the temp dir and root to mount a ramfs: skipped');
    rmSync(root, { recursive: true, force: true });
    return;
  }
  const logs: string[] = [];
  const cfg = parseStorageNodeConfig(
    { node_name: 'sn-mixed', production_port: 6987, production_ip: '127.0.0.1', observability_port: 0, reserve_bytes: 0, storage_devices: [{ name: 'disk', address: dev, type: 'ssd', io: 'direct' }] },
    { baseDir: root },
  );
  const n = new StorageNode({ config: cfg, algorithm: 'sha512', blockSize: 8, log: (l) => logs.push(l) });
  try {
    const store = await n.start();
    assert.match(n.startupLine(), /disk \(ssd, .*, direct I\/O\)/);
    const acks = await storeBatches(store, [1n, 2n, 3n], 10);
    assert.equal(
      acks.map((a) => a.ok),
      [true, true, true],
    );
    assert.is(logs.filter((l) => l.includes(`device 'disk' (${dev}) is configured for io 'direct' but its file system refuses O_DIRECT`)).length, 1);
    assert.match(n.startupLine(), /disk \(ssd, .*, buffered I\/O: O_DIRECT refused\)/);
  } finally {
    await n.stop();
    spawnSync('umount', [path.join(dev, DS)]);
    rmSync(root, { recursive: true, force: true });
  }
});
node.run();
