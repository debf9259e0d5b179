/**
 * The Storage Node's batch filters in this process: ranges of signed and big-endian fields, an
 * empty batch, 503 before recovery, a segment that no longer reads, a replaced index entry, and the
 * cache's bound. The route is served over mutual TLS to the Proxy's role only, so the node here is
 * registered with a test DMS and asked with a `proxy` certificate (who else is refused:
 * test/security/policyBypass.test.ts). (The route over real processes and the Proxy's use of it:
 * test/control/batchFilterVerdict.test.ts.)
 */
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { from, lastValueFrom } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, Schema, zoneFieldsOf, type BatchID } from '../../../engine-rs/index';
import type { Chunk } from '../../../stream/chunk';
import { BatchFilterCache, type BatchFilterJson } from '../../../nodes/storageNode/batchFilters';
import { parseStorageNodeConfig } from '../../../nodes/storageNode/config';
import { StorageNode } from '../../../nodes/storageNode/node';
import { segmentStore } from '../../../nodes/storageNode/segmentStore';
import { requestJson, type ClientTls } from '../../../net/jsonClient';
import { NodeIdentity } from '../../../net/nodeIdentity';
import { startTestDms, type TestDms } from '../../control/support';
import { enrol } from '../../security/proxyIdentitySupport';

const R = 16;
const DS = 'meter';
// Big-endian: a signed 32-bit reading, an unsigned 64-bit counter, a float (never in a filter).
const schema = Schema.parse({
  id: DS,
  record_size: R,
  byte_order: 'big',
  time_field: 'ts',
  fields: [
    { name: 'ts', offset: 0, size: 4, type: 'timestamp' },
    { name: 'reading', offset: 4, size: 4, type: 'int32' },
    { name: 'count', offset: 8, size: 4, type: 'uint32' },
    { name: 'ratio', offset: 12, size: 4, type: 'float' },
  ],
});

function recs(rows: [number, number, number][]): Buffer {
  const b = Buffer.alloc(rows.length * R);
  rows.forEach(([ts, reading, count], i) => {
    b.writeUInt32BE(ts, i * R);
    b.writeInt32BE(reading, i * R + 4);
    b.writeUInt32BE(count, i * R + 8);
    b.writeFloatBE(0.5, i * R + 12);
  });
  return b;
}

function node(root: string): StorageNode {
  const config = parseStorageNodeConfig(
    { node_name: 'sn-f', production_port: 6987, production_ip: '127.0.0.1', observability_ip: '127.0.0.1', observability_port: 0, reserve_bytes: 0, storage_devices: [{ name: 'd', address: path.join(root, 'd'), type: 'dir' }] },
    { baseDir: root },
  );
  return new StorageNode({ config, algorithm: 'sha512', blockSize: 4, log: () => undefined, zoneFields: () => zoneFieldsOf(schema) });
}

async function ingest(n: StorageNode, batches: [BatchID, Buffer][]): Promise<void> {
  const els: Chunk[] = [];
  const acks: boolean[] = [];
  for (const [id, d] of batches) {
    if (d.length > 0) els.push({ kind: 'records', dataset: DS, batchId: id, count: d.length / R, recordSize: R, buf: d });
    els.push({ kind: 'eob', dataset: DS, batchId: id, recordCount: d.length / R, ack: (a) => acks.push(a.ok) });
  }
  await lastValueFrom(segmentStore({ open: async () => n.store, defaultRecordSize: R })(from(els)), { defaultValue: undefined });
  assert.equal(acks, batches.map(() => true));
}

/** A test DMS, the node's registered identity and a Proxy certificate: batch filters are served to it only. */
let dms: TestDms;
let proxyTls: ClientTls;
const identities: NodeIdentity[] = [];

/** Registers node `sn-f` (in `root`) and lets `n` serve batch filters over mutual TLS with it. */
async function register(n: StorageNode, root: string): Promise<void> {
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'sn-f', role: 'storageNode' })).body as { token: string }).token;
  const id = await NodeIdentity.start({ nodeName: 'sn-f', role: 'storageNode', dmsUrl: dms.url, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, stateDir: path.join(root, 'identity'), keyBits: 2048, log: () => undefined });
  identities.push(id);
  n.useIdentity(id);
}

async function filters(n: StorageNode, ids: BatchID[], at?: { host: string; port: number }): Promise<{ status: number; body: { filters: Record<string, BatchFilterJson>; error?: string } }> {
  const a = at ?? (n.observabilityAddress as { host: string; port: number });
  const r = await requestJson('GET', `https://${a.host}:${a.port}/v1/batch-filters?dataset=${DS}&batch_ids=${ids.map((i) => i.toHex()).join(',')}`, { ...proxyTls, servername: 'sn-f' });
  return { status: r.status, body: r.body as { filters: Record<string, BatchFilterJson> } };
}

