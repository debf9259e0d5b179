/**
 * Issue #19: a registered node keeps the last configuration the DMS gave it in its state directory
 * (net/dmsConfigCache.ts, written atomically with the time it was fetched, the key and certificate
 * of the registration answer left out) and starts from it when the DMS cannot be reached
 * (`DmsConfigFeed.ready`), saying so in its log and /health. The real-process test (DMS stopped,
 * nodes restarted, ingest and verify_hash reads under the DMS's election) is
 * test/integration/dmsDown.test.ts. Also the start-time settings watch (net/startTimeSettings.ts).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DMS_CONFIG_CACHE_FILE, readDmsConfigCache } from '../../net/dmsConfigCache';
import { DmsConfigFeed, type DmsNodeConfig } from '../../net/dmsConfigFeed';
import type { MtlsIdentity } from '../../net/mtls';
import { StartTimeSettings } from '../../net/startTimeSettings';

/** A registration answer as the DMS writes it: secrets first, then the configuration. */
const ANSWER = {
  success: true,
  client_key_pem: '-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n',
  signed_cert_pem: 'CERT',
  ca_cert_pem: 'CA',
  crl_pem: 'CRL',
  error_message: '',
  cluster: 'c1',
  schema_json: '',
  datasets: [{ id: 'd80', record_size: 80 }],
  scc_targets: [],
  replicas: [{ name: 'sn1', host: '10.0.0.1', control_port: 6986, prod_port: 6987 }],
  quarantined: [],
  record_size: 64,
  devices: [{ name: 'n0', address: '/mnt/n0', type: 'nvme' }],
  hash_election: { algorithm: 'sha256', chain_block_size: 32, record_size: 64, computed_by: 'scc', offload: 'cpu' },
  health_interval_ms: 5000,
  config_poll_ms: 300,
};

/** No DMS answers here (port 1), and no TLS material: every read fails at once. */
const identity = { material: { caPem: '', certPem: '', keyPem: '' } } as unknown as MtlsIdentity;

function feedOf(dir: string, node: string, initial?: unknown): { feed: DmsConfigFeed; lines: string[] } {
  const lines: string[] = [];
  const feed = new DmsConfigFeed({ nodeName: node, dmsUrl: 'https://127.0.0.1:1', identity, ...(initial !== undefined && { initial }), cacheFile: path.join(dir, DMS_CONFIG_CACHE_FILE), log: (l) => void lines.push(l) });
  return { feed, lines };
}

let dir = '';
const t = suite('the configuration cache of a registered node');
t.before.each(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-dmscache-'));
});
t.after.each(() => rmSync(dir, { recursive: true, force: true }));

t("the registration answer's configuration is cached atomically, without the key or certificates", async () => {
  const before = Date.now();
  const { feed } = feedOf(dir, 'sn1', ANSWER);
  await feed.stop();
  const file = path.join(dir, DMS_CONFIG_CACHE_FILE);
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { format: string; node: string; fetched_at: string; config: Record<string, unknown> };
  assert.is(doc.format, 'hd-dms-config/1');
  assert.is(doc.node, 'sn1');
  assert.ok(Date.parse(doc.fetched_at) >= before - 1000 && Date.parse(doc.fetched_at) <= Date.now());
  assert.equal(Object.keys(doc.config).sort(), ['cluster', 'config_poll_ms', 'datasets', 'devices', 'hash_election', 'health_interval_ms', 'quarantined', 'record_size', 'replicas', 'scc_targets', 'schema_json']);
  assert.not.match(readFileSync(file, 'utf8'), /secret|CERT|"CA"|CRL/);
  assert.is(statSync(file).mode & 0o777, 0o600);
  // Written through a temporary file and a rename: nothing else is left in the directory.
  assert.equal(readdirSync(dir), [DMS_CONFIG_CACHE_FILE]);
  assert.is(feed.source, 'registration');
});

