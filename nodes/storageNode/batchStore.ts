/**
 * The Storage Node's write side: one `SegmentWriter` per open batch on the device the drive
 * strategy picks, committed on end-of-batch with the SCC's closing hash checked, discarded on a
 * bad batch notice (docs/storage-node.md, "Ingest"). The `segmentStore` sink drives it.
 */
import { mkdir } from 'node:fs/promises';
import type { BatchID } from '../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES, SegmentError, SegmentWriter, type HashAlgorithmName, type ZoneField } from '../../engine-rs/index';
import type { IngestMetrics } from '../../lib/observability';
import { BatchIndex, type BatchEntry } from './batchIndex';
import type { DevicePool, StorageDevice } from './devices';

/**
 * Error frame codes a Storage Node refuses a batch with (docs/hdwp.md). `refused` is code 10
 * (batch refused): the batch's content does not match what its eob claims (closing hash, record
 * count, record size), or it is already durable here with other content, so nothing was committed.
 */
export const BATCH_ERROR_CODES = {
  refused: HDWP_ERROR_FRAME_CODES.batchRefused,
  unsupported: HDWP_ERROR_FRAME_CODES.unsupported,
  internal: HDWP_ERROR_FRAME_CODES.internal,
  overloaded: HDWP_ERROR_FRAME_CODES.overloaded,
} as const;

/** A records chunk as the store takes it. */
export interface StoreChunk {
  readonly dataset: string;
  readonly batchId: BatchID;
  readonly recordSize: number;
  readonly count: number;
  readonly buf: Buffer;
}

/** What became of appended records. */
export type AppendOutcome =
  | { readonly written: true }
  /** `duplicate`: the batch is already durable here (a replica caught up twice); `failed`: the batch failed earlier. */
  | { readonly written: false; readonly reason: 'duplicate' | 'failed'; readonly message: string };

/** The answer to an eob or bbn, ready to become an ack. */
export type CloseOutcome =
  | { readonly ok: true; readonly closingHash: Buffer; readonly records: number; readonly existing: boolean; readonly path: string }
  | { readonly ok: false; readonly code: number; readonly message: string; readonly dropped: number };

/** The answer to a bbn. */
export type DiscardOutcome = { readonly ok: true; readonly dropped: number } | { readonly ok: false; readonly code: number; readonly message: string; readonly dropped: number };

/** Options of {@link BatchStore}. */
export interface BatchStoreOptions {
  readonly pool: DevicePool;
  readonly index: BatchIndex;
  /** HASH_ALGORITHM: must be the SCC's. */
  readonly algorithm: HashAlgorithmName;
  /** HASH_CHAIN_BLOCK_SIZE: must be the SCC's. */
  readonly blockSize: number;
  readonly metrics?: IngestMetrics;
  /** Fields a new segment of `dataset` keeps zone maps for (queries skip blocks by them); default none. */
  readonly zoneFields?: (dataset: string, recordSize: number) => readonly ZoneField[];
  /** Called once per device when a `uring` or `direct` device's writer fell back to a lesser mode (io_uring or O_DIRECT refused). */
  readonly onDirectIoRefused?: (device: StorageDevice) => void;
}

interface OpenBatch {
  readonly dataset: string;
  readonly batchId: BatchID;
  readonly recordSize: number;
  readonly device: StorageDevice;
  writer: SegmentWriter | undefined;
  records: number;
  bytes: number;
  /** Set once the batch cannot commit; later records are dropped and its eob refused with this. */
  failed?: { code: number; message: string };
}

/** Open batches of a Storage Node and their commit / discard. */
export class BatchStore {
  private readonly open = new Map<string, OpenBatch>();
  /** Batches being copied from a peer (cold-boot sync): the SCC's elements for them wait until the copy settled. */
  private readonly copying = new Map<string, Promise<void>>();

  /** @param opts devices, index, chain settings, metrics */
  constructor(private readonly opts: BatchStoreOptions) {}

  /** The durable batches. */
  get index(): BatchIndex {
    return this.opts.index;
  }

  /** Batches open now. */
  get openBatches(): number {
    return this.open.size;
  }

  /** Records received into open batches and not yet committed or dropped. */
  get heldRecords(): number {
    let n = 0;
    for (const b of this.open.values()) n += b.records;
    return n;
  }

