/**
 * RECORD_CACHE_BYTES (`record_cache_bytes` of the Storage Node's `scan` stage): how many record
 * bytes the node keeps in memory, CRC-checked, for scans (issue #17; engine-rs
 * `segment::record_cache`). A warm filtered aggregate spent two thirds of its scan reading blocks
 * out of the page cache and checking their CRCs again; pieces kept here skip both. Not a reference
 * variable (the reference names no read cache).
 */
import { DEFAULT_RECORD_CACHE_BYTES, recordCacheStats, setRecordCacheBytes } from '../../engine-rs/recordCache';
import type { Observability } from '../../lib/observability';
import { byteSize, type Setting } from '../../pipelines/settings';

/** The setting: 512 MiB by default, 0 turns the cache off (every read goes to the file). */
export function recordCacheSetting(): Setting<number> {
  return byteSize({
    doc: 'record bytes kept in memory, CRC-checked, for scans that read the same batches again — RECORD_CACHE_BYTES; least recently used pieces go first; 0: off (every scan reads and checks the file); verify_hash audits always read the file',
    default: DEFAULT_RECORD_CACHE_BYTES,
    min: 0,
    max: 2 ** 40,
  });
}

/**
 * Sizes the process's record cache from the setting and shows its use in /health's `recordCache`
 * part (limit, bytes, pieces, hits, misses). Returns the limit in force.
 */
export function applyRecordCache(bytes: number, observability: Observability): number {
  const limit = setRecordCacheBytes(bytes);
  observability.addHealthPart('recordCache', () => ({ ...recordCacheStats() }));
  return limit;
}
