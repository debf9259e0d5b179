/**
 * The ingester sources' parse + encode step: a block of whole lines (NDJSON or CSV) becomes packed
 * records of the dataset schema in one native call (the same record codec path as the `parse`
 * stage), and every refused line comes back with its byte range so the source can dead-letter it
 * with its origin. One call per block, never per line; the byte ranges of refused lines are found
 * only for blocks that have some.
 */
import type { RecordCodec } from '../engine-rs/index';
import { recordChunks, type RecordChunk } from '../stream/chunk';

/** How input lines are read. */
export interface TextFormat {
  readonly format: 'ndjson' | 'csv';
  /** CSV: the column names; undefined reads them from the first line of the block. */
  readonly columns?: readonly string[];
  /** CSV field delimiter (one character). */
  readonly delimiter?: string;
}

/** One refused line of a block. */
export interface RefusedLine {
  /** Line number within the block, 1-based. */
  readonly line: number;
  readonly field?: string;
  readonly reason: string;
  /** Byte range of the line in the block (without its newline). */
  readonly start: number;
  readonly end: number;
}

/** A block encoded. */
export interface EncodedText {
  /** Record chunks (each within {@link MAX_CHUNK_BYTES}). */
  readonly chunks: readonly RecordChunk[];
  /** Records encoded. */
  readonly records: number;
  readonly refused: readonly RefusedLine[];
  /** CSV: the column names, when the block's first line was read as the header. */
  readonly header?: readonly string[];
  /** Lines the block held (blank, refused and header lines included). */
  readonly lines: number;
}

const NL = 0x0a;

/**
 * Byte ranges of the given 1-based line numbers in `block` (one walk over the newlines, up to the
 * largest number). Lines past the end get an empty range at the end.
 */
export function lineRanges(block: Buffer, lines: readonly number[]): Map<number, { start: number; end: number }> {
  const want = new Set(lines);
  const out = new Map<number, { start: number; end: number }>();
  const last = Math.max(0, ...lines);
  let at = 0;
  for (let n = 1; n <= last; n++) {
    const nl = block.indexOf(NL, at);
    const end = nl < 0 ? block.length : nl;
    if (want.has(n)) out.set(n, { start: at, end: end > at && block[end - 1] === 0x0d ? end - 1 : end });
    if (nl < 0) {
      at = block.length;
      continue;
    }
    at = nl + 1;
  }
  return out;
}

/**
 * Encodes `block` (whole lines, each ending in a newline) by `codec` and cuts the records into
 * chunks of `dataset`. Lines with no content are skipped, as the `parse` stage does.
 */
export async function encodeText(codec: RecordCodec, fmt: TextFormat, dataset: string, recordSize: number, block: Buffer): Promise<EncodedText> {
  const r =
    fmt.format === 'ndjson'
      ? await codec.parseNdjson(block, 1)
      : await codec.parseCsv(block, { header: fmt.columns, delimiter: fmt.delimiter, firstLine: 1 });
  const chunks: RecordChunk[] = recordChunks(dataset, recordSize, r.count, r.records);
  let refused: RefusedLine[] = [];
  if (r.errors.length > 0) {
    const ranges = lineRanges(block, r.errors.map((e) => e.line));
    refused = r.errors.map((e) => {
      const at = ranges.get(e.line) ?? { start: block.length, end: block.length };
      return { line: e.line, ...(e.field ? { field: e.field } : {}), reason: e.reason, start: at.start, end: at.end };
    });
  }
  return { chunks, records: r.count, refused, lines: r.lines, ...(r.header ? { header: r.header } : {}) };
}
