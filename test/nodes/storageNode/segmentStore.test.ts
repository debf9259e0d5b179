import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { from, lastValueFrom, Observable, Subject, type Subscription } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID, generateBatchIdNumber, HashChain, readSegment, segmentFileName, verifySegment } from '../../../engine-rs/index';
import type { AckResult, Chunk } from '../../../stream/chunk';
import { StageCounters } from '../../../stream/stageCounters';
import { BatchIndex } from '../../../nodes/storageNode/batchIndex';
import { BATCH_ERROR_CODES, BatchStore } from '../../../nodes/storageNode/batchStore';
import { DevicePool, StorageDevice } from '../../../nodes/storageNode/devices';
import { segmentStore } from '../../../nodes/storageNode/segmentStore';

const R = 24;
const DS = 'trades';

function records(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
}

async function closing(id: BatchID, data: Buffer, blockSize = 4): Promise<Buffer> {
  const c = new HashChain(id, { recordSize: R, blockSize });
  await c.update(data);
  return c.finish().closingHash;
}

interface Rig {
  root: string;
  devices: StorageDevice[];
  store: BatchStore;
  index: BatchIndex;
  counters: StageCounters;
  acks: { batch: string; kind: string; result: AckResult }[];
  reports: string[];
}

function rig(nDevices = 1): Rig {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-sink-'));
  const devices = Array.from({ length: nDevices }, (_, i) => new StorageDevice(`d${i}`, 'dir', path.join(root, `d${i}`)));
  const index = new BatchIndex();
  const store = new BatchStore({ pool: new DevicePool(devices, 'round_robin', 0), index, algorithm: 'sha512', blockSize: 4 });
  return { root, devices, store, index, counters: new StageCounters('records'), acks: [], reports: [] };
}

function recs(id: BatchID, data: Buffer): Chunk {
  return { kind: 'records', dataset: DS, batchId: id, count: data.length / R, recordSize: R, buf: data };
}
function eob(r: Rig, id: BatchID, recordCount: number, closingHash?: Uint8Array): Chunk {
  return { kind: 'eob', dataset: DS, batchId: id, recordCount, closingHash, ack: (result) => r.acks.push({ batch: id.toHex(), kind: 'eob', result }) };
}
function bbn(r: Rig, id: BatchID): Chunk {
  return { kind: 'bbn', dataset: DS, batchId: id, reason: 'test', ack: (result) => r.acks.push({ batch: id.toHex(), kind: 'bbn', result }) };
}

async function run(r: Rig, els: Chunk[], closeStore = true): Promise<void> {
  const sink = segmentStore({
    open: async () => {
      for (const d of r.devices) await d.prepare();
      return r.store;
    },
    close: closeStore ? async () => void (await r.store.abortAll()) : undefined,
    counters: r.counters,
    report: (m) => r.reports.push(m),
  });
  await lastValueFrom(sink(from(els)), { defaultValue: undefined });
}

/** Every file under a device's dataset directory. */
function files(dev: StorageDevice): string[] {
  const d = dev.datasetDir(DS);
  return existsSync(d) ? readdirSync(d).sort() : [];
}