const byLayout = (f: BatchFilterJson | undefined): Record<string, [string, string, boolean, boolean]> =>
  Object.fromEntries((f?.fields ?? []).map((x) => [`${x.offset}:${x.size}:${x.kind}`, [x.min, x.max, x.big_endian, x.empty]]));

const t = suite('Storage Node batch filters (in process)');
t.before(async () => {
  dms = await startTestDms();
  const p = await enrol(dms, 'proxy-f', 'proxy');
  proxyTls = { ca: p.material.caPem, cert: p.material.certPem, key: p.material.keyPem };
});
t.after(async () => {
  for (const id of identities) await id.stop();
  await dms?.close();
});

t('before recovery has run the route refuses with 503, like /v1/batches', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-snf-'));
  const n = node(root);
  const at = await n.observability.listen();
  await register(n, root);
  try {
    const r = await filters(n, [generateBatchIdNumber(1n)], at);
    assert.is(r.status, 503);
    assert.match(String(r.body.error), /recovery has not finished/);
  } finally {
    await n.observability.close();
    rmSync(root, { recursive: true, force: true });
  }
});

t('signed and big-endian ranges, an empty batch, an unreadable segment, a replaced entry', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-snf-'));
  const n = node(root);
  await n.start();
  await register(n, root);
  try {
    const [a, b, empty] = [generateBatchIdNumber(1n), generateBatchIdNumber(2n), generateBatchIdNumber(3n)];
    await ingest(n, [
      [a, recs([[100, -5, 7], [101, 12, 0], [150, -300, 4_000_000_000], [120, 0, 1], [99, 3, 2]])],
      [b, recs([[200, 1, 1]])],
      [empty, Buffer.alloc(0)],
    ]);
    const r = await filters(n, [a, b, empty]);
    assert.is(r.status, 200);
    // Floats are left out: the verdict compares integers only.
    assert.equal(byLayout(r.body.filters[a.toHex()]), { '0:4:unsigned': ['99', '150', true, false], '4:4:signed': ['-300', '12', true, false], '8:4:unsigned': ['0', '4000000000', true, false] });
    assert.is(r.body.filters[a.toHex()]?.records, 5);
    assert.equal(byLayout(r.body.filters[b.toHex()])['4:4:signed'], ['1', '1', true, false]);
    // An empty batch's ranges are empty: min above max.
    const e = r.body.filters[empty.toHex()];
    assert.is(e?.records, 0);
    assert.ok(e?.fields.length === 3 && e.fields.every((x) => x.empty && BigInt(x.min) > BigInt(x.max)));

    // A replaced entry (another segment for the same batch) is read again, not served from the cache.
    const ea = n.index.get(DS, a);
    const eb = n.index.get(DS, b);
    if (!ea || !eb) throw new Error('not indexed');
    n.index.add({ ...ea, path: eb.path });
    assert.equal(byLayout((await filters(n, [a])).body.filters[a.toHex()])['4:4:signed'], ['1', '1', true, false]);

    // A segment gone since it was indexed gives no filter (the Proxy never excludes the batch); the batch cached before keeps its filter.
    unlinkSync(eb.path);
    const c = generateBatchIdNumber(4n);
    await ingest(n, [[c, recs([[1, 2, 3]])]]);
    unlinkSync(n.index.get(DS, c)?.path as string);
    const gone = await filters(n, [b, c]);
    assert.is(gone.status, 200);
    assert.equal(Object.keys(gone.body.filters), [b.toHex()]);
  } finally {
    await n.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

t('the cache keeps at most its bound, dropping the least recently used batch', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-snf-'));
  const n = node(root);
  await n.start();
  try {
    const ids = [1n, 2n, 3n].map((i) => generateBatchIdNumber(i));
    await ingest(n, ids.map((id, i) => [id, recs([[i, i, i]])]));
    const cache = new BatchFilterCache(n.index, 2);
    for (const id of ids) assert.is((await cache.get(DS, id))?.records, 1);
    assert.is(cache.size, 2);
    assert.is(await cache.get(DS, generateBatchIdNumber(9n)), undefined);
    assert.is(await cache.get('other', ids[0] as BatchID), undefined);
    assert.is(cache.size, 2);
  } finally {
    await n.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

t.run();
