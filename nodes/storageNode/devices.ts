/**
 * Storage devices and drive strategies (docs/storage-node.md). On the kernel path a device is a
 * directory on a mounted file system; segments go in `<device>/<dataset dir>/<batch>.hdseg`.
 */
import { createHash } from 'node:crypto';
import { mkdir, statfs } from 'node:fs/promises';
import path from 'node:path';
import { directIoSupported, uringIoRefusal, type SegmentIo } from '../../engine-rs/index';
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
  /** How segments are written here now: `io` until a refusal makes it the next mode down (uring, direct, buffered). */
  private inEffect: SegmentIo;
  /** Why the configured mode was refused here, once it was (probe at `prepare`, or a writer that fell back). */
  private refusal: string | undefined;

  /** @param freeSpace how free bytes are measured (default statfs; tests pass their own) */
  constructor(
    readonly name: string,
    readonly type: DeviceType,
    /** Absolute directory of the device. */
    readonly dir: string,
    private readonly freeSpace: FreeSpace = statfsFree,
    /** How segments are written here, as configured (`direct`: O_DIRECT; `uring`: O_DIRECT through io_uring). */
    readonly io: SegmentIo = 'buffered',
  ) {
    this.inEffect = io;
  }

  /** From a validated config entry. */
  static fromConfig(c: StorageDeviceConfig, freeSpace?: FreeSpace): StorageDevice {
    return new StorageDevice(c.name, c.type, c.address, freeSpace, c.io ?? 'buffered');
  }

  /** How segments are written here now: the configured mode, or the one it fell back to when refused. */
  get ioInEffect(): SegmentIo {
    return this.inEffect;
  }

  /** Whether the configured `uring` or `direct` was refused here (see {@link ioRefusal}). */
  get ioRefused(): boolean {
    return this.refusal !== undefined;
  }

  /** Why the configured mode was refused, in words (e.g. "the kernel refuses io_uring (…)"); undefined while it is in effect. */
  get ioRefusal(): string | undefined {
    return this.refusal;
  }

  /** What was refused, for the start-up line: `io_uring refused`, `io_uring and O_DIRECT refused` or `O_DIRECT refused`. */
  get ioRefusedNote(): string | undefined {
    if (!this.refusal) return undefined;
    if (this.io === 'uring') return this.inEffect === 'direct' ? 'io_uring refused' : 'io_uring and O_DIRECT refused';
    return 'O_DIRECT refused';
  }

  /**
   * Creates the device directory if it is missing and checks the configured mode: for `direct` that
   * the file system takes O_DIRECT, for `uring` that the kernel sets up an io_uring and an O_DIRECT
   * write and fsync through it succeed (one probe file each). A refusal makes the device write with
   * the next mode down (uring: direct, else buffered; direct: buffered), see {@link ioRefusal}.
   */
  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    if (this.io === 'uring') {
      const why = uringIoRefusal(this.dir);
      if (why !== null) this.fallBack(directIoSupported(this.dir) ? 'direct' : 'buffered', why);
    } else if (this.io === 'direct' && !directIoSupported(this.dir)) {
      this.fallBack('buffered', 'its file system refuses O_DIRECT');
    }
  }

  private fallBack(to: SegmentIo, why: string): void {
    this.inEffect = to;
    this.refusal = why;
  }

  /**
   * Records the mode a new segment writer got here: a mode below the one in effect means a refusal
   * after start-up (a dataset directory on another mount refusing O_DIRECT, or a ring the kernel
   * would not set up); the device writes with that mode from then on. True when the mode stepped
   * down (at most twice: uring, direct, buffered), so the caller reports each step once.
   */
  noteWriterIo(io: SegmentIo): boolean {
    if (io === this.inEffect) return false;
    const why =
      this.inEffect === 'uring' && io === 'direct'
        ? 'the kernel would not set up an io_uring for a segment writer'
        : this.io === 'uring'
          ? "the file system of a segment's directory refuses O_DIRECT, which io_uring writes need"
          : 'its file system refuses O_DIRECT';
    this.fallBack(io, why);
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

/** The log line for a device whose configured `uring` or `direct` was refused (said once per device). */
export function ioRefusedLine(nodeName: string, d: StorageDevice): string {
  const now = d.ioInEffect === 'direct' ? 'direct (O_DIRECT without io_uring)' : 'buffered (through the page cache)';
  return `storage node '${nodeName}': device '${d.name}' (${d.dir}) is configured for io '${d.io}' but ${d.ioRefusal ?? 'it was refused'}; its segments are written ${now}`;
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
