/**
 * Cold-boot synchronisation's pieces in this process, their error paths in particular: the
 * SYNC_PEERS and SN_OBSERVABILITY_PORTS parsers, `GET /v1/segment` (400, 404, who may read),
 * copyBatch against a stand-in peer serving a good, damaged, cut, foreign or differently chained
 * segment (nothing installed but the good one, no partial left), and a sync whose peers never
 * answer (ready, saying so). The whole path with real processes: test/integration/coldBootSync.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, SegmentWriter, type BatchID } from '../../../engine-rs/index';
import type { RouteCaller } from '../../../lib/observability';
import type { NodeIdentity } from '../../../net/nodeIdentity';
import { BatchCopyError, copyBatch, type PeerBatch } from '../../../nodes/storageNode/batchCopy';
import { BatchIndex } from '../../../nodes/storageNode/batchIndex';
import { BatchStore } from '../../../nodes/storageNode/batchStore';
import { ColdBootSync } from '../../../nodes/storageNode/coldBootSync';
import { DevicePool, StorageDevice } from '../../../nodes/storageNode/devices';
import { parseSyncPeers, PeerLink } from '../../../nodes/storageNode/peerLink';
import { segmentRefusal, segmentRoute } from '../../../nodes/storageNode/segmentRoute';
import { parseObservabilityPorts, syncStateProbe } from '../../../nodes/scc/syncProbe';

const RS = 16;
const DS = 'meter';
let root: string;
let server: http.Server;
let port: number;
/** What the stand-in peer answers for /v1/segment: a file, or a file cut short. */
let serve: { file: string; cutAt?: number } | undefined;

async function segment(dir: string, id: BatchID, n: number, algorithm: 'sha512' | 'sha256' = 'sha512', blockSize = 4): Promise<{ file: string; closingHash: Buffer }> {
  const w = SegmentWriter.create({ dir, datasetId: DS, batchId: id, recordSize: RS, blockSize, algorithm });
  const b = Buffer.alloc(n * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + n) & 0xff;
  await w.append(b);
  const s = await w.finish();
  return { file: s.path, closingHash: s.closingHash };
}

function device(name: string): StorageDevice {
  return StorageDevice.fromConfig({ name, address: path.join(root, name), type: 'dir' });
}

const link = (): PeerLink => new PeerLink({ name: 'peer', host: '127.0.0.1', port }, undefined, 5000);
const chain = { algorithm: 'sha512', blockSize: 4 } as const;
const leftovers = (d: StorageDevice): string[] => (existsSync(d.datasetDir(DS)) ? readdirSync(d.datasetDir(DS)) : []);

/** Resolves once `p` rejected with an error matching `want` (a pattern, or a check). */
async function rejects(p: Promise<unknown>, want: RegExp | ((e: unknown) => boolean)): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e ?? new Error('rejected with nothing'),
  );
  assert.ok(err !== undefined, 'expected a rejection');
  if (want instanceof RegExp) assert.match((err as Error).message, want);
  else assert.ok(want(err), `unexpected error: ${(err as Error).message}`);
}

const t = suite('cold-boot synchronisation: parts and error paths');
t.before(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'hd-cbs-'));
  server = http.createServer((req, res) => {
    if (!req.url?.startsWith('/v1/segment') || !serve) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not durable here' }));
      return;
    }
    const bytes = readFileSync(serve.file);
    res.writeHead(200, { 'content-length': bytes.length });
    if (serve.cutAt !== undefined) {
      res.write(bytes.subarray(0, serve.cutAt));
      res.socket?.destroy();
    } else res.end(bytes);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
t.after(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  rmSync(root, { recursive: true, force: true });
});

