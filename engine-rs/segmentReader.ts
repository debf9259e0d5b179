import { BatchID } from './batchId';
import type { HashAlgorithmName } from './hashChain';
import { native, type SegmentReaderHandle } from './native';
import { SegmentError, segmentCall, toSegmentError } from './segmentError';
import { decodeZoneFields, zoneOf, type Zone, type ZoneField } from './segmentZones';

/**
 * An open segment whose header, footer and layout validated (docs/segment.md). Records come out
 * a block range at a time, each block's CRC checked; zone maps and the batch filter are read
 * from the footer at open. Full chain verification is `verifySegment`.
 */
export class SegmentReader {
  /** Dataset the batch belongs to. */
  readonly datasetId: string;
  readonly batchId: BatchID;
  readonly recordSize: number;
  /** Records per block (the chain's HASH_CHAIN_BLOCK_SIZE). */
  readonly blockSize: number;
  readonly algorithm: HashAlgorithmName;
  readonly records: number;
  readonly blocks: number;
  /** Closing hash stored at ingest. */
  readonly closingHash: Buffer;
  /** Zone-mapped fields, in zone order. */
  readonly fields: readonly ZoneField[];
  private readonly zoneKeys: BigUint64Array;
  private readonly filterKeys: BigUint64Array;

  private constructor(private readonly handle: SegmentReaderHandle) {
    const info = native.segmentInfo(handle);
    this.datasetId = info.datasetId;
    this.batchId = new BatchID(info.batchId);
    this.recordSize = info.recordSize;
    this.blockSize = info.blockSize;
    this.algorithm = info.algorithm as HashAlgorithmName;
    this.records = info.records;
    this.blocks = info.blocks;
    this.closingHash = info.closingHash;
    this.fields = decodeZoneFields(info.fields);
    this.zoneKeys = info.zones;
    this.filterKeys = info.filter;
  }

  /** Opens and validates `path`; rejects with a `SegmentError` for a damaged or foreign file. */
  static async open(path: string): Promise<SegmentReader> {
    return new SegmentReader(await segmentCall(() => native.segmentOpen(path)));
  }

  /**
   * Opens `path` on this thread when the process's footer cache holds its footer (opened before,
   * the file unchanged since: an open, a stat and a lookup, no footer read); undefined when it does
   * not, and then {@link SegmentReader.open} reads and validates it off the event loop. Throws a
   * `SegmentError` when the file cannot be opened.
   */
  static openCached(path: string): SegmentReader | undefined {
    let handle: SegmentReaderHandle | undefined;
    try {
      handle = native.segmentOpenCachedSync(path);
    } catch (err) {
      throw toSegmentError(err);
    }
    return handle === undefined ? undefined : new SegmentReader(handle);
  }

  /** Records of blocks `first .. first + count` (default: to the end), concatenated. */
  readBlocks(first = 0, count = this.blocks - first): Promise<Buffer> {
    return segmentCall(() => native.segmentReadBlocks(this.handle, first, count));
  }

  /** Min/max of zone field `field` in block `block`. */
  zone(block: number, field: number): Zone {
    const f = this.fields[field];
    if (!f || !Number.isInteger(block) || block < 0 || block >= this.blocks) {
      throw new SegmentError('ERR_SEGMENT_RANGE', `no zone for block ${block}, field ${field}`);
    }
    const at = (block * this.fields.length + field) * 2;
    return zoneOf(f.kind, this.zoneKeys[at], this.zoneKeys[at + 1]);
  }

  /** The batch filter: min/max of each zone field over the whole batch, for the Proxy's verdict. */
  batchFilter(): Zone[] {
    return this.fields.map((f, i) => zoneOf(f.kind, this.filterKeys[i * 2], this.filterKeys[i * 2 + 1]));
  }
}

/** Reads the records of a block range (default: the whole segment) from a segment file. */
export async function readSegment(path: string, first = 0, count?: number): Promise<Buffer> {
  const r = await SegmentReader.open(path);
  return r.readBlocks(first, count ?? r.blocks - first);
}
