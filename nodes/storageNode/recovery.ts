/**
 * Crash recovery at Storage Node start-up (docs/segment.md "Recovery", docs/storage-node.md):
 * every dataset directory of every device goes through `recoverSegments` — partial segments of
 * batches that never committed are deleted, complete ones verified, damaged ones quarantined — and
 * the segments that verified are indexed from their headers and footers.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { recoverSegments, SegmentReader } from '../../engine-rs/index';
import { BatchIndex } from './batchIndex';
import type { StorageDevice } from './devices';

/** A quarantined segment and why. */
export interface QuarantinedSegment {
  readonly device: string;
  readonly path: string;
  readonly code: string;
  readonly reason: string;
}

/** What recovery found on all devices. */
export interface RecoverySummary {
  /** Complete segments that verified (and were indexed, for write devices). */
  readonly complete: number;
  /** Partial segments deleted (never committed, so never acknowledged). */
  readonly discarded: readonly string[];
  readonly quarantined: readonly QuarantinedSegment[];
  /** Segments of a batch already indexed from another device: left in place, not indexed twice. */
  readonly duplicates: readonly string[];
  /** Wall time of the recovery in milliseconds. */
  readonly ms: number;
}

/** Options of {@link recoverDevices}. */
export interface RecoverOptions {
  /** Recompute every chain (default true); false checks header, footer and layout only. */
  readonly verifyChains?: boolean;
  /** Devices whose segments are copies (OCF cache devices): recovered but not indexed. */
  readonly cacheDevices?: readonly StorageDevice[];
}

/**
 * Recovers every dataset directory on `devices` (created if missing) and adds each complete
 * segment to `index`. Runs before the node accepts batches.
 */
export async function recoverDevices(devices: readonly StorageDevice[], index: BatchIndex, opts: RecoverOptions = {}): Promise<RecoverySummary> {
  const started = Date.now();
  const discarded: string[] = [];
  const quarantined: QuarantinedSegment[] = [];
  const duplicates: string[] = [];
  let complete = 0;
  const all = [...devices.map((d) => ({ d, cache: false })), ...(opts.cacheDevices ?? []).map((d) => ({ d, cache: true }))];
  for (const { d, cache } of all) {
    await d.prepare();
    for (const dir of await datasetDirs(d.dir)) {
      const r = await recoverSegments(dir, { verifyChains: opts.verifyChains ?? true });
      discarded.push(...r.discarded);
      for (const q of r.quarantined) quarantined.push({ device: d.name, ...q });
      complete += r.complete.length;
      if (cache) continue;
      for (const p of r.complete) {
        const reader = await SegmentReader.open(p);
        const prior = index.get(reader.datasetId, reader.batchId);
        if (prior) {
          duplicates.push(p);
          continue;
        }
        const { size } = await stat(p);
        index.add({
          dataset: reader.datasetId,
          batchId: reader.batchId,
          path: p,
          device: d.name,
          records: reader.records,
          bytes: size,
          closingHash: reader.closingHash,
        });
      }
    }
  }
  return { complete, discarded, quarantined, duplicates, ms: Date.now() - started };
}

/** One line for the log. */
export function formatRecovery(r: RecoverySummary, indexed: number): string {
  const parts = [
    `${r.complete} complete segment${r.complete === 1 ? '' : 's'} verified (${indexed} batch${indexed === 1 ? '' : 'es'} indexed)`,
    `${r.discarded.length} partial${r.discarded.length === 1 ? '' : 's'} discarded`,
    `${r.quarantined.length} quarantined`,
  ];
  if (r.duplicates.length > 0) parts.push(`${r.duplicates.length} duplicate${r.duplicates.length === 1 ? '' : 's'} ignored`);
  const q = r.quarantined.map((x) => `${x.path}: ${x.code}`).join('; ');
  return `recovery: ${parts.join(', ')} in ${r.ms} ms${q ? ` — quarantined: ${q}` : ''}`;
}

/** Sub-directories of a device directory (one per dataset). */
async function datasetDirs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => path.join(dir, e.name))
    .sort();
}
