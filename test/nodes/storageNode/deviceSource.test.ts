/**
 * Issue #19: a Storage Node's devices with the precedence of its other settings — config.json's
 * `storage_devices`, else the `devices` the DMS declares for the node (or the node's cache of them),
 * else one directory beside the config file — checked as config.json's are (OCF names included).
 * The real-process test is test/integration/dmsDown.test.ts.
 */
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, parseStorageNodeConfig, withDevices } from '../../../nodes/storageNode/config';
import { resolveDevices } from '../../../nodes/storageNode/deviceSource';
import type { DmsNodeConfig } from '../../../net/dmsConfigFeed';

const BASE_DIR = '/etc/hd';
const noDevices = { node_name: 'sn1', production_port: 6987 };
const own = { ...noDevices, storage_devices: [{ name: 'own', address: 'own', type: 'ssd' }] };
const parse = (doc: unknown): ReturnType<typeof parseStorageNodeConfig> => parseStorageNodeConfig(doc, { baseDir: BASE_DIR });
const dmsWith = (devices: DmsNodeConfig['devices']): DmsNodeConfig => ({ datasets: new Map(), recordSizes: new Map(), replicas: [], hashElection: undefined, devices, pollMs: 200 });
const declared = [
  { name: 'n0', address: '/mnt/n0', type: 'nvme' },
  { name: 'h0', address: 'rel/h0', type: 'hdd' },
];
const summary = (r: ReturnType<typeof resolveDevices>): unknown => [r.from, r.config.storageDevices.map((d) => `${d.name} ${d.type} ${d.address}`)];

const t = suite('resolveDevices: config.json, then the DMS, then the default');

t('config.json without storage_devices parses, with none yet', () => {
  const c = parse(noDevices);
  assert.is(c.storageDevicesSet, false);
  assert.equal(c.storageDevices, []);
  assert.is(c.baseDir, BASE_DIR);
});

t("config.json's storage_devices win over the DMS's", () => {
  assert.equal(summary(resolveDevices(parse(own), { registered: true, config: dmsWith(declared), origin: 'dms' })), ['config', [`own ssd ${path.join(BASE_DIR, 'own')}`]]);
});

t("unset: the DMS's devices (relative addresses beside the config file), or its cached ones", () => {
  const want = [`n0 nvme /mnt/n0`, `h0 hdd ${path.join(BASE_DIR, 'rel/h0')}`];
  assert.equal(summary(resolveDevices(parse(noDevices), { registered: true, config: dmsWith(declared), origin: 'dms' })), ['dms', want]);
  assert.equal(summary(resolveDevices(parse(noDevices), { registered: true, config: dmsWith(declared), origin: 'dms-cache' })), ['dms-cache', want]);
});

t('neither: one directory beside the config file (unregistered, or the DMS declares none)', () => {
  const want = ['default', [`d0 dir ${path.join(BASE_DIR, 'sn1.d0')}`]];
  assert.equal(summary(resolveDevices(parse(noDevices), { registered: false, config: undefined, origin: 'dms' })), want);
  assert.equal(summary(resolveDevices(parse(noDevices), { registered: true, config: dmsWith([]), origin: 'dms' })), want);
});

t('registered, no answer and no cache: refused rather than hiding the segments on the default directory', () => {
  assert.throws(() => resolveDevices(parse(noDevices), { registered: true, config: undefined, origin: 'dms', cacheFile: '/s/dms-config.json' }), /nor is one cached in \/s\/dms-config\.json\): the node cannot tell which devices hold its segments/);
});

t("the DMS's devices are checked as config.json's, every problem named with its source", () => {
  const bad = [
    { name: 'p', address: '0000:03:00.0', type: 'nvme' },
    { name: 'p', address: '/x', type: 'tape' },
  ];
  try {
    resolveDevices(parse(noDevices), { registered: true, config: dmsWith(bad), origin: 'dms' });
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.match((err as Error).message, /^the DMS's devices of node 'sn1': /);
    assert.equal((err as ConfigError).issues.map((i) => i.key), ['devices[0].address', 'devices[1].name', 'devices[1].type']);
  }
});

t("OCF names are checked against the devices in force (the DMS's here)", () => {
  const ocf = parse({ ...noDevices, use_ocf: true, ocf_cache_devices: ['n0'], ocf_core_devices: ['h9'] });
  assert.throws(() => withDevices(ocf, declared, "the DMS's devices"), (e: unknown) => e instanceof ConfigError && e.issues.some((i) => i.key === 'ocf_core_devices[0]' && /names no device of devices: 'h9'/.test(i.message)));
  const ok = withDevices(parse({ ...noDevices, use_ocf: true, ocf_cache_devices: ['n0'], ocf_core_devices: ['h0'] }), declared, "the DMS's devices");
  assert.equal(ok.storageDevices.map((d) => d.name), ['n0', 'h0']);
});

t.run();