t('the DMS unreachable at start: the cached configuration, logged with when it was fetched, shown in /health', async () => {
  const { feed: first } = feedOf(dir, 'sn1', ANSWER);
  await first.stop();
  const fetchedAt = (await readDmsConfigCache(path.join(dir, DMS_CONFIG_CACHE_FILE), 'sn1'))?.fetchedAt as string;
  const { feed, lines } = feedOf(dir, 'sn1');
  const cfg = await feed.ready(2);
  await feed.stop();
  assert.ok(cfg, lines.join('\n'));
  assert.equal(cfg?.hashElection, { algorithm: 'sha256', chainBlockSize: 32, recordSize: 64 });
  assert.equal(cfg?.devices, [{ name: 'n0', address: '/mnt/n0', type: 'nvme' }]);
  assert.equal([...(cfg?.recordSizes ?? [])], [['d80', 80]]);
  assert.equal(cfg?.replicas.map((r) => r.name), ['sn1']);
  assert.is(cfg?.pollMs, 300);
  assert.is(feed.source, 'dms-cache');
  assert.is(feed.fetchedAt, fetchedAt);
  const h = feed.health();
  assert.equal([h.source, h.fetched_at, h.dms_reachable, h.cache_file], ['dms-cache', fetchedAt, false, path.join(dir, DMS_CONFIG_CACHE_FILE)]);
  assert.ok(h.last_error !== undefined);
  assert.ok(lines.some((l) => l.includes(`starting from the configuration it gave at ${fetchedAt}`)), lines.join('\n'));
  // A configuration read from the cache is not written back as if fetched now.
  assert.is((await readDmsConfigCache(path.join(dir, DMS_CONFIG_CACHE_FILE), 'sn1'))?.fetchedAt, fetchedAt);
});

t("no cache, or another node's, or a damaged one: no configuration, and the log says why", async () => {
  const none = feedOf(dir, 'sn1');
  assert.is(await none.feed.ready(1), undefined);
  assert.ok(none.lines.some((l) => /no configuration of it is cached/.test(l)), none.lines.join('\n'));
  assert.is(none.feed.health().source, 'none');
  const { feed: other } = feedOf(dir, 'sn2', ANSWER);
  await other.stop();
  const wrong = feedOf(dir, 'sn1');
  assert.is(await wrong.feed.ready(1), undefined);
  assert.ok(wrong.lines.some((l) => /holds the configuration of node "sn2", not 'sn1'/.test(l)), wrong.lines.join('\n'));
  writeFileSync(path.join(dir, DMS_CONFIG_CACHE_FILE), '{ "format": ');
  const torn = feedOf(dir, 'sn1');
  assert.is(await torn.feed.ready(1), undefined);
  assert.ok(torn.lines.some((l) => /is not JSON/.test(l)), torn.lines.join('\n'));
});

const watch = suite('start-time settings: a changed DMS value waits for a restart, visibly');
const cfgWith = (algorithm: string, chainBlockSize: number): DmsNodeConfig => ({ datasets: new Map(), recordSizes: new Map(), replicas: [], hashElection: { algorithm, chainBlockSize, recordSize: 64 }, devices: [], pollMs: 300 });
const electionOf = (c: DmsNodeConfig): unknown => c.hashElection && { algorithm: c.hashElection.algorithm, chain_block_size: c.hashElection.chainBlockSize };

watch('pending (degraded) while the DMS elects another value; one line per new value; back to ok when it returns', async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-dmscache-'));
  const { feed } = feedOf(dir, 'scc1', ANSWER);
  const lines: string[] = [];
  const w = new StartTimeSettings(feed, [{ name: 'hash_election', inForce: { algorithm: 'sha256', chain_block_size: 32 }, atRestart: electionOf, fromDms: electionOf, why: 'because' }], (l) => void lines.push(l));
  assert.equal(w.health(), { status: 'ok', pending: {}, overridden: {} });
  feed.emit('update', cfgWith('blake3', 16));
  feed.emit('update', cfgWith('blake3', 16));
  assert.equal(w.health(), { status: 'degraded', pending: { hash_election: { in_force: { algorithm: 'sha256', chain_block_size: 32 }, at_restart: { algorithm: 'blake3', chain_block_size: 16 } } }, overridden: {} });
  assert.equal(lines, ['the DMS now gives hash_election {"algorithm":"blake3","chain_block_size":16}; this node keeps {"algorithm":"sha256","chain_block_size":32} until it restarts: because']);
  feed.emit('update', cfgWith('sha256', 32));
  assert.is(w.health().status, 'ok');
  assert.match(lines[1] as string, /is again the one in force/);
  w.stop();
  await feed.stop();
  rmSync(dir, { recursive: true, force: true });
});

watch('a value the operator pinned: the DMS differing is noted, not pending', async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-dmscache-'));
  const { feed } = feedOf(dir, 'scc1', ANSWER);
  const pinned = { algorithm: 'sha512', chain_block_size: 64 };
  const w = new StartTimeSettings(feed, [{ name: 'hash_election', inForce: pinned, atRestart: () => pinned, fromDms: electionOf, why: 'because' }], () => undefined);
  assert.equal(w.health(), { status: 'ok', pending: {}, overridden: { hash_election: { in_force: pinned, dms: { algorithm: 'sha256', chain_block_size: 32 } } } });
  w.stop();
  await feed.stop();
  rmSync(dir, { recursive: true, force: true });
});

t.run();
watch.run();
