/**
 * A result chunk's columns as engine-rs writes text DataRows from them (engine-rs/pgTextRows.ts):
 * integers, floats, booleans, UTF-8 and dictionary labels hand over their Arrow buffers as they are;
 * any other type (timestamps, dates, decimals, lists, binary) is rendered to text here once per
 * chunk, with `textOf` as before, and handed over as a UTF-8 column.
 */
import * as arrow from 'apache-arrow';
import type { PgIntValues, PgTextCells, PgTextColumn } from '../../engine-rs/index';
import { textOf } from './pgTypes';

/** The column of one result chunk (`d`: one column's data in one record batch). */
export function textColumnOf(d: arrow.Data): PgTextColumn {
  const direct = directCells(d);
  if (!direct) return renderedColumn(d);
  if (d.nullCount === 0 || !d.nullBitmap) return { cells: direct };
  return { cells: direct, validity: { bits: d.nullBitmap, offset: d.offset } };
}

/** The chunk's own buffers, where engine-rs writes the type's text itself; else undefined. */
function directCells(d: arrow.Data): PgTextCells | undefined {
  const t = d.type;
  // Arrow's value views start at the chunk's offset (row i is values[i]); bits do not.
  if (arrow.DataType.isInt(t)) return { kind: 'int', values: d.values as PgIntValues };
  if (arrow.DataType.isFloat(t) && t.precision !== arrow.Precision.HALF) return { kind: 'float', values: d.values as Float32Array | Float64Array };
  if (arrow.DataType.isBool(t)) return { kind: 'bool', bits: d.values as Uint8Array, offset: d.offset };
  if (arrow.DataType.isUtf8(t)) return { kind: 'text', offsets: d.valueOffsets as Int32Array, bytes: d.values as Uint8Array };
  if (arrow.DataType.isDictionary(t) && d.dictionary && arrow.DataType.isUtf8(d.dictionary.type)) {
    const dict = d.dictionary;
    const labels = Array.from({ length: dict.length }, (_, k) => Buffer.from(textOf(dict.type, dict.get(k)) ?? '', 'utf8'));
    return { kind: 'labels', codes: d.values as PgIntValues, labels };
  }
  return undefined;
}

/** Every value of the chunk as text (`textOf`), as one UTF-8 column with its NULLs. */
function renderedColumn(d: arrow.Data): PgTextColumn {
  const v = arrow.makeVector(d);
  const n = d.length;
  const texts: string[] = new Array<string>(n);
  const offsets = new Int32Array(n + 1);
  const valid = new Uint8Array((n + 7) >> 3);
  let nulls = 0;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const s = textOf(v.type, v.get(i));
    if (s === null) nulls++;
    else valid[i >> 3] = (valid[i >> 3] as number) | (1 << (i & 7));
    texts[i] = s ?? '';
    at += Buffer.byteLength(texts[i] as string, 'utf8');
    offsets[i + 1] = at;
  }
  const bytes = Buffer.from(texts.join(''), 'utf8');
  const cells: PgTextCells = { kind: 'text', offsets, bytes };
  return nulls === 0 ? { cells } : { cells, validity: { bits: valid, offset: 0 } };
}
