import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadStorageNodeConfig, parseStorageNodeConfig } from '../../../nodes/storageNode/config';

const base = {
  node_name: 'sn1',
  production_port: 6987,
  storage_devices: [
    { name: 'd0', address: '/data/d0', type: 'nvme' },
    { name: 'd1', address: 'rel/d1', type: 'dir' },
  ],
};

/** The issues of a config that must fail. */
function issues(doc: unknown): { key: string; message: string }[] {
  try {
    parseStorageNodeConfig(doc, { baseDir: '/etc/hd' });
  } catch (err) {
    assert.instance(err, ConfigError);
    return [...(err as ConfigError).issues];
  }
  assert.unreachable('config was accepted');
  return [];
}

function oneIssue(doc: unknown, key: string, re: RegExp): void {
  const all = issues(doc);
  assert.is(all.length, 1, JSON.stringify(all));
  assert.is(all[0].key, key);
  assert.match(all[0].message, re);
}

const parse = suite('parseStorageNodeConfig');
parse('minimal config: defaults and resolved addresses', () => {
  const c = parseStorageNodeConfig(base, { baseDir: '/etc/hd' });
  assert.is(c.nodeName, 'sn1');
  assert.is(c.productionPort, 6987);
  assert.is(c.productionIp, '0.0.0.0');
  assert.is(c.observabilityIp, '0.0.0.0');
  assert.is(c.observabilityPort, 8080);
  assert.is(c.commandPort, 6986);
  assert.is(c.dmsUrl, 'https://dms-core:6986');
  assert.is(c.driveStrategy, 'round_robin');
  assert.is(c.useOcf, false);
  assert.is(c.filterDeviceSelector, 'cpu');
  assert.is(c.hashOffloadPlatform, 'cpu');
  assert.equal(
    c.storageDevices.map((d) => [d.name, d.address, d.type]),
    [
      ['d0', '/data/d0', 'nvme'],
      ['d1', '/etc/hd/rel/d1', 'dir'],
    ],
  );
});
parse('every reference key plus the optional ones', () => {
  const c = parseStorageNodeConfig(
    {
      ...base,
      dms_url: 'https://dms:6986',
      command_port: 7000,
      production_interface: '',
      production_ip: '127.0.0.2',
      observability_port: 0,
      drive_strategy: 'most_free',
      use_ocf: true,
      ocf_cache_devices: ['d0'],
      ocf_core_devices: ['d1'],
      filter_device_selector: 'gpu',
      hash_offload_platform: 'cpu',
      reserve_bytes: 0,
    },
    { baseDir: '/' },
  );
  assert.is(c.productionIp, '127.0.0.2');
  assert.is(c.observabilityIp, '127.0.0.2', 'observability follows production_ip by default');
  assert.is(c.observabilityPort, 0);
  assert.is(c.driveStrategy, 'most_free');
  assert.equal(c.ocfCacheDevices, ['d0']);
  assert.equal(c.ocfCoreDevices, ['d1']);
  assert.is(c.filterDeviceSelector, 'gpu');
  assert.is(c.reserveBytes, 0);
});
parse('not an object', () => {
  oneIssue([1], '(root)', /JSON object/);
  oneIssue(null, '(root)', /JSON object/);
});
parse('required keys are named (storage_devices is not: the DMS or the default gives devices, deviceSource.test.ts)', () => {
  const all = issues({});
  assert.equal(all.map((i) => i.key).sort(), ['node_name', 'production_port']);
  for (const i of all) assert.match(i.message, /is required/);
});
parse('unknown keys are refused with a suggestion', () => {
  oneIssue({ ...base, drive_stratgy: 'fill_first' }, 'drive_stratgy', /unknown key \(did you mean 'drive_strategy'\?\)/);
  oneIssue({ ...base, storage_devices: [{ name: 'a', address: '/a', type: 'dir', adress: 'x' }] }, 'storage_devices[0].adress', /did you mean 'address'/);
});
parse('each bad value names its key', () => {
  oneIssue({ ...base, node_name: 'bad name' }, 'node_name', /letters, digits/);
  oneIssue({ ...base, node_name: 7 }, 'node_name', /must be a string, got number 7/);
  oneIssue({ ...base, production_port: 70000 }, 'production_port', /port number 1..65535, got number 70000/);
  oneIssue({ ...base, production_port: '6987' }, 'production_port', /got '6987'/);
  oneIssue({ ...base, command_port: 0 }, 'command_port', /1..65535/);
  oneIssue({ ...base, observability_port: -1 }, 'observability_port', /0..65535/);
  oneIssue({ ...base, observability_port: 6987, production_ip: '127.0.0.1' }, 'observability_port', /must differ from production_port/);
  oneIssue({ ...base, production_ip: 'localhost' }, 'production_ip', /IPv4/);
  oneIssue({ ...base, dms_url: 'dms:6986' }, 'dms_url', /http\(s\) URL/);
  oneIssue({ ...base, drive_strategy: 'round-robin' }, 'drive_strategy', /one of 'round_robin', 'fill_first', 'most_free', got 'round-robin' \(did you mean 'round_robin'\?\)/);
  oneIssue({ ...base, filter_device_selector: 'fpga' }, 'filter_device_selector', /'gpu', 'cpu', 'host'/);
  oneIssue({ ...base, hash_offload_platform: 'qat' }, 'hash_offload_platform', /one of 'cpu'/);
  oneIssue({ ...base, use_ocf: 'yes' }, 'use_ocf', /true or false/);
  oneIssue({ ...base, reserve_bytes: 1.5 }, 'reserve_bytes', /whole number/);
  oneIssue({ ...base, production_interface: 'dpdk:tap0' }, 'production_interface', /'dpdk:tap0' is not dpdk:<vdev>: a DPDK virtual device such as dpdk:net_tap0,iface=hd0/);
});
parse('storage device problems', () => {
  oneIssue({ ...base, storage_devices: [] }, 'storage_devices', /non-empty list/);
  oneIssue({ ...base, storage_devices: 'd0' }, 'storage_devices', /non-empty list/);
  oneIssue({ ...base, storage_devices: [5] }, 'storage_devices[0]', /must be an object/);
  oneIssue({ ...base, storage_devices: [{ name: 'a', address: '/a', type: 'tape' }] }, 'storage_devices[0].type', /'nvme', 'ssd', 'hdd', 'dir', got 'tape'/);
  oneIssue({ ...base, storage_devices: [{ name: 'a', address: '0000:03:00.0', type: 'nvme' }] }, 'storage_devices[0].address', /PCIe address/);
  oneIssue({ ...base, storage_devices: [{ name: 'a', type: 'nvme' }] }, 'storage_devices[0].address', /directory path, got nothing/);
  oneIssue({ ...base, storage_devices: [{ address: '/a', type: 'nvme' }] }, 'storage_devices[0].name', /got nothing/);
  oneIssue(
    { ...base, storage_devices: [{ name: 'a', address: '/a', type: 'ssd' }, { name: 'a', address: '/b', type: 'ssd' }] },
    'storage_devices[1].name',
    /'a' names two devices/,
  );
  oneIssue(
    { ...base, storage_devices: [{ name: 'a', address: '/x/a', type: 'ssd' }, { name: 'b', address: '/x/../x/a', type: 'ssd' }] },
    'storage_devices[1].address',
    /also the address of device 'a'/,
  );
});
parse('OCF lists', () => {
  const noCache = issues({ ...base, use_ocf: true, ocf_core_devices: ['d1'] });
  assert.equal(
    noCache.map((i) => i.key),
    ['ocf_cache_devices', 'storage_devices'],
  );
  assert.match(noCache[0].message, /at least one device when use_ocf/);
  assert.match(noCache[1].message, /'d0' is in neither/);
  oneIssue({ ...base, use_ocf: true, ocf_cache_devices: ['d0'], ocf_core_devices: ['d1', 'd9'] }, 'ocf_core_devices[1]', /names no device of storage_devices: 'd9'/);
  oneIssue({ ...base, use_ocf: true, ocf_cache_devices: ['d0'], ocf_core_devices: ['d1', 'd0'] }, 'ocf_core_devices', /both a cache and a core device/);
  oneIssue({ ...base, ocf_cache_devices: 'd0' }, 'ocf_cache_devices', /list of device names/);
  const three = { ...base, storage_devices: [...base.storage_devices, { name: 'd2', address: '/d2', type: 'hdd' }] };
  oneIssue({ ...three, use_ocf: true, ocf_cache_devices: ['d0'], ocf_core_devices: ['d1'] }, 'storage_devices', /'d2' is in neither/);
  // Without use_ocf the lists are only checked for names.
  assert.is(parseStorageNodeConfig({ ...base, ocf_cache_devices: ['d0'] }).useOcf, false);
});
parse('every problem is reported at once', () => {
  const all = issues({ node_name: '', production_port: 0, storage_devices: [{ name: 'a', address: '', type: 'x' }], bogus: 1 });
  assert.equal(all.map((i) => i.key).sort(), ['bogus', 'node_name', 'production_port', 'storage_devices[0].address', 'storage_devices[0].type']);
});
parse.run();

const load = suite('loadStorageNodeConfig');
load('reads JSON; relative addresses resolve against the file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sncfg-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(base));
  const c = loadStorageNodeConfig(file);
  assert.is(c.storageDevices[1].address, path.join(dir, 'rel/d1'));
});
load('unreadable and non-JSON files', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sncfg-'));
  const file = path.join(dir, 'config.json');
  assert.throws(() => loadStorageNodeConfig(file), (e: unknown) => e instanceof ConfigError && /cannot be read/.test(e.message));
  writeFileSync(file, '{ "node_name": ');
  assert.throws(() => loadStorageNodeConfig(file), (e: unknown) => e instanceof ConfigError && /is not JSON/.test(e.message) && e.message.startsWith(file));
});
load.run();
