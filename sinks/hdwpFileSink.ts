import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Observable } from 'rxjs';
import { awaitEach } from '../stream/awaitEach';
import type { BatchedRecordChunk, BbnElement, Chunk, EobElement } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';

/** Turns stream elements into HDWP frame bytes (the engine's frame encoder behind it). */
export interface HdwpEncoder {
  /** The hello frame opening the stream. */
  hello(dataset: string, recordSize: number): Buffer;
  /** One or more records frames holding the chunk's records. */
  records(chunk: BatchedRecordChunk): Buffer;
  eob(e: EobElement): Buffer;
  bbn(b: BbnElement): Buffer;
}

/** Options of {@link hdwpFileSink}. */
export interface HdwpFileSinkOptions {
  /** The output file; written as `<path>.partial` and renamed into place once complete. */
  readonly path: string;
  readonly encoder: HdwpEncoder;
  /** Counts records: received on arrival, sent once written; controls for eob / bbn. */
  readonly counters?: StageCounters;
  /** The pipeline's pending-work accounting: each write holds a unit until it has settled. */
  readonly flow?: Flow;
  /** Told the records of each settled write. */
  readonly progress?: { addRecords(n: number): void };
}

/**
 * Writes batched records and their eob / bbn elements to a file as HDWP frames: a hello frame,
 * then one records frame run per chunk and one control frame per closing element, in arrival
 * order. Each write is awaited before the next (and before the pipeline's sources read more). The
 * output appears under its name only when the input completed and the file was closed; on error
 * or teardown the partial file is removed, so a file at `path` is always a whole stream.
 */
export function hdwpFileSink(opts: HdwpFileSinkOptions): (input: Observable<Chunk>) => Observable<never> {
  const partial = `${opts.path}.partial`;
  const counters = opts.counters ?? new StageCounters('records');
  return (input) =>
    new Observable<never>((subscriber) => {
      let fh: FileHandle | undefined;
      let opening: Promise<FileHandle> | undefined;
      let helloFor: { dataset: string; recordSize: number } | undefined;
      let done = false;
      // The output's folder is created on first write, like any file-producing tool would.
      const handle = (): Promise<FileHandle> =>
        (opening ??= mkdir(path.dirname(partial), { recursive: true }).then(() => open(partial, 'w')).then((h) => (fh = h)));

      let torn = false;
      const write = async (el: Chunk): Promise<readonly never[]> => {
        if (el.kind === 'records') counters.received += el.count;
        const h = await handle();
        switch (el.kind) {
          case 'records': {
            if (el.batchId === undefined) throw new TypeError('hdwpFileSink takes batched records; put a batching stage (timeBatch) before it');
            const parts: Buffer[] = [];
            if (!helloFor) {
              helloFor = { dataset: el.dataset, recordSize: el.recordSize };
              parts.push(opts.encoder.hello(el.dataset, el.recordSize));
            } else if (helloFor.dataset !== el.dataset || helloFor.recordSize !== el.recordSize) {
              throw new Error(
                `one HDWP stream carries one dataset and record size: opened for '${helloFor.dataset}' (${helloFor.recordSize} bytes), got '${el.dataset}' (${el.recordSize} bytes)`,
              );
            }
            parts.push(opts.encoder.records(el as BatchedRecordChunk));
            await writeAll(h, parts.length === 1 ? parts[0] : Buffer.concat(parts));
            // After teardown the records were already counted as dropped (and the file is removed).
            if (torn) return [];
            counters.sent += el.count;
            opts.progress?.addRecords(el.count);
            return [];
          }
          case 'eob':
          case 'bbn':
            await writeAll(h, el.kind === 'eob' ? opts.encoder.eob(el) : opts.encoder.bbn(el));
            counters.controls++;
            return [];
          case 'bytes':
            throw new TypeError("hdwpFileSink takes batched records, got a 'bytes' element");
          case 'query':
            throw new TypeError("hdwpFileSink takes batched records, got a 'query' element");
          case 'columns':
            throw new TypeError("hdwpFileSink takes batched records, got a 'columns' element");
          case 'aggregate':
            throw new TypeError("hdwpFileSink takes batched records, got an 'aggregate' element");
          case 'eobs':
            throw new TypeError("hdwpFileSink takes batched records, got an 'eobs' element");
        }
      };

      const sub = input.pipe(awaitEach(write, opts.flow ?? new Flow())).subscribe({
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          void (async () => {
            const h = await handle();
            await h.close();
            fh = undefined;
            await rename(partial, opts.path);
            done = true;
            subscriber.complete();
          })().catch((err: unknown) => subscriber.error(err));
        },
      });

      return () => {
        sub.unsubscribe();
        if (done) return;
        torn = true;
        // Not complete: drop the partial output rather than leave a truncated stream behind.
        counters.dropped += counters.held;
        const h = fh;
        void (async () => {
          if (h) await h.close().catch(() => undefined);
          else if (opening) await opening.then((x) => x.close()).catch(() => undefined);
          await unlink(partial).catch(() => undefined);
        })();
      };
    });
}

async function writeAll(h: FileHandle, buf: Buffer): Promise<void> {
  let off = 0;
  while (off < buf.length) {
    const { bytesWritten } = await h.write(buf, off, buf.length - off);
    off += bytesWritten;
  }
}