const sink = suite('segmentStore sink');
sink('interleaved batches become byte-identical segments that verify; acks carry the closing hash', async () => {
  const r = rig();
  const a = generateBatchIdNumber(1n);
  const b = generateBatchIdNumber(2n);
  const da = records(10, 1);
  const db = records(7, 2);
  const ha = await closing(a, da);
  const hb = await closing(b, db);
  await run(r, [recs(a, da.subarray(0, 3 * R)), recs(b, db.subarray(0, 5 * R)), recs(a, da.subarray(3 * R)), eob(r, a, 10, ha), recs(b, db.subarray(5 * R)), eob(r, b, 7, hb)]);
  // Commits run side by side, so the two acks may come in either order.
  assert.equal(r.acks.map((x) => [x.batch, x.result.ok]).sort(), [
    [a.toHex(), true],
    [b.toHex(), true],
  ]);
  const ackA = r.acks.find((x) => x.batch === a.toHex())?.result;
  assert.equal(Buffer.from((ackA as { closingHash: Uint8Array }).closingHash), ha);
  for (const [id, data, hash] of [
    [a, da, ha],
    [b, db, hb],
  ] as const) {
    const p = path.join(r.devices[0].datasetDir(DS), segmentFileName(id));
    assert.equal(await readSegment(p), data);
    const v = await verifySegment(p);
    assert.ok(v.ok && v.closingHash.equals(hash));
    const e = r.index.get(DS, id);
    assert.ok(e && e.path === p && e.records === data.length / R && e.closingHash.equals(hash));
  }
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 17, sent: 17, dropped: 0, held: 0, errors: 0, controls: 2 });
  assert.is(r.store.openBatches, 0);
});
sink('no closing hash in the eob: committed without the check', async () => {
  const r = rig();
  const id = generateBatchIdNumber(3n);
  const d = records(5, 3);
  await run(r, [recs(id, d), eob(r, id, 5)]);
  assert.ok(r.acks[0].result.ok);
  assert.equal(Buffer.from((r.acks[0].result as { closingHash: Uint8Array }).closingHash), await closing(id, d));
});
sink('closing hash mismatch: error ack, nothing committed, records dropped', async () => {
  const r = rig();
  const id = generateBatchIdNumber(4n);
  const d = records(6, 4);
  const wrong = await closing(id, records(6, 5));
  await run(r, [recs(id, d), eob(r, id, 6, wrong)]);
  const res = r.acks[0].result;
  assert.ok(!res.ok && res.code === BATCH_ERROR_CODES.refused && /does not match/.test(res.message), JSON.stringify(res));
  assert.equal(files(r.devices[0]), []);
  assert.not.ok(r.index.has(DS, id));
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 6, sent: 0, dropped: 6, held: 0, errors: 1, controls: 1 });
  assert.match(r.reports[0], /does not match/);
});
sink('record count mismatch: error ack, nothing committed', async () => {
  const r = rig();
  const id = generateBatchIdNumber(5n);
  await run(r, [recs(id, records(4, 1)), eob(r, id, 5)]);
  const res = r.acks[0].result;
  assert.ok(!res.ok && res.code === BATCH_ERROR_CODES.refused && /says 5 records, 4 arrived/.test(res.message));
  assert.equal(files(r.devices[0]), []);
});
sink('bbn discards the partial segment and is acknowledged', async () => {
  const r = rig();
  const id = generateBatchIdNumber(6n);
  const keep = generateBatchIdNumber(7n);
  const dk = records(2, 9);
  await run(r, [recs(id, records(8, 1)), recs(keep, dk), bbn(r, id), eob(r, keep, 2)]);
  assert.equal(r.acks.map((x) => [x.kind, x.result.ok]), [
    ['bbn', true],
    ['eob', true],
  ]);
  assert.equal(files(r.devices[0]), [segmentFileName(keep)]);
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 10, sent: 2, dropped: 8, held: 0, errors: 0, controls: 2 });
});
sink('a second eob (and resent records) for a stored batch is idempotent', async () => {
  const r = rig(2);
  const id = generateBatchIdNumber(8n);
  const d = records(9, 8);
  const h = await closing(id, d);
  await run(r, [recs(id, d), eob(r, id, 9, h)]);
  // Caught up twice: the whole batch again, then an eob alone.
  await run(r, [recs(id, d.subarray(0, 4 * R)), recs(id, d.subarray(4 * R)), eob(r, id, 9, h), eob(r, id, 9)]);
  assert.is(r.acks.length, 3);
  for (const a of r.acks) assert.ok(a.result.ok && Buffer.from(a.result.closingHash as Uint8Array).equals(h));
  // One segment in all, on the first device; the duplicate records were not written anywhere.
  assert.equal(files(r.devices[0]), [segmentFileName(id)]);
  assert.equal(files(r.devices[1]), []);
  assert.is(r.counters.sent, 9);
  assert.is(r.counters.dropped, 9);
  assert.is(r.counters.held, 0);
  assert.match(r.reports[0], /already durable here/);
});
sink('an eob for a stored batch with other claims is refused', async () => {
  const r = rig();
  const id = generateBatchIdNumber(9n);
  const d = records(3, 1);
  await run(r, [recs(id, d), eob(r, id, 3)]);
  await run(r, [eob(r, id, 4), eob(r, id, 3, await closing(id, records(3, 2))), bbn(r, id)]);
  const [, n, hash, b] = r.acks.map((a) => a.result);
  assert.ok(!n.ok && /with 3 records; end-of-batch says 4/.test(n.message));
  assert.ok(!hash.ok && /different closing hash/.test(hash.message));
  assert.ok(!b.ok && /cannot discard it/.test(b.message));
  assert.ok(r.index.has(DS, id));
  assert.ok((await verifySegment(r.index.get(DS, id)?.path ?? '')).ok);
});
sink('an empty batch commits a segment with no records', async () => {
  const r = rig();
  const id = generateBatchIdNumber(10n);
  await run(r, [eob(r, id, 0, await closing(id, Buffer.alloc(0)))]);
  assert.ok(r.acks[0].result.ok);
  assert.is(r.index.get(DS, id)?.records, 0);
});
sink('round_robin spreads batches over the devices', async () => {
  const r = rig(2);
  const ids = [11n, 12n, 13n].map((n) => generateBatchIdNumber(n));
  const els: Chunk[] = [];
  for (const id of ids) els.push(recs(id, records(2, 1)), eob(r, id, 2));
  await run(r, els);
  assert.equal(ids.map((id) => r.index.get(DS, id)?.device), ['d0', 'd1', 'd0']);
  assert.equal(files(r.devices[1]), [segmentFileName(ids[1])]);
});
sink('batches still open at the end are aborted: partial removed, records dropped, never acknowledged', async () => {
  const r = rig();
  const id = generateBatchIdNumber(14n);
  await run(r, [recs(id, records(5, 1))]);
  assert.equal(files(r.devices[0]), []);
  assert.equal(r.acks, []);
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 5, sent: 0, dropped: 5, held: 0, errors: 0, controls: 0 });
});
sink('nothing is written before open resolves', async () => {
  const r = rig();
  let release: () => void = () => undefined;
  const gate = new Promise<void>((res) => (release = res));
  const id = generateBatchIdNumber(15n);
  const sinkFn = segmentStore({
    open: async () => {
      await gate;
      for (const d of r.devices) await d.prepare();
      return r.store;
    },
    counters: r.counters,
  });
  const done = lastValueFrom(sinkFn(from([recs(id, records(2, 1)), eob(r, id, 2)])), { defaultValue: undefined });
  await new Promise((res) => setTimeout(res, 20));
  assert.is(r.store.openBatches, 0);
  assert.not.ok(existsSync(r.devices[0].dir));
  release();
  await done;
  assert.ok(r.acks[0].result.ok);
});
sink('open failing fails the sink', async () => {
  const sinkFn = segmentStore({ open: () => Promise.reject(new Error('devices unusable')) });
  try {
    await lastValueFrom(sinkFn(new Observable<Chunk>(() => undefined)), { defaultValue: undefined });
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /devices unusable/);
  }
});
sink('bytes elements and unbatched records are refused', async () => {
  for (const el of [{ kind: 'bytes', source: 'x', offset: 0, buf: Buffer.alloc(1) }, { kind: 'records', dataset: DS, count: 1, recordSize: R, buf: Buffer.alloc(R) }] as Chunk[]) {
    const r = rig();
    try {
      await run(r, [el]);
      assert.unreachable();
    } catch (err) {
      assert.instance(err, TypeError);
    }
  }
});
sink('teardown (unsubscribe) aborts open batches', async () => {
  const r = rig();
  const id = generateBatchIdNumber(16n);
  let closed = false;
  const sinkFn = segmentStore({
    open: async () => {
      for (const d of r.devices) await d.prepare();
      return r.store;
    },
    close: async () => {
      await r.store.abortAll();
      closed = true;
    },
    counters: r.counters,
  });
  const input = new Observable<Chunk>((s) => {
    s.next(recs(id, records(3, 1)));
  });
  const sub: Subscription = sinkFn(input).subscribe();
  await new Promise((res) => setTimeout(res, 30));
  assert.is(r.store.openBatches, 1);
  sub.unsubscribe();
  await new Promise((res) => setTimeout(res, 30));
  assert.ok(closed);
  assert.is(r.store.openBatches, 0);
  assert.equal(files(r.devices[0]), []);
  assert.is(r.counters.dropped, 3);
});
sink('commits run in the background: the next batch is written meanwhile; a later element of the committing batch waits for it', async () => {
  const r = rig();
  for (const d of r.devices) await d.prepare();
  const a = generateBatchIdNumber(1n);
  const b = generateBatchIdNumber(2n);
  const name = (id: BatchID): string => (id.equals(a) ? 'a' : 'b');
  const events: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((res) => (release = res));
  // The real store, with batch a's commit held back until the test releases it.
  const real = r.store;
  const store = Object.create(real) as BatchStore;
  store.append = async (c) => {
    events.push(`append ${name(c.batchId)}`);
    return real.append(c);
  };
  store.commit = async (dataset, id, count, size, hash) => {
    events.push(`commit ${name(id)}`);
    if (id.equals(a)) await gate;
    const out = await real.commit(dataset, id, count, size, hash);
    events.push(`committed ${name(id)}`);
    return out;
  };
  store.discard = async (dataset, id, reason) => {
    events.push(`discard ${name(id)}`);
    return real.discard(dataset, id, reason);
  };
  const input = new Subject<Chunk>();
  const done = lastValueFrom(segmentStore({ open: async () => store, counters: r.counters, report: (m) => r.reports.push(m) })(input), { defaultValue: undefined });
  input.next(recs(a, records(8, 1)));
  input.next(eob(r, a, 8));
  input.next(recs(b, records(5, 2)));
  input.next(eob(r, b, 5));
  input.next(bbn(r, a)); // a resent bbn: must wait for a's commit, then find it durable
  while (!events.includes('committed b')) await new Promise((res) => setTimeout(res, 5));
  assert.equal(events, ['append a', 'commit a', 'append b', 'commit b', 'committed b'], 'b is written and committed while a commits');
  assert.equal(r.acks.map((x) => `${x.kind} ${x.batch === a.toHex() ? 'a' : 'b'}`), ['eob b']);
  release();
  input.complete();
  await done;
  assert.equal(events.slice(5), ['committed a', 'discard a']);
  assert.equal(r.acks.map((x) => `${x.kind} ${x.batch === a.toHex() ? 'a' : 'b'} ${x.result.ok}`), ['eob b true', 'eob a true', 'bbn a false']);
  const refused = r.acks[2].result;
  assert.is(refused.ok === false && refused.code, BATCH_ERROR_CODES.refused, 'a bbn cannot discard a durable batch');
  assert.equal(files(r.devices[0]), [segmentFileName(a), segmentFileName(b)].sort());
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 13, sent: 13, dropped: 0, held: 0, errors: 0, controls: 3 });
});
sink.run();
