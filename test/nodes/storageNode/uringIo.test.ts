/**
 * io_uring devices (`io: "uring"`, docs/storage-node.md "Direct I/O"): validated at the edge, a node
 * on one stores batches over HDWP that read back and verify byte for byte as a buffered write makes
 * them, /health says the mode in effect, and a refusal (a file system without O_DIRECT here; the
 * kernel's refusal of a ring in the engine-rs tests) steps the device down to direct or buffered,
 * said once per step.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { directIoSupported, generateBatchIdNumber, SegmentWriter, uringIoRefusal, verifySegment } from '../../../engine-rs/index';
import { readSegment } from '../../../engine-rs/segmentReader';
import { parseStorageNodeConfig, withDevices } from '../../../nodes/storageNode/config';
import { ioRefusedLine, StorageDevice } from '../../../nodes/storageNode/devices';
import { closing, connect, DS, R, records, sendBatch, startNode, storeBatches } from './ingestKit';
import { issues, ramfsNode } from './ioKit';

/** The mode a `uring` device gets in `dir` on this machine. */
function expectedIo(dir: string): string {
  if (uringIoRefusal(dir) === null) return 'uring';
  return directIoSupported(dir) ? 'direct' : 'buffered';
}

const config = suite('uring I/O: config and fallback steps');
config('io takes uring, from config.json and from the DMS, and a near miss is named', () => {
  const c = parseStorageNodeConfig({ node_name: 'sn', production_port: 6987, storage_devices: [{ name: 'a', address: 'a', type: 'nvme', io: 'uring' }] }, { baseDir: '/srv' });
  assert.is(c.storageDevices[0].io, 'uring');
  assert.equal(issues({ storage_devices: [{ name: 'a', address: 'a', type: 'nvme', io: 'urng' }] }), [
    "storage_devices[0].io: must be 'buffered' (through the page cache), 'direct' (O_DIRECT) or 'uring' (O_DIRECT through io_uring), got 'urng' (did you mean 'uring'?)",
  ]);
  const base = parseStorageNodeConfig({ node_name: 'sn', production_port: 6987 }, { baseDir: '/srv' });
  assert.is(withDevices(base, [{ name: 'a', address: 'a', type: 'nvme', io: 'uring' }], 'x').storageDevices[0].io, 'uring');
});
config('a writer refused a ring steps a uring device down to direct, then a refused O_DIRECT to buffered, each said once', () => {
  const d = new StorageDevice('n0', 'nvme', '/srv/n0', async () => 1 << 30, 'uring');
  assert.is(d.ioInEffect, 'uring');
  assert.not.ok(d.noteWriterIo('uring'));
  assert.ok(d.noteWriterIo('direct'));
  assert.not.ok(d.noteWriterIo('direct'), 'said once');
  assert.is(d.ioInEffect, 'direct');
  assert.is(d.ioRefusedNote, 'io_uring refused');
  assert.is(ioRefusedLine('sn', d), "storage node 'sn': device 'n0' (/srv/n0) is configured for io 'uring' but the kernel would not set up an io_uring for a segment writer; its segments are written direct (O_DIRECT without io_uring)");
  assert.ok(d.noteWriterIo('buffered'));
  assert.is(d.ioInEffect, 'buffered');
  assert.is(d.ioRefusedNote, 'io_uring and O_DIRECT refused');
  assert.match(ioRefusedLine('sn', d), /refuses O_DIRECT, which io_uring writes need; its segments are written buffered \(through the page cache\)$/);
});
config.run();

