/**
 * The Storage Node pipeline as it runs: pipelines/storage-node.yaml loaded with a config.json the
 * way `hd run --config` passes it, fed by an HdwpClient over a real socket.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, readSegment, verifySegment } from '../../../engine-rs/index';
import { HdwpStreamError } from '../../../hdwp/hdwpStreamError';
import { closing, connect, DS, R, records, startNode, type RunningNode } from './ingestKit';

/** A node in a new temp directory, or again in `dir`. */
function start(dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sningest-'))): Promise<RunningNode> {
  return startNode(dir);
}

const ingest = suite('storage-node.yaml over a socket');
ingest('ingest, closing hash checked, bbn, idempotent eob; segments byte-identical and verified', async () => {
  const sn = await start();
  try {
    const c = await connect(sn.port);
    const a = generateBatchIdNumber(1n);
    const da = records(100, 1);
    const ha = await closing(a, da);
    await c.sendRecords(a, da.subarray(0, 33 * R));
    await c.sendRecords(a, da.subarray(33 * R));
    const ack = await c.sendEob(a, 100, ha);
    assert.ok(Buffer.from(ack.closingHash).equals(ha));

    // A closing hash that does not match: refused with code 10, the stream goes on.
    const b = generateBatchIdNumber(2n);
    await c.sendRecords(b, records(5, 2));
    const err = (await c.sendEob(b, 5, Buffer.alloc(32, 1)).catch((x: unknown) => x)) as HdwpStreamError;
    assert.instance(err, HdwpStreamError);
    assert.is(err.frameCode, 10);
    assert.ok(err.batchId?.equals(b));

    // A bad batch notice discards; an eob for a stored batch is answered with its closing hash.
    const d = generateBatchIdNumber(3n);
    await c.sendRecords(d, records(4, 3));
    await c.sendBbn(d, 'source went away');
    const again = await c.sendEob(a, 100);
    assert.ok(Buffer.from(again.closingHash).equals(ha));

    const files = readdirSync(path.join(sn.dir, 'd0', DS)).sort();
    assert.equal(files, [`${a.toHex()}.hdseg`]);
    const seg = path.join(sn.dir, 'd0', DS, files[0]);
    assert.equal(await readSegment(seg), da);
    const v = await verifySegment(seg);
    assert.ok(v.ok && v.closingHash.equals(ha));

    const health = (await (await fetch(`http://127.0.0.1:${sn.obsPort}/health`)).json()) as { status: string; batches: { stored: number } };
    assert.is(health.status, 'ok');
    assert.is(health.batches.stored, 1);
    const metrics = await (await fetch(`http://127.0.0.1:${sn.obsPort}/metrics`)).text();
    assert.match(metrics, /^hd_records_ingested_total 100$/m);
    assert.match(metrics, /^hd_batches_discarded_total\{reason="refused"\} 1$/m);
    assert.match(metrics, /^hd_batches_discarded_total\{reason="bbn"\} 1$/m);
    await c.close();
  } finally {
    const r = await sn.stop();
    assert.is(r.status, 'aborted');
    const store = r.counters.get('store');
    assert.ok(store);
    assert.is(store.received, 109);
    assert.is(store.sent, 100);
    assert.is(store.dropped, 9);
  }
});
ingest('a batch left open when the node stops is removed; a restart serves what was acknowledged', async () => {
  const sn = await start();
  const c = await connect(sn.port);
  const a = generateBatchIdNumber(10n);
  const da = records(20, 5);
  await c.sendRecords(a, da);
  const ha = (await c.sendEob(a, 20)).closingHash;
  const empty = generateBatchIdNumber(12n);
  await c.sendEob(empty, 0); // an empty batch is a batch too
  const open = generateBatchIdNumber(11n);
  await c.sendRecords(open, records(7, 6));
  // The records reached the store once the partial file exists.
  const dsDir = path.join(sn.dir, 'd0', DS);
  const partial = (): string[] => readdirSync(dsDir).filter((n) => n.endsWith('.partial'));
  for (let i = 0; i < 200 && partial().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(partial(), [`${open.toHex()}.hdseg.partial`]);
  await sn.stop();
  await c.closed;
  // The run resolves once the store's teardown (aborting open batches) has settled.
  assert.equal(partial(), [], 'stopping aborts the open batch');

  const again = await start(sn.dir);
  try {
    await connect(again.port).then((x) => x.close());
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`http://127.0.0.1:${again.obsPort}/health`).catch(() => undefined);
      if (res?.status === 200) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const list = (await (await fetch(`http://127.0.0.1:${again.obsPort}/v1/batches?dataset=${DS}`)).json()) as { batches: { batch_id: string; records: number }[] };
    assert.equal(list.batches.map((b) => [b.batch_id, b.records]), [
      [a.toHex(), 20],
      [empty.toHex(), 0],
    ]);
    const c2 = await connect(again.port);
    // The SCC catching this replica up: an eob for a batch it holds is answered at once.
    assert.ok(Buffer.from((await c2.sendEob(a, 20)).closingHash).equals(Buffer.from(ha)));
    // The batch that was open is resent whole and commits.
    const dOpen = records(7, 6);
    await c2.sendRecords(open, dOpen);
    await c2.sendEob(open, 7);
    assert.equal(await readSegment(path.join(dsDir, `${open.toHex()}.hdseg`)), dOpen);
    await c2.close();
  } finally {
    await again.stop();
  }
});
ingest('a batch left open by a dropped SCC stream is discarded at once; the resend on a new stream commits', async () => {
  const sn = await start();
  try {
    const dsDir = path.join(sn.dir, 'd0', DS);
    // The device directory appears once the node's recovery has run (the port may open before).
    const partial = (): string[] => (existsSync(dsDir) ? readdirSync(dsDir).filter((n) => n.endsWith('.partial')) : []);
    const c = await connect(sn.port);
    const id = generateBatchIdNumber(20n);
    const data = records(50, 9);
    await c.sendRecords(id, data.subarray(0, 30 * R));
    for (let i = 0; i < 400 && partial().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(partial(), [`${id.toHex()}.hdseg.partial`]);
    await c.close(); // the SCC's stream ends before the batch's eob
    for (let i = 0; i < 400 && partial().length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(partial(), [], 'the partial segment is gone without waiting for a restart');

    const c2 = await connect(sn.port);
    await c2.sendRecords(id, data);
    const ack = await c2.sendEob(id, 50, await closing(id, data));
    assert.is(ack.recordCount, 50);
    assert.equal(await readSegment(path.join(dsDir, `${id.toHex()}.hdseg`)), data);
    await c2.close();
    const metrics = await (await fetch(`http://127.0.0.1:${sn.obsPort}/metrics`)).text();
    assert.match(metrics, /^hd_batches_discarded_total\{reason="bbn"\} 1$/m);
  } finally {
    await sn.stop();
  }
});
ingest.run();
