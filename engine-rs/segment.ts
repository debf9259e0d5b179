import path from 'node:path';
import { BatchID } from './batchId';
import { DEFAULT_HASH_CHAIN_BLOCK_SIZE, isHashAlgorithm, type HashAlgorithmName } from './hashChain';
import { native, type SegmentWriterHandle } from './native';
import { segmentCall, toSegmentError } from './segmentError';
import { encodeZoneFields, type ZoneField } from './segmentZones';

/** Extension of a complete segment file. */
export const SEGMENT_EXT = '.hdseg';

/**
 * How a segment's bytes reach its file (docs/segment.md, "Direct I/O"): `buffered` through the page
 * cache, `direct` with O_DIRECT around it, `uring` with O_DIRECT writes submitted through io_uring
 * (several in flight, fsync through the ring). The file and its durability are the same either way.
 */
export type SegmentIo = 'buffered' | 'direct' | 'uring';
/** Every segment I/O mode, the default first. */
export const SEGMENT_IO_MODES: readonly SegmentIo[] = ['buffered', 'direct', 'uring'];

/** Settings of one segment: the batch it holds and how its records are laid out and chained. */
export interface SegmentWriterOptions {
  /** Directory the segment goes in (must exist). */
  readonly dir: string;
  /** File name ending in `.hdseg`; default `segmentFileName(batchId)`. */
  readonly name?: string;
  readonly datasetId: string;
  readonly batchId: BatchID | Uint8Array;
  /** Bytes per record; also where the hash chain splits (RECORD_SIZE). */
  readonly recordSize: number;
  /** Record hashes per chain block (HASH_CHAIN_BLOCK_SIZE); default 64. */
  readonly blockSize?: number;
  /** Default `sha512`. */
  readonly algorithm?: HashAlgorithmName;
  /** Fields to keep zone maps for (see `zoneFields` in segmentZones.ts); default none. */
  readonly fields?: readonly ZoneField[];
  /** Default `buffered`; `direct` falls back to `buffered` where the file system refuses O_DIRECT, `uring` to `direct` where the kernel refuses io_uring (see `SegmentWriter.io`). */
  readonly io?: SegmentIo;
}

/** A finished, durable segment. */
export interface SegmentSummary {
  readonly path: string;
  readonly records: number;
  readonly blocks: number;
  readonly closingHash: Buffer;
  /** File size in bytes. */
  readonly bytes: number;
}

/** The default file name of a batch's segment: the batch id in hex plus `.hdseg`. */
export function segmentFileName(batchId: BatchID | Uint8Array): string {
  return Buffer.from(batchId instanceof BatchID ? batchId.bytes : batchId).toString('hex') + SEGMENT_EXT;
}

/**
 * Writes one batch's segment (docs/segment.md). Records stream in through `append` — hashed into
 * the batch's chain and written on libuv's pool, in call order — and `finish` checks the SCC's
 * closing hash, writes the footer, fsyncs, renames `<name>.partial` to `<name>` and fsyncs the
 * directory: the batch is visible only once complete and durable.
 *
 * @example
 * const w = SegmentWriter.create({ dir, datasetId: 'trades', batchId, recordSize: 150 });
 * await w.append(records);
 * const { path } = await w.finish(closingHashFromScc);
 */
export class SegmentWriter {
  private closed = false;

  private constructor(
    private readonly handle: SegmentWriterHandle,
    /** Where the complete segment will be. */
    readonly path: string,
    /** How this segment is written: the mode it fell back to when `uring` or `direct` was asked for and refused. */
    readonly io: SegmentIo,
  ) {}

