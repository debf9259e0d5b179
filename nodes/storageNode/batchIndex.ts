/**
 * The Storage Node's in-memory index of durable batches: dataset → batch id → where its segment
 * is and what it holds. Built from the devices at start (recovery) and extended on every commit;
 * the SCC's catch-up and the query path look batches up here.
 */
import type { BatchID } from '../../engine-rs/batchId';

/** One durable batch. */
export interface BatchEntry {
  readonly dataset: string;
  readonly batchId: BatchID;
  /** Absolute path of the complete segment. */
  readonly path: string;
  /** Name of the device holding it. */
  readonly device: string;
  readonly records: number;
  /** Segment file size. */
  readonly bytes: number;
  readonly closingHash: Buffer;
}

/** The JSON form of an entry, as `GET /v1/batches` returns it. */
export interface BatchEntryJson {
  readonly batch_id: string;
  readonly records: number;
  readonly bytes: number;
  readonly closing_hash: string;
  readonly device: string;
  readonly path: string;
}

/** Durable batches by dataset and batch id. */
export class BatchIndex {
  private readonly byDataset = new Map<string, Map<string, BatchEntry>>();
  private count = 0;
  private changes = 0;

  /** Changes so far (each add counts): what is derived from the index is stale once it moved. */
  get version(): number {
    return this.changes;
  }

  /** Batches indexed, over all datasets. */
  get size(): number {
    return this.count;
  }

  /** Adds (or replaces) a batch. Returns the entry it replaced, if any. */
  add(e: BatchEntry): BatchEntry | undefined {
    let m = this.byDataset.get(e.dataset);
    if (!m) this.byDataset.set(e.dataset, (m = new Map()));
    const key = e.batchId.toHex();
    const old = m.get(key);
    m.set(key, e);
    this.changes++;
    if (!old) this.count++;
    return old;
  }

  /** The entry of a batch, if durable here. */
  get(dataset: string, batchId: BatchID): BatchEntry | undefined {
    return this.byDataset.get(dataset)?.get(batchId.toHex());
  }

  /** Whether the batch is durable here. */
  has(dataset: string, batchId: BatchID): boolean {
    return this.get(dataset, batchId) !== undefined;
  }

  /** A dataset's batches, sorted by batch id (hex order is byte order). */
  list(dataset: string): BatchEntry[] {
    const m = this.byDataset.get(dataset);
    if (!m) return [];
    return [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e);
  }

  /** A dataset's batches in no particular order (no sort: for one pass over them, e.g. a time window, nodes/storageNode/batchRanges.ts). */
  entries(dataset: string): IterableIterator<BatchEntry> {
    return (this.byDataset.get(dataset) ?? new Map<string, BatchEntry>()).values();
  }

  /** Datasets with at least one batch, sorted. */
  datasets(): string[] {
    return [...this.byDataset.keys()].sort();
  }

  /** An entry as JSON (hex batch id and closing hash). */
  static toJson(e: BatchEntry): BatchEntryJson {
    return {
      batch_id: e.batchId.toHex(),
      records: e.records,
      bytes: e.bytes,
      closing_hash: e.closingHash.toString('hex'),
      device: e.device,
      path: e.path,
    };
  }
}