const node = suite('uring I/O: a Storage Node');
node('a node on a uring device stores batches over HDWP that read back, verify and match a buffered write', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-snuring-'));
  const want = expectedIo(dir);
  if (want !== 'uring') console.warn(`io_uring refused in ${os.tmpdir()} (${uringIoRefusal(dir)}): the node writes ${want} here`);
  const sn = await startNode(dir, { nodeName: 'sn-uring', devices: [{ name: 'u0', address: 'u0', type: 'nvme', io: 'uring' }] });
  const obsPort = sn.obsPort;
  try {
    const c = await connect(sn.port);
    // 10.4 MB: more 1 MiB blocks than the ring keeps in flight, and an unaligned tail; then a small batch.
    const batches = [
      { id: generateBatchIdNumber(11n), data: records(260_001, 5) },
      { id: generateBatchIdNumber(12n), data: records(3, 6) },
    ];
    for (const { id, data } of batches) {
      const { hash, acked } = await sendBatch(c, id, data);
      assert.ok(acked.equals(hash), 'eob acknowledged with the closing hash');
    }
    await c.close();

    const ref = path.join(dir, 'ref');
    mkdirSync(ref);
    for (const { id, data } of batches) {
      const stored = path.join(dir, 'u0', DS, `${id.toHex()}.hdseg`);
      const v = await verifySegment(stored);
      assert.ok(v.ok && v.records === data.length / R, JSON.stringify(v));
      assert.ok((await readSegment(stored)).equals(data), 'records read back');
      const res = await fetch(`http://127.0.0.1:${obsPort}/v1/segment?dataset=${DS}&batch_id=${id.toHex()}`);
      assert.is(res.status, 200);
      const served = Buffer.from(await res.arrayBuffer());
      const w = SegmentWriter.create({ dir: ref, datasetId: DS, batchId: id, recordSize: R, blockSize: 16, algorithm: 'sha256', io: 'buffered' });
      await w.append(data);
      const s = await w.finish(await closing(id, data));
      assert.ok(served.equals(readFileSync(s.path)), 'served segment differs from the buffered one');
    }

    const health = (await (await fetch(`http://127.0.0.1:${obsPort}/health`)).json()) as { devices: { list: { name: string; io: string; io_configured: string; io_refused?: string }[] } };
    const u0 = health.devices.list.find((d) => d.name === 'u0');
    assert.is(u0?.io_configured, 'uring');
    assert.is(u0?.io, want);
    assert.is(u0?.io_refused, want === 'uring' ? undefined : (uringIoRefusal(dir) ?? undefined));
  } finally {
    await sn.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

node('a uring device on a file system that refuses O_DIRECT is written buffered, said once in the log, the start-up line and /health', async () => {
  const ram = ramfsNode('snuringram', 'sn-uram', 'uring');
  if (!ram) return;
  const { dev, logs, node: n } = ram;
  try {
    const store = await n.start();
    const why = uringIoRefusal(dev);
    assert.ok(why !== null);
    const refusals = (): string[] => logs.filter((l) => l.includes("configured for io 'uring'"));
    assert.equal(refusals(), [`storage node 'sn-uram': device 'ram' (${dev}) is configured for io 'uring' but ${why}; its segments are written buffered (through the page cache)`]);
    assert.match(n.startupLine(), /ram \(dir, .*, buffered I\/O: io_uring and O_DIRECT refused\)/);
    const acks = await storeBatches(store, [1n, 2n], 1000);
    assert.equal(
      acks.map((a) => (a.ok ? true : a.message)),
      [true, true],
    );
    for (const k of [1n, 2n]) {
      // verifySegment reads and closes the file (a SegmentReader would keep the ramfs busy until collected).
      const v = await verifySegment(path.join(dev, DS, `${generateBatchIdNumber(k).toHex()}.hdseg`));
      assert.ok(v.ok && v.records === 1000);
    }
    assert.is(refusals().length, 1, 'said once, not per batch');
    const a = n.observabilityAddress;
    const health = (await (await fetch(`http://${a?.host}:${a?.port}/health`)).json()) as { devices: { list: { io: string; io_configured: string; io_refused?: string }[] } };
    assert.equal(
      health.devices.list.map((d) => [d.io, d.io_configured, d.io_refused]),
      [['buffered', 'uring', why]],
    );
  } finally {
    await ram.close();
  }
});
node.run();