t('SYNC_PEERS and SN_OBSERVABILITY_PORTS: accepted forms, and every bad entry named', () => {
  assert.equal(parseSyncPeers(''), []);
  assert.equal(parseSyncPeers('sn2:10.0.0.12:8080, sn3:host-3:8081'), [
    { name: 'sn2', host: '10.0.0.12', port: 8080 },
    { name: 'sn3', host: 'host-3', port: 8081 },
  ]);
  assert.throws(() => parseSyncPeers('sn2:10.0.0.12'), /node_name:host:observability_port \(2 fields\)/);
  assert.throws(() => parseSyncPeers('sn2:h:0'), /port must be 1\.\.65535/);
  assert.throws(() => parseSyncPeers('sn2::80'), /host is empty/);
  assert.throws(() => parseSyncPeers('-x:h:80'), /not a node name/);
  assert.throws(() => parseSyncPeers('a:h:80,a:h:81'), /named twice/);
  assert.equal([...parseObservabilityPorts('sn1:8081,sn2:8082')], [
    ['sn1', 8081],
    ['sn2', 8082],
  ]);
  assert.is(parseObservabilityPorts(' ').size, 0);
  assert.throws(() => parseObservabilityPorts('sn1'), /node_name:observability_port/);
  assert.throws(() => parseObservabilityPorts('sn1:70000'), /port 1\.\.65535/);
  assert.throws(() => parseObservabilityPorts('sn1:1,sn1:2'), /named twice/);
});

t('GET /v1/segment: 400 naming what to send, 404 for a batch not held, the file for one held', async () => {
  const index = new BatchIndex();
  const id = generateBatchIdNumber(1);
  const s = await segment(mkdtempSync(path.join(root, 'src-')), id, 5);
  index.add({ dataset: DS, batchId: id, path: s.file, device: 'd', records: 5, bytes: 1, closingHash: s.closingHash });
  const q = (x: string): URLSearchParams => new URLSearchParams(x);
  assert.match(JSON.stringify(segmentRoute(index, q(`dataset=${DS}`))), /'batch_id' must be the batch id as 128 hex digits/);
  assert.match(JSON.stringify(segmentRoute(index, q(`batch_id=${id.toHex()}`))), /'dataset' is required/);
  assert.match(JSON.stringify(segmentRoute(index, q(`dataset=${DS}&batch_id=${id.toHex()}&x=1`))), /unknown parameter 'x'/);
  assert.match(JSON.stringify(segmentRoute(index, q(`dataset=${DS}&dataset=${DS}&batch_id=${id.toHex()}`))), /given more than once/);
  const missing = segmentRoute(index, q(`dataset=${DS}&batch_id=${generateBatchIdNumber(2).toHex()}`));
  assert.is(missing.status, 404);
  assert.equal(segmentRoute(index, q(`dataset=${DS}&batch_id=${id.toHex().toUpperCase()}`)), { status: 200, file: s.file });
});

t('GET /v1/segment on a registered node: mutual TLS to a storageNode certificate only', () => {
  const refused: string[] = [];
  const accepted: string[] = [];
  const identity = { peerRefused: (w: string) => refused.push(w), peerAccepted: (p: { name: string }) => accepted.push(p.name) } as unknown as NodeIdentity;
  const tlsCaller = (authorized: boolean, role: string): RouteCaller => ({ tls: true, socket: { authorized, getPeerCertificate: () => ({ subject: { CN: 'snX', OU: role }, serialNumber: '01' }) } as unknown as TLSSocket });
  assert.is(segmentRefusal({ tls: false, socket: {} as never }, undefined), undefined, 'a node without identity serves plain (its links are plain)');
  assert.is(segmentRefusal({ tls: false, socket: {} as never }, identity)?.status, 403);
  assert.is(segmentRefusal(tlsCaller(false, 'storageNode'), identity)?.status, 401);
  const proxy = segmentRefusal(tlsCaller(true, 'proxy'), identity);
  assert.is(proxy?.status, 403);
  assert.match(JSON.stringify(proxy?.body), /only to role storageNode; 'snX' holds a proxy certificate/);
  assert.is(segmentRefusal(tlsCaller(true, 'storageNode'), identity), undefined);
  assert.is(refused.length, 3);
  assert.equal(accepted, ['snX']);
});

