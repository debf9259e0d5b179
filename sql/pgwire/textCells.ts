/**
 * Text-format DataRow values straight from a column chunk's buffers: integers from their typed
 * array, text as the UTF-8 bytes Arrow already holds (no decode into a JS string and encode back),
 * enum labels as bytes encoded once per chunk, booleans from their bits. Other types go through
 * `textOf` over the chunk's vector, as before. The per-value path (`Vector.get` + `textOf` +
 * `Buffer.write`) made the wire the dearest part of a 400 000-row answer (issue #17, Q4b).
 */
import * as arrow from 'apache-arrow';
import type { DataRowWriter } from './dataRows';
import { textOf } from './pgTypes';

/** Writes the value of row `i` of one column chunk (NULL included) into the row being written. */
export type CellWriter = (i: number) => void;

/** The writer of text values of `d` (one chunk of one result column) into `w`. */
export function textCellWriter(d: arrow.Data, w: DataRowWriter): CellWriter {
  const cell = fastCell(d, w) ?? slowCell(d, w);
  if (d.nullCount === 0) return cell;
  return (i) => (d.getValid(i) ? cell(i) : w.writeNull());
}

function fastCell(d: arrow.Data, w: DataRowWriter): CellWriter | undefined {
  const t = d.type;
  if (arrow.DataType.isInt(t) && t.bitWidth === 64) return int64Cell(d, t.isSigned, w);
  if (arrow.DataType.isInt(t)) {
    // Arrow's value views start at the chunk's offset: row i is values[i].
    const values = d.values as ArrayLike<number>;
    return (i) => w.writeAscii(String(values[i]));
  }
  if (arrow.DataType.isFloat(t) && t.precision !== arrow.Precision.HALF) {
    const values = d.values as Float32Array | Float64Array;
    return (i) => {
      const v = values[i] as number;
      w.writeAscii(Number.isNaN(v) ? 'NaN' : String(v));
    };
  }
  if (arrow.DataType.isBool(t)) {
    // Bits are addressed from the chunk's offset (Arrow's own getter does the same).
    const bits = d.values as Uint8Array;
    const offset = d.offset;
    return (i) => {
      const k = offset + i;
      w.writeAscii(((bits[k >> 3] as number) >> (k & 7)) & 1 ? 't' : 'f');
    };
  }
  if (arrow.DataType.isUtf8(t)) {
    const bytes = d.values as Uint8Array;
    const offsets = d.valueOffsets as Int32Array;
    return (i) => w.writeBytesOf(bytes, offsets[i] as number, offsets[i + 1] as number);
  }
  if (arrow.DataType.isDictionary(t) && d.dictionary && arrow.DataType.isUtf8(d.dictionary.type)) {
    const dict = d.dictionary;
    const labels = Array.from({ length: dict.length }, (_, k) => Buffer.from(textOf(dict.type, dict.get(k)) ?? '', 'utf8'));
    const codes = d.values as ArrayLike<number | bigint>;
    return (i) => {
      const label = labels[Number(codes[i])];
      if (label) w.writeBytes(label);
      else w.writeNull();
    };
  }
  return undefined;
}

/**
 * 64-bit integers read as two 32-bit halves: a value within ±2^53 (timestamps, counters, byte
 * sums) becomes a Number without allocating a BigInt; only larger ones go through BigInt.
 */
function int64Cell(d: arrow.Data, signed: boolean, w: DataRowWriter): CellWriter {
  const v = d.values as BigInt64Array | BigUint64Array;
  const lo = new Uint32Array(v.buffer, v.byteOffset, v.length * 2);
  const hi = signed ? new Int32Array(v.buffer, v.byteOffset, v.length * 2) : lo;
  const LIMIT = 0x200000; // 2^21: |hi · 2^32 + lo| < 2^53
  return (i) => {
    const h = hi[2 * i + 1] as number;
    if (h < LIMIT && h >= -LIMIT) w.writeAscii(String(h * 4294967296 + (lo[2 * i] as number)));
    else w.writeAscii(String(v[i]));
  };
}

/** Any other type: the chunk's vector's value through `textOf`. */
function slowCell(d: arrow.Data, w: DataRowWriter): CellWriter {
  const v = arrow.makeVector(d);
  return (i) => {
    const s = textOf(v.type, v.get(i));
    if (s === null) w.writeNull();
    else w.writeText(s);
  };
}
