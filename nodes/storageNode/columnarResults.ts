/**
 * Columnar results on a Storage Node (HDQuery `result_format: "columns"`, docs/query.md "Columnar
 * results"): the records a read step matched — already masked by the query's `field_mask` — are
 * decoded in engine-rs to the Arrow-layout columns the client asked for, in pieces of about
 * {@link COLUMNS_PIECE_BYTES} of records, each piece a Neon task on libuv's pool (so the pieces of
 * one step, and the steps of concurrent batches, decode on several cores at once).
 */
import { encodeColumnar } from '../../engine-rs/columnar';
import { arrowSchemaFor, RecordDecodeError } from '../../engine-rs/decode';
import type { Schema } from '../../engine-rs/schema';
import type { ColumnarPiece } from '../../operators/scan';
import { QueryError } from '../../query/queryError';

/**
 * Record bytes per columns frame: a frame's body stays within a few MiB whatever the types (text
 * presentations are at most a few times their stored bytes), far below the listener's 16 MiB frame
 * and 8 MiB credit window.
 */
export const COLUMNS_PIECE_BYTES = 1024 * 1024;

/**
 * The encoder of a query's columnar results: `fields` (absent: every field, in schema order) are
 * checked against the schema now, so a bad name is a bad query (error 11 naming `columns`), not a
 * failed batch.
 */
export function columnarEncoder(schema: Schema, fields: readonly string[] | undefined, pieceBytes = COLUMNS_PIECE_BYTES): (records: Buffer) => Promise<ColumnarPiece[]> {
  const names = fields ?? schema.fields.map((f) => f.name);
  try {
    arrowSchemaFor(schema, { fields: names });
  } catch (err) {
    if (err instanceof RecordDecodeError) throw new QueryError('columns', err.message);
    throw err;
  }
  const rs = schema.recordSize;
  const step = Math.max(1, Math.floor(pieceBytes / rs)) * rs;
  return (records) => {
    const pieces: Promise<ColumnarPiece>[] = [];
    for (let at = 0; at < records.length; at += step) {
      const part = records.subarray(at, at + step);
      pieces.push(encodeColumnar(schema, part, { fields: names }).then((body) => ({ rows: part.length / rs, body })));
    }
    return Promise.all(pieces);
  };
}