t('copyBatch: a good segment is installed; damaged, cut, foreign, differently chained or mismatching ones are refused and leave nothing', async () => {
  const src = mkdtempSync(path.join(root, 'src-'));
  const id = generateBatchIdNumber(10);
  const good = await segment(src, id, 9);
  const want: PeerBatch = { dataset: DS, batchId: id, records: 9, closingHash: good.closingHash };

  const d = device('bad');
  // Damaged: one record byte flipped.
  const damaged = path.join(src, 'damaged.hdseg');
  const bytes = readFileSync(good.file);
  bytes[bytes.length >> 1] ^= 0x5a;
  (await import('node:fs')).writeFileSync(damaged, bytes);
  serve = { file: damaged };
  await rejects(copyBatch(link(), want, d, chain), (e: unknown) => e instanceof BatchCopyError && /does not verify/.test((e as Error).message));
  // Cut mid-transfer.
  serve = { file: good.file, cutAt: 100 };
  await rejects(copyBatch(link(), want, d, chain), /cut|aborted|socket hang up|ECONNRESET/);
  // Another batch's segment.
  const otherDir = mkdtempSync(path.join(root, 'src-'));
  serve = { file: (await segment(otherDir, generateBatchIdNumber(11), 9)).file };
  await rejects(copyBatch(link(), want, d, chain), /holds batch/);
  // Chained with other settings than this node's.
  const sha256Dir = mkdtempSync(path.join(root, 'src-'));
  const other = await segment(sha256Dir, id, 9, 'sha256');
  serve = { file: other.file };
  await rejects(copyBatch(link(), { ...want, closingHash: other.closingHash }, d, chain), /chained with sha256 in blocks of 4; this node uses sha512/);
  // The peer's index says another closing hash / count.
  serve = { file: good.file };
  await rejects(copyBatch(link(), { ...want, records: 8 }, d, chain), /the peer.s index says 8 closing/);
  // The peer no longer holds it.
  serve = undefined;
  await rejects(copyBatch(link(), want, d, chain), /answered 404: not durable here/);
  assert.equal(leftovers(d), [], 'no partial or segment left by a refused copy');

  serve = { file: good.file };
  const ok = device('ok');
  const e = await copyBatch(link(), want, ok, chain);
  assert.is(e.records, 9);
  assert.ok(e.closingHash.equals(good.closingHash));
  assert.equal(leftovers(ok), [path.basename(good.file)]);
  assert.ok(readFileSync(e.path).equals(readFileSync(good.file)));
});

t('BatchStore.installCopy: a batch already held is not copied; a failed copy indexes nothing', async () => {
  const index = new BatchIndex();
  const d = device('store');
  await d.prepare();
  const store = new BatchStore({ pool: new DevicePool([d], 'round_robin', 0), index, algorithm: 'sha512', blockSize: 4 });
  const id = generateBatchIdNumber(20);
  await rejects(
    store.installCopy(DS, id, () => Promise.reject(new BatchCopyError('no'))),
    /no/,
  );
  assert.is(index.size, 0);
  const src = mkdtempSync(path.join(root, 'src-'));
  const s = await segment(src, id, 3);
  assert.is(await store.installCopy(DS, id, async () => ({ dataset: DS, batchId: id, path: s.file, device: 'store', records: 3, bytes: 1, closingHash: s.closingHash })), 'installed');
  assert.is(await store.installCopy(DS, id, () => Promise.reject(new Error('must not run'))), 'held');
  // The SCC's eob for a batch copied here is answered from the copy (idempotent).
  const c = await store.commit(DS, id, 3, RS, s.closingHash);
  assert.ok(c.ok && c.existing);
});

t('a sync whose peers never answer reports ready after its passes, saying why; the SCC probe of a silent node tells nothing', async () => {
  const index = new BatchIndex();
  const d = device('lonely');
  const store = new BatchStore({ pool: new DevicePool([d], 'round_robin', 0), index, algorithm: 'sha512', blockSize: 4 });
  const sync = new ColdBootSync({ peers: [{ name: 'gone', host: '127.0.0.1', port: 1 }], store, chain, maxUnreachablePasses: 2, retryMs: 10 });
  assert.is(sync.current, 'syncing');
  await sync.run();
  const r = sync.report();
  assert.is(r.state, 'ready');
  assert.match(r.reason, /no peer answered in 2 passes \(.*ECONNREFUSED.*\); serving what this node holds/);
  const none = new ColdBootSync({ peers: [], store, chain });
  assert.is(none.current, 'ready');
  const probe = syncStateProbe(new Map([['sn1', 1]]));
  assert.is(await probe({ name: 'sn1', host: '127.0.0.1', controlPort: 1, prodPort: 1 } as never), undefined);
  assert.is(await probe({ name: 'unknown', host: '127.0.0.1', controlPort: 1, prodPort: 1 } as never), undefined);
});

t.run();