  /**
   * Appends a chunk to its batch, opening the batch (device pick, `<name>.partial` created) on its
   * first chunk. Resolves once the bytes are written to the segment's buffer/file, so a caller that
   * awaits it slows its source to the disk's pace.
   */
  async append(c: StoreChunk): Promise<AppendOutcome> {
    await this.copying.get(key(c.dataset, c.batchId));
    if (this.index.has(c.dataset, c.batchId) && !this.open.has(key(c.dataset, c.batchId))) {
      return { written: false, reason: 'duplicate', message: `batch ${c.batchId.toHex()} of '${c.dataset}' is already durable here` };
    }
    const b = await this.openBatch(c.dataset, c.batchId, c.recordSize);
    if (!b.failed && c.recordSize !== b.recordSize) {
      await this.fail(b, BATCH_ERROR_CODES.refused, `record size changed within batch ${c.batchId.toHex()}: ${b.recordSize} then ${c.recordSize}`);
    }
    if (b.failed) return { written: false, reason: 'failed', message: b.failed.message };
    try {
      await (b.writer as SegmentWriter).append(c.buf);
    } catch (err) {
      const message = `writing batch ${c.batchId.toHex()} on device '${b.device.name}' failed: ${(err as Error).message}`;
      await this.fail(b, BATCH_ERROR_CODES.internal, message);
      return { written: false, reason: 'failed', message };
    }
    b.records += c.count;
    b.bytes += c.buf.length;
    return { written: true };
  }

  /**
   * Closes a batch: checks the record count and (when given) the SCC's closing hash, commits the
   * segment (write, fsync, rename, fsync dir) and indexes it. An eob for a batch already durable
   * here is answered with the stored closing hash (idempotent), if the claims agree.
   */
  async commit(dataset: string, batchId: BatchID, recordCount: number, recordSize: number, closingHash?: Uint8Array): Promise<CloseOutcome> {
    const expected = closingHash && closingHash.length > 0 ? Buffer.from(closingHash) : undefined;
    const k = key(dataset, batchId);
    await this.copying.get(k);
    let b = this.open.get(k);
    if (!b) {
      const stored = this.index.get(dataset, batchId);
      if (stored) return this.existing(stored, recordCount, expected);
      // No records and not stored: an empty batch, whose segment holds no records.
      b = await this.openBatch(dataset, batchId, recordSize);
    }
    const held = b.records;
    if (b.failed) return this.refuse(b, b.failed.code, b.failed.message, 'failed');
    if (b.records !== recordCount) {
      return this.refuse(b, BATCH_ERROR_CODES.refused, `batch ${batchId.toHex()} of '${dataset}': end-of-batch says ${recordCount} records, ${b.records} arrived; not committed`, 'refused');
    }
    const writer = b.writer as SegmentWriter;
    this.open.delete(k);
    this.opts.metrics?.batchesOpen.dec();
    b.writer = undefined;
    const stopTimer = this.opts.metrics?.fsyncSeconds.startTimer();
    try {
      const s = await writer.finish(expected ?? null);
      stopTimer?.();
      const entry: BatchEntry = { dataset, batchId, path: s.path, device: b.device.name, records: s.records, bytes: s.bytes, closingHash: s.closingHash };
      this.index.add(entry);
      this.opts.metrics?.batchesClosed.inc();
      this.opts.metrics?.recordsIngested.inc(s.records);
      this.opts.metrics?.bytesIngested.inc(b.bytes);
      return { ok: true, closingHash: s.closingHash, records: s.records, existing: false, path: s.path };
    } catch (err) {
      const hashMismatch = err instanceof SegmentError && (err.code === 'ERR_SEGMENT_CLOSING_HASH' || err.code === 'ERR_SEGMENT_PARTIAL_RECORD');
      this.opts.metrics?.batchesDiscarded.inc({ reason: hashMismatch ? 'refused' : 'failed' });
      const why = hashMismatch ? 'does not match its end-of-batch' : 'could not be committed';
      return { ok: false, code: hashMismatch ? BATCH_ERROR_CODES.refused : BATCH_ERROR_CODES.internal, message: `batch ${batchId.toHex()} of '${dataset}' ${why}: ${(err as Error).message}`, dropped: held };
    }
  }

  /** Discards an open batch (bbn): its partial segment is removed. A batch already durable is kept and the bbn refused. */
  async discard(dataset: string, batchId: BatchID, reason = 'bbn'): Promise<DiscardOutcome> {
    await this.copying.get(key(dataset, batchId));
    const b = this.open.get(key(dataset, batchId));
    if (!b) {
      if (this.index.has(dataset, batchId)) {
        return { ok: false, code: BATCH_ERROR_CODES.refused, message: `batch ${batchId.toHex()} of '${dataset}' is already durable here; a bad batch notice cannot discard it`, dropped: 0 };
      }
      return { ok: true, dropped: 0 };
    }
    const dropped = b.records;
    await this.close(b, reason);
    return { ok: true, dropped };
  }

