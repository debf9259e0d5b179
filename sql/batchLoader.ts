/**
 * Loads a read's fetched batches into DuckDB in groups (docs/sql.md, "Per-statement costs"): each
 * append opens and closes a DuckDB appender (about half a millisecond), so a read of 1 441 small
 * batches — the `hd up` demo, or any top-records read that sends a few rows a batch — spent most of
 * its time there. Batches are held until `rows` rows or `batches` batches wait, then appended in
 * one call; `flush` appends the rest before the statement runs.
 */
import type * as arrow from 'apache-arrow';

/** Thresholds of {@link BatchLoader}. */
export interface BatchLoaderOptions {
  /** Rows held before an append (default 16 384). */
  readonly rows?: number;
  /** Batches held before an append (default 256). */
  readonly batches?: number;
}

/** Groups record batches into fewer appends; one per read, used in order (not concurrently). */
export class BatchLoader {
  private held: arrow.RecordBatch[] = [];
  private rows = 0;
  private readonly maxRows: number;
  private readonly maxBatches: number;

  /** @param append loads a group of batches (the session's append) */
  constructor(
    private readonly append: (batches: readonly arrow.RecordBatch[]) => Promise<void>,
    opts: BatchLoaderOptions = {},
  ) {
    this.maxRows = opts.rows ?? 16_384;
    this.maxBatches = opts.batches ?? 256;
  }

  /** Holds `b`; appends the group once a threshold is reached (awaiting it keeps the fetch paced by the load). */
  async add(b: arrow.RecordBatch): Promise<void> {
    if (b.numRows === 0) return;
    this.held.push(b);
    this.rows += b.numRows;
    if (this.rows >= this.maxRows || this.held.length >= this.maxBatches) await this.flush();
  }

  /** Appends what is held. */
  async flush(): Promise<void> {
    if (this.held.length === 0) return;
    const group = this.held;
    this.held = [];
    this.rows = 0;
    await this.append(group);
  }
}
