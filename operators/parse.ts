import type { OperatorFunction } from 'rxjs';
import { awaitEachOf } from '../stream/awaitEach';
import { MAX_CHUNK_BYTES, recordChunks, type Chunk, type RecordChunk } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';
import type { ParsedBlock } from '../engine-rs/index';

export type { LineError, ParsedBlock } from '../engine-rs/index';

/**
 * Parses and encodes a run of whole lines (each ending in `\n`) in one native call; `firstLine` is
 * the 1-based number of its first line.
 */
export type BlockParser = (lines: Buffer, firstLine: number) => ParsedBlock | Promise<ParsedBlock>;

/** Options of {@link parse}. */
export interface ParseOptions {
  readonly parser: BlockParser;
  /** Dataset id the records belong to. */
  readonly dataset: string;
  readonly recordSize: number;
  /** Counts records (lines with content): received, sent (good), dropped (bad); errors per bad line. */
  readonly counters?: StageCounters;
  /** The pipeline's pending-work accounting. */
  readonly flow?: Flow;
  /** Told about every rejected line. */
  readonly onProblem?: (message: string) => void;
  /** Lines at the start of the input that are not records (a CSV header): default 0. */
  readonly skipLines?: number;
  /** Longest accepted line in bytes (default {@link MAX_CHUNK_BYTES}). */
  readonly maxLineBytes?: number;
}

const NL = 0x0a;

/**
 * Turns byte chunks of line-oriented text (NDJSON, CSV) into record chunks: each block's whole lines
 * go to the parser in one call, the partial last line waits for the next block, and whatever is
 * left at the end of input is parsed as the final line. Rejected lines are reported with their line
 * number and counted as dropped; the good lines around them are kept. A line longer than
 * `maxLineBytes` is rejected without being buffered further.
 *
 * @example
 * fileSource({ path, blockSize }).pipe(parse({ parser: codec.ndjsonParser(), dataset, recordSize }))
 */
export function parse(opts: ParseOptions): OperatorFunction<Chunk, RecordChunk> {
  const maxLine = opts.maxLineBytes ?? MAX_CHUNK_BYTES;
  // Everything below `init` is per subscription: a second subscription starts at line 1 with nothing carried.
  return awaitEachOf<Chunk, RecordChunk>(() => {
    const counters = opts.counters ?? new StageCounters('records');
    let carry: Buffer = Buffer.alloc(0);
    let nextLine = 1;
    let skip = opts.skipLines ?? 0;
    // True while discarding the rest of an over-long line up to its newline.
    let discarding = false;

    const take = async (lines: Buffer): Promise<RecordChunk[]> => {
      let body = lines;
      let first = nextLine;
      while (skip > 0 && body.length > 0) {
        const nl = body.indexOf(NL);
        body = nl < 0 ? Buffer.alloc(0) : body.subarray(nl + 1);
        first++;
        skip--;
      }
      if (body.length === 0) {
        nextLine = first;
        return [];
      }
      const r = await opts.parser(body, first);
      nextLine = first + r.lines;
      counters.received += r.count + r.errors.length;
      counters.dropped += r.errors.length;
      counters.errors += r.errors.length;
      for (const e of r.errors) opts.onProblem?.(`line ${e.line}${e.field ? `, field '${e.field}'` : ''}: ${e.reason}`);
      // Records can outgrow the text they came from; keep every chunk under the bound.
      const out = recordChunks(opts.dataset, opts.recordSize, r.count, r.records);
      counters.sent += r.count;
      return out;
    };

    const tooLong = (): void => {
      counters.received++;
      counters.dropped++;
      counters.errors++;
      opts.onProblem?.(`line ${nextLine}: longer than ${maxLine} bytes; skipped`);
      nextLine++;
    };

    return {
      step: async (chunk: Chunk): Promise<RecordChunk[]> => {
        if (chunk.kind !== 'bytes') throw new TypeError(`parse takes byte chunks, got a '${chunk.kind}' element`);
        let buf = chunk.buf;
        if (discarding) {
          const nl = buf.indexOf(NL);
          if (nl < 0) return [];
          discarding = false;
          buf = buf.subarray(nl + 1);
        }
        const data = carry.length > 0 ? Buffer.concat([carry, buf]) : buf;
        const cut = data.lastIndexOf(NL);
        if (cut < 0) {
          if (data.length > maxLine) {
            tooLong();
            carry = Buffer.alloc(0);
            discarding = true;
          } else {
            carry = Buffer.from(data);
          }
          return [];
        }
        // Copy the tail so the carried bytes do not pin the whole block in memory.
        carry = Buffer.from(data.subarray(cut + 1));
        return take(data.subarray(0, cut + 1));
      },
      // End of input: a last line without a newline is still a line (it goes through the same queue).
      end: async (): Promise<RecordChunk[]> => {
        const rest = carry;
        carry = Buffer.alloc(0);
        if (discarding) {
          discarding = false;
          return [];
        }
        return rest.length > 0 ? take(Buffer.concat([rest, Buffer.from([NL])])) : [];
      },
    };
  }, opts.flow ?? new Flow());
}
