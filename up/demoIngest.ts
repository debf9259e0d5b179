/**
 * Ingests NDJSON into a running platform through the normal path: native parse + encode, batches
 * per time window, PlatformIngestClient → SCC → Storage Nodes.
 */
import { RecordCodec } from '../engine-rs/codec';
import type { Progress } from '../lib/progress';
import { PlatformIngestClient } from '../sdk/platformIngestClient';
import type { SccTarget } from '../sdk/sccTargets';

/** What one dataset's ingest did. */
export interface IngestSummary {
  readonly dataset: string;
  readonly records: number;
  readonly batches: number;
  readonly rejectedLines: number;
}

/** Options of {@link ingestNdjson}. */
export interface IngestNdjsonOptions {
  readonly scc: SccTarget;
  readonly schemaJson: string;
  /** Seconds a record may arrive after a later one (its window stays open that long). */
  readonly lagSec?: number;
  readonly progress?: Progress;
  /** Told about each line the parser refused (the first few are worth showing). */
  onRejected?(line: number, reason: string): void;
  /**
   * Start times (unix seconds) of windows whose batches landed on an earlier run: their records
   * are counted but not sent (resuming an interrupted ingest of the same data).
   */
  readonly skip?: ReadonlySet<number>;
  /** Awaited after the SCC acknowledged the end of each batch sent (not for skipped ones). */
  onLanded?(windowStart: number): void | Promise<void>;
  /** Stops the ingest between blocks and batches (it then rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

/**
 * Parses each NDJSON block natively, splits the records into time windows of the schema's
 * interval, streams each window's records under its time batch id and ends a window once the data
 * has moved `lagSec` past it. Windows in `skip` are counted and not sent. Throws when the SCC
 * refuses a send or an end-of-batch, or when `signal` aborts.
 */
export async function ingestNdjson(blocks: Iterable<string> | AsyncIterable<string>, opts: IngestNdjsonOptions): Promise<IngestSummary> {
  const codec = new RecordCodec(opts.schemaJson);
  const schema = codec.schema;
  if (!schema) throw new Error('schema did not load');
  const interval = schema.timeIndexInterval || 1;
  const lag = opts.lagSec ?? 0;
  const client = new PlatformIngestClient();
  client.loadDatasetSchema(schema);
  client.setSccTargets([opts.scc]);
  // A window in `skip` is open without a batch id: its records are counted, nothing is sent.
  const open = new Map<number, ReturnType<typeof client.generateBatchIdTime> | undefined>();
  const skip = opts.skip ?? new Set<number>();
  let records = 0;
  let batches = 0;
  let rejected = 0;
  let line = 1;
  const check = (ok: boolean, what: string): void => {
    if (!ok) throw new Error(`${what} for dataset ${schema.id}: ${client.lastError?.message ?? 'refused'}`);
  };
  const close = async (start: number): Promise<void> => {
    if (!open.has(start)) return;
    const id = open.get(start);
    open.delete(start);
    batches++;
    if (!id) return;
    opts.signal?.throwIfAborted();
    check(await client.sendEob(id), `end of batch ${new Date(start * 1000).toISOString()}`);
    await opts.onLanded?.(start);
  };
  try {
    for await (const text of blocks) {
      opts.signal?.throwIfAborted();
      const bytes = Buffer.from(text);
      const parsed = await codec.parseNdjson(bytes, line);
      line += parsed.lines;
      opts.progress?.addBytes(bytes.length);
      for (const e of parsed.errors) {
        rejected++;
        opts.onRejected?.(e.line, e.reason);
      }
      let newest = -Infinity;
      for (const w of codec.timeWindows(parsed.records, interval)) {
        if (!open.has(w.start)) open.set(w.start, skip.has(w.start) ? undefined : client.generateBatchIdTime(w.start, w.start + interval, interval));
        const id = open.get(w.start);
        if (id) check(await client.streamInsert(id, w.records), 'records');
        newest = Math.max(newest, w.start);
        records += w.count;
        opts.progress?.addRecords(w.count);
      }
      // Windows the data has moved past (by more than the lag) will get no more records.
      for (const start of [...open.keys()]) if (start + interval + lag <= newest) await close(start);
    }
    for (const start of [...open.keys()].sort((a, b) => a - b)) await close(start);
  } finally {
    await client.stop();
  }
  return { dataset: schema.id, records, batches, rejectedLines: rejected };
}
