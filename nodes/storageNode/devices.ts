/**
 * Storage devices and drive strategies (docs/storage-node.md). On the kernel path a device is a
 * directory on a mounted file system; segments go in `<device>/<dataset dir>/<batch>.hdseg`.
 */
import { createHash } from 'node:crypto';
import { mkdir, statfs } from 'node:fs/promises';
import path from 'node:path';
import { directIoSupported, type SegmentIo } from '../../engine-rs/index';
import type { DeviceType, DriveStrategy, StorageDeviceConfig } from './config';

/** Free space of a device's file system in bytes (as an unprivileged process may use it). */
export type FreeSpace = (dir: string) => Promise<number>;

/** `statfs` of the directory: available blocks × block size. */
export const statfsFree: FreeSpace = async (dir) => {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
};

/** One storage device: its name, type and I/O mode from the config and the directory it stores in. */
export class StorageDevice {
  /** Set once the device's file system refused O_DIRECT (probe at `prepare`, or a writer that fell back). */
  private directRefused = false;

  /** @param freeSpace how free bytes are measured (default statfs; tests pass their own) */
  constructor(
    readonly name: string,
    readonly type: DeviceType,
    /** Absolute directory of the device. */
    readonly dir: string,
    private readonly freeSpace: FreeSpace = statfsFree,
    /** How segments are written here, as configured (`direct`: O_DIRECT). */
    readonly io: SegmentIo = 'buffered',
  ) {}

  /** From a validated config entry. */
  static fromConfig(c: StorageDeviceConfig, freeSpace?: FreeSpace): StorageDevice {
    return new StorageDevice(c.name, c.type, c.address, freeSpace, c.io ?? 'buffered');
  }

  /** How segments are written here now: `buffered` when configured so or when the file system refused O_DIRECT. */
  get ioInEffect(): SegmentIo {
    return this.io === 'direct' && !this.directRefused ? 'direct' : 'buffered';
  }

  /** Whether `direct` was configured and the file system refused it. */
  get directIoRefused(): boolean {
    return this.directRefused;
  }

  /**
   * Creates the device directory if it is missing and, for `direct`, checks that its file system
   * takes O_DIRECT (one probe file); a refusal makes the device write buffered, see {@link directIoRefused}.
   */
  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    if (this.io === 'direct') this.directRefused = !directIoSupported(this.dir);
  }

  /**
   * Records the mode a new segment writer got here: `buffered` under a `direct` device means the
   * file system refused O_DIRECT after all (e.g. a dataset directory on another mount). True the
   * first time, so the caller reports it once.
   */
  noteWriterIo(io: SegmentIo): boolean {
    if (this.io !== 'direct' || io === 'direct' || this.directRefused) return false;
    this.directRefused = true;
    return true;
  }

  /** Free bytes now. */
  freeBytes(): Promise<number> {
    return this.freeSpace(this.dir);
  }

  /** The directory of a dataset's segments on this device (not created). */
  datasetDir(dataset: string): string {
    return path.join(this.dir, datasetDirName(dataset));
  }
}

/** The log line for a `direct` device whose file system refused O_DIRECT (said once per device). */
export function directRefusedLine(nodeName: string, d: StorageDevice): string {
  return `storage node '${nodeName}': device '${d.name}' (${d.dir}) is configured for io 'direct' but its file system refuses O_DIRECT; its segments are written buffered (through the page cache)`;
}

/**
 * The directory name of a dataset. Dataset ids are up to 255 bytes of any UTF-8, so an id that is
 * not a plain file name (or could be mistaken for one of ours) is stored under `_` + the first 32
 * hex digits of its SHA-256; recovery reads the real id back from each segment's header.
 */
export function datasetDirName(dataset: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(dataset) && dataset !== 'quarantine') return dataset;
  return '_' + createHash('sha256').update(dataset, 'utf8').digest('hex').slice(0, 32);
}

/** No device can take a new batch: every one is at or under its reserve. */
export class DevicesFullError extends Error {
  /** Free bytes per device when the pick failed. */
  readonly free: ReadonlyMap<string, number>;

  /** @param free free bytes per device name */
  constructor(free: ReadonlyMap<string, number>, reserve: number) {
    const list = [...free].map(([n, b]) => `${n} ${b} B`).join(', ');
    super(`no storage device has more than the ${reserve}-byte reserve free (${list})`);
    this.name = 'DevicesFullError';
    this.free = free;
  }
}

/**
 * The devices new batches are written to and the strategy that picks one per batch:
 * - `round_robin`: the next device in config order after the last pick, skipping full ones;
 * - `fill_first`: the first device in config order that is not full (fills devices one by one);
 * - `most_free`: the device with the most free bytes (ties: config order).
 * A device is full when its free bytes are at or under `reserveBytes`.
 */
export class DevicePool {
  private next = 0;

  /** @param devices write targets in config order (non-empty) */
  constructor(
    readonly devices: readonly StorageDevice[],
    readonly strategy: DriveStrategy,
    readonly reserveBytes: number,
  ) {
    if (devices.length === 0) throw new RangeError('a device pool needs at least one device');
  }

  /** The device for a new batch; rejects with {@link DevicesFullError} when every device is full. */
  async pick(): Promise<StorageDevice> {
    const free = await Promise.all(this.devices.map((d) => d.freeBytes()));
    const usable = (i: number): boolean => free[i] > this.reserveBytes;
    const n = this.devices.length;
    let chosen = -1;
    switch (this.strategy) {
      case 'round_robin':
        for (let k = 0; k < n && chosen < 0; k++) {
          const i = (this.next + k) % n;
          if (usable(i)) chosen = i;
        }
        if (chosen >= 0) this.next = (chosen + 1) % n;
        break;
      case 'fill_first':
        chosen = free.findIndex((_, i) => usable(i));
        break;
      case 'most_free':
        for (let i = 0; i < n; i++) if (usable(i) && (chosen < 0 || free[i] > free[chosen])) chosen = i;
        break;
    }
    if (chosen < 0) throw new DevicesFullError(new Map(this.devices.map((d, i) => [d.name, free[i]])), this.reserveBytes);
    return this.devices[chosen];
  }
}
