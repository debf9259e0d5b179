/**
 * What the Storage Node's direct and io_uring device tests share (directIo.test.ts, uringIo.test.ts):
 * a config's issues as the edge reports them, a ramfs (it refuses O_DIRECT on every kernel), and a
 * Storage Node whose one device is a ramfs.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as assert from 'uvu/assert';
import type { SegmentIo } from '../../../engine-rs/index';
import { ConfigError, parseStorageNodeConfig } from '../../../nodes/storageNode/config';
import { StorageNode } from '../../../nodes/storageNode/node';

/** The issues (`key: message`) parsing a config of node `sn` with `raw`'s keys reports; none when it parses. */
export function issues(raw: Record<string, unknown>): string[] {
  try {
    parseStorageNodeConfig({ node_name: 'sn', production_port: 6987, ...raw }, { baseDir: '/srv' });
  } catch (err) {
    assert.instance(err, ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.key}: ${i.message}`);
  }
  return [];
}

/** A ramfs (refuses O_DIRECT on every kernel) mounted at `dir`; false where this process may not mount. */
export function mountRamfs(dir: string): boolean {
  return spawnSync('mount', ['-t', 'ramfs', 'ramfs', dir]).status === 0;
}

/** A Storage Node (not started) whose one device, `ram`, is a ramfs. */
export interface RamfsNode {
  /** The ramfs mount point (the device's address). */
  readonly dev: string;
  /** The node's log lines so far. */
  readonly logs: string[];
  readonly node: StorageNode;
  /** Stops the node, unmounts the ramfs and removes its directory. */
  close(): Promise<void>;
}

/**
 * A node named `nodeName` on a ramfs device `ram` configured for `io` (sha512, 8-record blocks), in a
 * new temp directory named after `tag`; undefined, said on stderr, where this process may not mount.
 */
export function ramfsNode(tag: string, nodeName: string, io: SegmentIo): RamfsNode | undefined {
  const root = mkdtempSync(path.join(os.tmpdir(), `hd-${tag}-`));
  const dev = path.join(root, 'ram');
  mkdirSync(dev);
  if (!mountRamfs(dev)) {
    console.warn('cannot mount a ramfs here (needs root): the refusal path is covered by the engine-rs tests only');
    rmSync(root, { recursive: true, force: true });
    return undefined;
  }
  const logs: string[] = [];
  const cfg = parseStorageNodeConfig(
    { node_name: nodeName, production_port: 6987, production_ip: '127.0.0.1', observability_port: 0, reserve_bytes: 0, storage_devices: [{ name: 'ram', address: dev, type: 'dir', io }] },
    { baseDir: root },
  );
  // A ramfs reports no free space (statfs); the drive strategy is not what these tests are about.
  const node = new StorageNode({ config: cfg, algorithm: 'sha512', blockSize: 8, log: (l) => logs.push(l), freeSpace: async () => 1 << 30 });
  return {
    dev,
    logs,
    node,
    close: async () => {
      await node.stop();
      spawnSync('umount', [dev]);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
