import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { datasetDirName, DevicePool, DevicesFullError, StorageDevice, statfsFree } from '../../../nodes/storageNode/devices';

/** Devices a..c whose free bytes the test sets. */
function fixture(free: Record<string, number>): { devices: StorageDevice[]; free: Record<string, number> } {
  const devices = Object.keys(free).map((n) => new StorageDevice(n, 'dir', `/dev-${n}`, async (dir) => free[dir.slice(5)]));
  return { devices, free };
}

async function picks(pool: DevicePool, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await pool.pick()).name);
  return out;
}

const strategies = suite('DevicePool strategies');
strategies('round_robin cycles in config order and skips full devices', async () => {
  const { devices, free } = fixture({ a: 100, b: 100, c: 100 });
  const pool = new DevicePool(devices, 'round_robin', 10);
  assert.equal(await picks(pool, 4), ['a', 'b', 'c', 'a']);
  free.c = 10; // at the reserve: full
  assert.equal(await picks(pool, 3), ['b', 'a', 'b']);
});
strategies('fill_first uses the first device until it is full', async () => {
  const { devices, free } = fixture({ a: 100, b: 100, c: 100 });
  const pool = new DevicePool(devices, 'fill_first', 10);
  assert.equal(await picks(pool, 3), ['a', 'a', 'a']);
  free.a = 5;
  assert.equal(await picks(pool, 2), ['b', 'b']);
  free.b = 10;
  assert.equal(await picks(pool, 1), ['c']);
});
strategies('most_free takes the device with the most free bytes, ties in config order', async () => {
  const { devices, free } = fixture({ a: 100, b: 300, c: 300 });
  const pool = new DevicePool(devices, 'most_free', 10);
  assert.equal(await picks(pool, 2), ['b', 'b']);
  free.b = 299;
  assert.equal(await picks(pool, 1), ['c']);
  free.a = 1000;
  assert.equal(await picks(pool, 1), ['a']);
});
strategies('every device full: DevicesFullError with the free bytes', async () => {
  for (const s of ['round_robin', 'fill_first', 'most_free'] as const) {
    const { devices } = fixture({ a: 10, b: 3 });
    const pool = new DevicePool(devices, s, 10);
    try {
      await pool.pick();
      assert.unreachable(s);
    } catch (err) {
      assert.instance(err, DevicesFullError);
      assert.equal([...(err as DevicesFullError).free], [
        ['a', 10],
        ['b', 3],
      ]);
      assert.match((err as Error).message, /10-byte reserve/);
    }
  }
});
strategies('an empty pool is refused', () => {
  assert.throws(() => new DevicePool([], 'round_robin', 0), /at least one device/);
});
strategies.run();

const device = suite('StorageDevice');
device('prepare creates a missing directory; statfs reports free bytes', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hd-dev-'));
  const d = new StorageDevice('d0', 'dir', path.join(root, 'deep', 'd0'));
  await d.prepare();
  assert.ok(existsSync(d.dir));
  const free = await d.freeBytes();
  assert.ok(Number.isSafeInteger(free) && free > 0);
  assert.is(free, await statfsFree(d.dir));
});
device('dataset directory names', () => {
  assert.is(datasetDirName('trades'), 'trades');
  assert.is(datasetDirName('flows.v2-x_y'), 'flows.v2-x_y');
  for (const odd of ['../etc', 'a/b', '.hidden', 'quarantine', 'ünïcode', 'x'.repeat(101), '']) {
    const n = datasetDirName(odd);
    assert.match(n, /^_[0-9a-f]{32}$/, odd);
  }
  assert.is.not(datasetDirName('a/b'), datasetDirName('a/c'));
  assert.is(new StorageDevice('d', 'ssd', '/x').datasetDir('trades'), '/x/trades');
});
device.run();
