/**
 * A result's rows onto the wire: DataRow messages (text or binary per column) for a range of rows —
 * a portal suspended by an Execute row limit resumes where it stopped — and `COPY ... TO STDOUT`
 * text, pausing while the client has not read what was sent (HD_SQL_SEND_BUFFER_BYTES).
 */
import * as arrow from 'apache-arrow';
import { SqlError } from '../sqlError';
import { backend } from './backend';
import { DataRowWriter } from './dataRows';
import { binaryOf, fieldsOf } from './pgTypes';
import { PgTextRows } from '../../engine-rs/index';
import { textCellWriter, type CellWriter } from './textCells';
import { textColumnOf } from './textColumns';

/**
 * Bytes of messages a native call aims at when every column is text: the door checks the client's
 * backlog (HD_SQL_SEND_BUFFER_BYTES) between calls, so a call must stay well under it whatever a
 * row weighs (a 1 000-byte row × 2 048 rows would overshoot it eightfold).
 */
const TEXT_BYTES_PER_CALL = 64 * 1024;
/** The most rows a native call writes (narrow rows: 2 048 is about 0.1-0.2 MiB, well under a millisecond). */
const TEXT_ROWS_PER_CALL = 2048;

/** Where rows go. */
export interface RowSink {
  send(chunk: Buffer): void;
  /** A promise while the client's socket holds too much unsent, else undefined. */
  drain(): Promise<void> | undefined;
  /** True once the connection is gone (writing stops). */
  readonly gone: boolean;
}

/**
 * Writes rows `from`..`to` of `t` as DataRows, each column in its result format (`formats`: one for
 * all, or one per column). All text (what psql, JDBC and most drivers ask for): engine-rs writes the
 * rows from the column buffers, a block at a time (textColumns.ts). With a binary column, row by row
 * here: text values from the column buffers (textCells.ts), binary ones per value.
 */
export async function writeRows(sink: RowSink, t: arrow.Table, formats: readonly number[], from: number, to: number): Promise<void> {
  const fields = fieldsOf(t.schema, formats);
  if (fields.every((f) => f.format !== 1)) return writeTextRows(sink, t, from, to);
  const w = new DataRowWriter((chunk) => sink.send(chunk));
  const n = fields.length;
  let base = 0;
  for (const batch of t.batches) {
    const lo = Math.max(from, base);
    const hi = Math.min(to, base + batch.numRows);
    if (lo < hi) {
      const cells = fields.map((f, i): CellWriter => {
        const d = batch.data.children[i] as arrow.Data;
        return f.format === 1 ? binaryCellWriter(d, f.typeOid, f.name, w) : textCellWriter(d, w);
      });
      for (let r = lo; r < hi; r++) {
        w.beginRow(n);
        const i = r - base;
        for (let c = 0; c < n; c++) (cells[c] as CellWriter)(i);
        w.endRow();
        const wait = sink.drain();
        if (wait) await wait;
        if (sink.gone) return;
      }
    }
    base += batch.numRows;
    if (base >= to) break;
  }
  w.flush();
}

/** All rows of one record batch as text DataRows (a statement's rows streamed as they arrive). */
export function writeBatchRows(sink: RowSink, b: arrow.RecordBatch): Promise<void> {
  return writeTextRows(sink, new arrow.Table([b]), 0, b.numRows);
}

/** {@link writeRows} when every column is text: each record batch's DataRows written natively, a block of rows a call. */
async function writeTextRows(sink: RowSink, t: arrow.Table, from: number, to: number): Promise<void> {
  let base = 0;
  for (const batch of t.batches) {
    const lo = Math.max(from, base);
    const hi = Math.min(to, base + batch.numRows);
    if (lo < hi) {
      const rows = new PgTextRows(batch.data.children.map((d) => textColumnOf(d)));
      if (!(await writeInBlocks(sink, lo - base, hi - base, (a, b) => rows.dataRows(a, b)))) return;
    }
    base += batch.numRows;
    if (base >= to) break;
  }
}

/**
 * Sends rows `from`..`to` as `write` makes them, a block a call, each block sized from the bytes the
 * last one took a row (the first is small, to learn them), pausing while the client has not read
 * what was sent. False when the client is gone.
 */
async function writeInBlocks(sink: RowSink, from: number, to: number, write: (from: number, to: number) => Buffer): Promise<boolean> {
  let per = 64;
  for (let r = from; r < to; ) {
    const end = Math.min(to, r + per);
    const block = write(r, end);
    sink.send(block);
    per = Math.max(1, Math.min(TEXT_ROWS_PER_CALL, Math.floor(TEXT_BYTES_PER_CALL / Math.max(1, block.length / (end - r)))));
    r = end;
    const wait = sink.drain();
    if (wait) await wait;
    if (sink.gone) return false;
  }
  return true;
}

/** Binary-format values of one column chunk, for the types that have one (else 0A000 naming the column). */
function binaryCellWriter(d: arrow.Data, oid: number, name: string, w: DataRowWriter): CellWriter {
  const v = arrow.makeVector(d);
  return (i) => {
    const x: unknown = v.get(i);
    if (x === null || x === undefined) return w.writeNull();
    const b = binaryOf(oid, v.type, x);
    if (!b) throw new SqlError('unsupported_statement', `binary results for column ${name} (type oid ${oid}) are not supported; ask for text`);
    w.writeBytes(b);
  };
}

/** Writes `t` as `COPY ... TO STDOUT` text (CopyOutResponse, CopyData per row, CopyDone, CommandComplete), written natively a block of rows at a time. */
export async function writeCopy(sink: RowSink, t: arrow.Table): Promise<void> {
  sink.send(backend.copyOutResponse(t.schema.fields.length));
  for (const batch of t.batches) {
    const rows = new PgTextRows(batch.data.children.map((d) => textColumnOf(d)));
    if (!(await writeInBlocks(sink, 0, batch.numRows, (a, b) => rows.copyRows(a, b)))) return;
  }
  sink.send(Buffer.concat([backend.copyDone(), backend.commandComplete(`COPY ${t.numRows}`)]));
}
