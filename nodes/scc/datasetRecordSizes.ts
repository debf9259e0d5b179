/**
 * The record size of each dataset the SCC serves (docs/scc.md, "Record sizes"): a dataset with a
 * schema on the DMS is hashed, replicated and queried with its own
 * schema's `record_size`; any other dataset with RECORD_SIZE. Records of another size are refused at
 * their batch's eob, naming the size the dataset expects.
 */

/** Where the sizes come from; `refresh` reads the source again (the DMS) when a dataset is not known. */
export interface RecordSizeSource {
  /** Reads the source now; resolves once the sizes it found were handed to {@link DatasetRecordSizes.replace}. */
  refresh(): Promise<unknown>;
}

/** Record sizes by dataset, with RECORD_SIZE for datasets without a schema. */
export class DatasetRecordSizes {
  private sizes = new Map<string, number>();
  private source: RecordSizeSource | undefined;

  /** @param defaultSize RECORD_SIZE: the size of a dataset no schema describes */
  constructor(readonly defaultSize: number) {}

  /** Sets where unknown datasets are looked up (the DMS feed). */
  useSource(source: RecordSizeSource): void {
    this.source = source;
  }

  /** Replaces the sizes from the source (the DMS's datasets). */
  replace(sizes: ReadonlyMap<string, number>): void {
    this.sizes = new Map(sizes);
  }

  /** The size `dataset` is known to have, or undefined when no schema names it. */
  known(dataset: string): number | undefined {
    return this.sizes.get(dataset);
  }

  /** The record size of `dataset`: its schema's, else RECORD_SIZE. */
  sizeOf(dataset: string): number {
    return this.known(dataset) ?? this.defaultSize;
  }

  /**
   * The record size `dataset` must have, given records of `seen` bytes arrived: when they do not
   * fit what is known, the source is read again first (a dataset registered a moment ago).
   */
  async expect(dataset: string, seen: number): Promise<number> {
    const now = this.sizeOf(dataset);
    if (now === seen || !this.source) return now;
    await this.source.refresh();
    return this.sizeOf(dataset);
  }

  /** Where `dataset`'s size comes from, for refusals. */
  describe(dataset: string): string {
    if (this.sizes.has(dataset)) return `its schema on the DMS has ${this.sizeOf(dataset)}-byte records`;
    return `no schema names it, so it has RECORD_SIZE=${this.defaultSize}`;
  }
}
