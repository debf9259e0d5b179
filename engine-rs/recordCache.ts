/**
 * The record cache of this process (engine-rs `segment::record_cache`): pieces of segment records
 * kept in memory after every block in them passed its CRC-32C, so scans that read the same batches
 * again skip the read, the copy out of the page cache and the checksum. A piece belongs to one
 * unchanged file; least recently used pieces go first; audits (verify_hash) always read the file.
 * Beside the pieces it keeps narrow copies of them, the few bytes of each record a filter loads
 * (and a filtered aggregate reads).
 */
import { native } from './native';

/** The cache's limit until the process sets one: 512 MiB. */
export const DEFAULT_RECORD_CACHE_BYTES = 512 * 1024 * 1024;

/** What the record cache holds and how it has served since the process started. */
export interface RecordCacheStats {
  /** Most bytes kept (0: off). */
  readonly limit: number;
  /** Record bytes kept now. */
  readonly bytes: number;
  /** Pieces kept now. */
  readonly pieces: number;
  /** Pieces scans found in the cache. */
  readonly hits: number;
  /** Pieces scans read from a file. */
  readonly misses: number;
  /**
   * Bytes of narrow copies kept now: a kept piece cut down to the bytes a filter loads (and a
   * filtered aggregate reads), which the scan runs over (engine-rs `scan/projection.rs`); within
   * an eighth of the limit, beside it.
   */
  readonly narrowBytes: number;
  /** Narrow copies kept now. */
  readonly narrowPieces: number;
}

/**
 * Sets how many record bytes this process keeps (0: none, every read goes to the file; a lower
 * limit drops the least recently used pieces at once). Returns the limit in force.
 */
export function setRecordCacheBytes(bytes: number): number {
  return native.setRecordCacheBytes(bytes);
}

/** The record cache's limit, use, hits and misses. */
export function recordCacheStats(): RecordCacheStats {
  return native.recordCacheStats();
}
