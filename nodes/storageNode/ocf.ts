/**
 * The OCF read tier on the kernel path (`use_ocf: true`, docs/storage-node.md "OCF"): segments are
 * written to the core devices only; a read looks on the batch's cache device first and, on a miss,
 * copies the core segment there (copy to `<name>.partial`, rename) and reads the copy from then on.
 * The cache holds copies only: losing it loses nothing, and start-up recovery treats a torn copy
 * like any damaged segment.
 */
import { createHash } from 'node:crypto';
import { access, copyFile, mkdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { BatchEntry } from './batchIndex';
import type { StorageDevice } from './devices';

/** Where a read goes. */
export interface ReadLocation {
  readonly path: string;
  /** Which tier served it: a cache copy already there, one just made, or the core device. */
  readonly tier: 'cache-hit' | 'cache-fill' | 'core';
}

/** Cache devices in front of the core devices, for reads. */
export class OcfReadCache {
  private readonly filling = new Map<string, Promise<ReadLocation>>();
  /** Reads served from a cache copy that was already there. */
  hits = 0;
  /** Reads that filled the cache. */
  fills = 0;
  /** Reads served from the core device (cache device full, or the copy failed). */
  bypasses = 0;

  /** @param devices cache devices; `reserveBytes`: a cache device at or under it takes no new copies */
  constructor(
    readonly devices: readonly StorageDevice[],
    private readonly reserveBytes: number,
  ) {
    if (devices.length === 0) throw new RangeError('an OCF read cache needs at least one cache device');
  }

  /** The cache device of a batch: fixed by its id, so a lookup is one file check. */
  deviceFor(entry: BatchEntry): StorageDevice {
    const h = createHash('sha256').update(entry.batchId.bytes).digest();
    return this.devices[h.readUInt32BE(0) % this.devices.length];
  }

  /** Where the cache copy of a batch is (or would be). */
  cachePath(entry: BatchEntry): string {
    return path.join(this.deviceFor(entry).datasetDir(entry.dataset), path.basename(entry.path));
  }

  /** The file to read a batch from, filling the cache on a miss. */
  async resolve(entry: BatchEntry): Promise<ReadLocation> {
    const target = this.cachePath(entry);
    if (await exists(target)) {
      this.hits++;
      return { path: target, tier: 'cache-hit' };
    }
    // Concurrent readers of one batch share one copy.
    let p = this.filling.get(target);
    if (!p) {
      p = this.fill(entry, target).finally(() => this.filling.delete(target));
      this.filling.set(target, p);
    }
    return p;
  }

  private async fill(entry: BatchEntry, target: string): Promise<ReadLocation> {
    const dev = this.deviceFor(entry);
    if ((await dev.freeBytes()) <= this.reserveBytes) {
      this.bypasses++;
      return { path: entry.path, tier: 'core' };
    }
    const partial = `${target}.partial`;
    try {
      await mkdir(path.dirname(target), { recursive: true });
      await copyFile(entry.path, partial);
      await rename(partial, target);
    } catch {
      // A cache that cannot take the copy is bypassed, never an error for the reader.
      await unlink(partial).catch(() => undefined);
      this.bypasses++;
      return { path: entry.path, tier: 'core' };
    }
    this.fills++;
    return { path: target, tier: 'cache-fill' };
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}
