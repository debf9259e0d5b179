import { open } from 'node:fs/promises';
import type { Observable } from 'rxjs';
import { MAX_CHUNK_BYTES, type ByteChunk } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';
import { pull } from '../stream/pull';

/** Options of {@link fileSource}. */
export interface FileSourceOptions {
  /** The file to read. */
  readonly path: string;
  /** Bytes per block (at most {@link MAX_CHUNK_BYTES}). */
  readonly blockSize: number;
  /** The pipeline's pending-work accounting; the source reads its next block only when it allows. */
  readonly flow?: Flow;
  /** Pending units of work allowed downstream before the next read (default 1). */
  readonly maxPending?: number;
  /** Counts bytes: received = read from the file, sent = emitted. */
  readonly counters?: StageCounters;
  /** Told the file's size once it is open, then each block's size as it is emitted. */
  readonly progress?: { addTotal(bytes: number): void; addBytes(bytes: number): void };
}

/**
 * Reads a file as a stream of {@link ByteChunk}s of `blockSize` bytes (the last one shorter), pulling:
 * the next block is read only once downstream has settled (see {@link pull}). Each block is a fresh
 * Buffer, since downstream stages may keep it. The file is closed on completion, error and
 * unsubscribe. An empty file completes without emitting.
 *
 * @example
 * fileSource({ path: 'flows.ndjson', blockSize: 1 << 20 }).pipe(parse({ ... }))
 */
export function fileSource(opts: FileSourceOptions): Observable<ByteChunk> {
  if (!Number.isSafeInteger(opts.blockSize) || opts.blockSize <= 0 || opts.blockSize > MAX_CHUNK_BYTES) {
    throw new RangeError(`blockSize must be 1..${MAX_CHUNK_BYTES}, got ${opts.blockSize}`);
  }
  const counters = opts.counters ?? new StageCounters('bytes');
  async function* blocks(): AsyncGenerator<ByteChunk> {
    const fh = await open(opts.path, 'r');
    try {
      opts.progress?.addTotal((await fh.stat()).size);
      let offset = 0;
      for (;;) {
        const buf = Buffer.allocUnsafe(opts.blockSize);
        const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
        if (bytesRead === 0) return;
        counters.received += bytesRead;
        const chunk: ByteChunk = { kind: 'bytes', source: opts.path, offset, buf: bytesRead === buf.length ? buf : buf.subarray(0, bytesRead) };
        offset += bytesRead;
        counters.sent += bytesRead;
        opts.progress?.addBytes(bytesRead);
        yield chunk;
      }
    } finally {
      await fh.close();
    }
  }
  return pull(blocks, opts.flow ?? new Flow(), opts.maxPending ?? 1);
}