  /**
   * Installs a batch copied from a peer replica (cold-boot synchronisation, coldBootSync.ts):
   * `copy` writes and verifies the segment on the device the drive strategy picks and returns its
   * entry, which is then indexed. Resolves `held` without copying when the batch is already durable
   * here, open (the SCC is sending it) or being copied; while a copy runs, the SCC's records, eob
   * or bbn for the same batch wait for it (then find it durable: a duplicate, answered
   * idempotently). A failed copy leaves nothing indexed and rejects.
   */
  installCopy(dataset: string, batchId: BatchID, copy: (device: StorageDevice) => Promise<BatchEntry>): Promise<'installed' | 'held'> {
    const k = key(dataset, batchId);
    if (this.index.has(dataset, batchId) || this.open.has(k) || this.copying.has(k)) return Promise.resolve('held');
    const run = (async (): Promise<'installed'> => {
      const entry = await copy(await this.opts.pool.pick());
      this.index.add(entry);
      return 'installed';
    })();
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.copying.set(k, settled);
    void settled.then(() => {
      if (this.copying.get(k) === settled) this.copying.delete(k);
    });
    return run;
  }

  /** Aborts every open batch (shutdown): their partial segments are removed, none was acknowledged. */
  async abortAll(reason = 'shutdown'): Promise<number> {
    const all = [...this.open.values()];
    let dropped = 0;
    for (const b of all) {
      dropped += b.records;
      await this.close(b, reason);
    }
    return dropped;
  }

  private async openBatch(dataset: string, batchId: BatchID, recordSize: number): Promise<OpenBatch> {
    const k = key(dataset, batchId);
    const existing = this.open.get(k);
    if (existing) return existing;
    let device: StorageDevice | undefined;
    let writer: SegmentWriter | undefined;
    let failed: OpenBatch['failed'];
    try {
      device = await this.opts.pool.pick();
      const dir = device.datasetDir(dataset);
      await mkdir(dir, { recursive: true });
      const fields = this.opts.zoneFields?.(dataset, recordSize) ?? [];
      writer = SegmentWriter.create({ dir, datasetId: dataset, batchId, recordSize, blockSize: this.opts.blockSize, algorithm: this.opts.algorithm, fields, io: device.ioInEffect });
      if (device.noteWriterIo(writer.io)) this.opts.onDirectIoRefused?.(device);
    } catch (err) {
      const full = (err as Error).name === 'DevicesFullError';
      failed = { code: full ? BATCH_ERROR_CODES.overloaded : BATCH_ERROR_CODES.internal, message: `cannot open batch ${batchId.toHex()} of '${dataset}': ${(err as Error).message}` };
    }
    // A batch that failed to open still gets an entry, so its records are dropped and its eob refused.
    const b: OpenBatch = { dataset, batchId, recordSize, device: device ?? this.opts.pool.devices[0], writer, records: 0, bytes: 0, failed };
    this.open.set(k, b);
    this.opts.metrics?.batchesOpen.inc();
    return b;
  }

  private existing(stored: BatchEntry, recordCount: number, expected: Buffer | undefined): CloseOutcome {
    const id = `${stored.batchId.toHex()} of '${stored.dataset}'`;
    if (stored.records !== recordCount) {
      return { ok: false, code: BATCH_ERROR_CODES.refused, message: `batch ${id} is durable here with ${stored.records} records; end-of-batch says ${recordCount}`, dropped: 0 };
    }
    if (expected && !expected.equals(stored.closingHash)) {
      return { ok: false, code: BATCH_ERROR_CODES.refused, message: `batch ${id} is durable here with a different closing hash`, dropped: 0 };
    }
    return { ok: true, closingHash: stored.closingHash, records: stored.records, existing: true, path: stored.path };
  }

  private async fail(b: OpenBatch, code: number, message: string): Promise<void> {
    b.failed = { code, message };
    const w = b.writer;
    b.writer = undefined;
    await w?.abort();
  }

  private async refuse(b: OpenBatch, code: number, message: string, reason: string): Promise<CloseOutcome> {
    const dropped = b.records;
    await this.close(b, reason);
    return { ok: false, code, message, dropped };
  }

  private async close(b: OpenBatch, reason: string): Promise<void> {
    this.open.delete(key(b.dataset, b.batchId));
    this.opts.metrics?.batchesOpen.dec();
    this.opts.metrics?.batchesDiscarded.inc({ reason });
    const w = b.writer;
    b.writer = undefined;
    await w?.abort();
  }
}

function key(dataset: string, batchId: BatchID): string {
  return `${dataset}\0${batchId.toHex()}`;
}
