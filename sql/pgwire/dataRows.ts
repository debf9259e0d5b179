/**
 * DataRow messages written straight into one growing buffer, handed on in chunks: a result of many
 * rows costs a few large writes instead of a Buffer per value and a concat per row (the per-value
 * path made the wire 4× slower than the HTTP door's Arrow answer for large results).
 */

/** Bytes collected before a chunk is handed on. */
const CHUNK_BYTES = 256 * 1024;
/**
 * The buffer a writer starts with: most answers are a few rows, and a writer is made per result, so
 * it starts small (a large result grows it, doubling, to about CHUNK_BYTES once).
 */
const FIRST_BYTES = 8 * 1024;

/** Writes DataRow ('D') messages; `flush` hands on what is written. */
export class DataRowWriter {
  private buf = Buffer.allocUnsafe(FIRST_BYTES);
  private at = 0;
  private rowStart = -1;

  /** @param emit receives each full chunk (and the rest at `flush`). */
  constructor(private readonly emit: (chunk: Buffer) => void) {}

  /** Starts a row of `columns` values. */
  beginRow(columns: number): void {
    this.ensure(7);
    this.rowStart = this.at;
    this.buf[this.at] = 0x44; // 'D'
    this.at += 5; // the length, written at endRow
    this.buf.writeInt16BE(columns, this.at);
    this.at += 2;
  }

  /** A NULL value. */
  writeNull(): void {
    this.ensure(4);
    this.buf.writeInt32BE(-1, this.at);
    this.at += 4;
  }

  /** A text value (UTF-8). */
  writeText(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.ensure(4 + n);
    this.buf.writeInt32BE(n, this.at);
    this.at += 4;
    this.at += this.buf.write(s, this.at, 'utf8');
  }

  /** A text value known to be ASCII (numbers, `t` / `f`): one byte a character, no UTF-8 length pass. */
  writeAscii(s: string): void {
    this.ensure(4 + s.length);
    this.buf.writeInt32BE(s.length, this.at);
    this.at += 4;
    this.at += this.buf.write(s, this.at, 'latin1');
  }

  /** The bytes `src[start..end)` as a value (UTF-8 text an Arrow column already holds). */
  writeBytesOf(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.ensure(4 + n);
    this.buf.writeInt32BE(n, this.at);
    this.at += 4;
    this.buf.set(src.subarray(start, end), this.at);
    this.at += n;
  }

  /** A value already encoded (a binary-format value). */
  writeBytes(b: Uint8Array): void {
    this.ensure(4 + b.length);
    this.buf.writeInt32BE(b.length, this.at);
    this.at += 4;
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  /** Ends the row: its length is filled in; a full chunk is handed on. */
  endRow(): void {
    this.buf.writeInt32BE(this.at - this.rowStart - 1, this.rowStart + 1);
    this.rowStart = -1;
    if (this.at >= CHUNK_BYTES) this.flush();
  }

  /** Hands on every finished row written so far. */
  flush(): void {
    if (this.at === 0) return;
    this.emit(Buffer.from(this.buf.subarray(0, this.at)));
    this.at = 0;
  }

  private ensure(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }
}
