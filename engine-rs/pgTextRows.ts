/**
 * PostgreSQL text-format DataRow messages, and COPY text rows, written natively from Arrow-layout
 * column buffers (engine-rs/core/src/pg_text): hd_sql's PostgreSQL door hands a block of rows'
 * columns and gets the block's messages back in one Buffer, instead of writing each cell from JavaScript.
 */
import { native, type NativePgTextColumn } from './native';

/** Integer values, one element a row. */
export type PgIntValues = Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

/** One result column's values, as Arrow lays them out: element `i` is row `i` (booleans: bit `offset + i`). */
export type PgTextCells =
  | { readonly kind: 'int'; readonly values: PgIntValues }
  | { readonly kind: 'float'; readonly values: Float32Array | Float64Array }
  | { readonly kind: 'bool'; readonly bits: Uint8Array; readonly offset: number }
  /** UTF-8 text: row `i` is `bytes[offsets[i]..offsets[i + 1])`. */
  | { readonly kind: 'text'; readonly offsets: Int32Array; readonly bytes: Uint8Array }
  /** Dictionary codes; a code with no label is NULL. */
  | { readonly kind: 'labels'; readonly codes: PgIntValues; readonly labels: readonly Uint8Array[] };

/** One result column: its cells and, when some are NULL, its validity bits (1 = valid, row `i` at bit `offset + i`). */
export interface PgTextColumn {
  readonly cells: PgTextCells;
  readonly validity?: { readonly bits: Uint8Array; readonly offset: number };
}

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

const signed = (a: PgIntValues): boolean => a instanceof Int8Array || a instanceof Int16Array || a instanceof Int32Array || a instanceof BigInt64Array;

function nativeColumn(c: PgTextColumn): NativePgTextColumn {
  const validity = c.validity ? { validity: c.validity.bits, validityOffset: c.validity.offset } : { validityOffset: 0 };
  const cells = c.cells;
  switch (cells.kind) {
    case 'int':
      return { kind: 0, width: cells.values.BYTES_PER_ELEMENT, signed: signed(cells.values), offset: 0, data: bytesOf(cells.values), ...validity };
    case 'float':
      return { kind: 1, width: cells.values.BYTES_PER_ELEMENT, signed: true, offset: 0, data: bytesOf(cells.values), ...validity };
    case 'bool':
      return { kind: 2, width: 1, signed: false, offset: cells.offset, data: cells.bits, ...validity };
    case 'text':
      return { kind: 3, width: 4, signed: true, offset: 0, data: cells.bytes, offsets: bytesOf(cells.offsets), ...validity };
    case 'labels': {
      const bounds = new Int32Array(cells.labels.length + 1);
      cells.labels.forEach((l, k) => (bounds[k + 1] = (bounds[k] as number) + l.length));
      return {
        kind: 4,
        width: cells.codes.BYTES_PER_ELEMENT,
        signed: signed(cells.codes),
        offset: 0,
        data: bytesOf(cells.codes),
        labels: Buffer.concat(cells.labels),
        labelOffsets: bytesOf(bounds),
        ...validity,
      };
    }
  }
}

/**
 * The columns of one block of result rows (one Arrow record batch), prepared once; {@link dataRows}
 * writes any range of its rows.
 */
export class PgTextRows {
  private readonly columns: readonly NativePgTextColumn[];

  /** @param columns the result's columns, in order, each at least as long as the rows asked for */
  constructor(columns: readonly PgTextColumn[]) {
    this.columns = columns.map(nativeColumn);
  }

  /** DataRow messages, text format, for rows `from`..`to` (one Buffer); throws HD_PG_TEXT_ROWS if a column is too short. */
  dataRows(from: number, to: number): Buffer {
    return native.pgTextDataRows(this.columns, from, to);
  }

  /**
   * `COPY ... TO STDOUT` text for rows `from`..`to`: a CopyData message a row, values tab-separated,
   * NULL as `\N`, backslash, tab, newline and carriage return in text escaped with a backslash.
   */
  copyRows(from: number, to: number): Buffer {
    return native.pgTextCopyRows(this.columns, from, to);
  }
}