  /** Creates `<dir>/<name>.partial` and writes its header. Throws `SegmentError` (e.g. ERR_SEGMENT_EXISTS). */
  static create(opts: SegmentWriterOptions): SegmentWriter {
    const algorithm = opts.algorithm ?? 'sha512';
    if (!isHashAlgorithm(algorithm)) throw new RangeError(`unknown hash algorithm ${String(algorithm)}`);
    const id = opts.batchId instanceof BatchID ? opts.batchId.bytes : opts.batchId;
    const name = opts.name ?? segmentFileName(id);
    try {
      const handle = native.segmentWriterCreate(
        opts.dir,
        name,
        opts.datasetId,
        id,
        opts.recordSize,
        opts.blockSize ?? DEFAULT_HASH_CHAIN_BLOCK_SIZE,
        algorithm,
        encodeZoneFields(opts.fields ?? []),
        opts.io ?? 'buffered',
      );
      return new SegmentWriter(handle, path.join(opts.dir, name), native.segmentWriterIo(handle));
    } catch (err) {
      throw toSegmentError(err);
    }
  }

  /** Appends the batch's next bytes (copied before this returns); records may span calls. */
  append(buf: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new Error('SegmentWriter.append after finish or abort'));
    return segmentCall(() => native.segmentWriterAppend(this.handle, buf));
  }

  /**
   * Completes the segment after every queued append. With `expectedClosingHash` (the SCC's), a
   * mismatch rejects with ERR_SEGMENT_CLOSING_HASH and removes the partial file.
   */
  finish(expectedClosingHash?: Uint8Array | null): Promise<SegmentSummary> {
    if (this.closed) return Promise.reject(new Error('SegmentWriter.finish called twice or after abort'));
    this.closed = true;
    return segmentCall(() => native.segmentWriterFinish(this.handle, expectedClosingHash ?? null));
  }

  /** Abandons the batch: queued appends are dropped and the partial file removed. */
  abort(): Promise<void> {
    this.closed = true;
    return native.segmentWriterAbort(this.handle);
  }
}

/**
 * Whether files in `dir` take O_DIRECT (creates and removes one hidden probe file). False on file
 * systems that refuse it (ramfs, some FUSE and overlay file systems, tmpfs before Linux 6.6).
 */
export function directIoSupported(dir: string): boolean {
  try {
    return native.segmentDirectIoSupported(dir);
  } catch (err) {
    throw toSegmentError(err);
  }
}

/**
 * Why segments in `dir` cannot be written through io_uring, or null when they can: sets up a ring
 * and writes and fsyncs one O_DIRECT block of a hidden probe file through it (removed again). A
 * refusal names its cause: the io_uring_disabled sysctl, a seccomp filter, an old kernel, or a file
 * system that refuses O_DIRECT.
 */
export function uringIoRefusal(dir: string): string | null {
  try {
    return native.segmentUringIoRefusal(dir);
  } catch (err) {
    throw toSegmentError(err);
  }
}

/** Outcome of `verifySegment`. */
export type SegmentVerification =
  | { readonly ok: true; readonly records: number; readonly blocks: number; readonly closingHash: Buffer }
  | { readonly ok: false; readonly code: string; readonly message: string };

/**
 * Recomputes the hash chain over every record of a segment and compares it with the footer's
 * block hashes and closing hash (the reference's verify_hash). Damage resolves `ok: false`.
 */
export function verifySegment(path: string): Promise<SegmentVerification> {
  return segmentCall(() => native.segmentVerify(path));
}

/** What crash recovery found and did in a segment directory. */
export interface SegmentRecovery {
  /** Complete segments that verified. */
  readonly complete: string[];
  /** Partial files (batches never committed, so never acknowledged) that were deleted. */
  readonly discarded: string[];
  /** Damaged segments moved to `quarantine/`, never served. */
  readonly quarantined: { readonly path: string; readonly code: string; readonly reason: string }[];
}

/**
 * Recovers a segment directory at start-up (docs/segment.md, "Recovery"): deletes `.partial`
 * files, verifies complete segments (every chain unless `verifyChains: false`, which checks only
 * header, footer and layout) and quarantines the damaged ones.
 */
export function recoverSegments(dir: string, opts: { readonly verifyChains?: boolean } = {}): Promise<SegmentRecovery> {
  return segmentCall(() => native.segmentRecover(dir, opts.verifyChains ?? true));
}
