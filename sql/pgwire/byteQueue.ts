/**
 * Bytes received and not yet parsed, kept as the list of chunks they arrived in with a cursor into
 * the first one (pg-protocol's parser shape without its concat): adding a chunk never copies what is
 * already held, so a message dripped in a byte at a time costs linear, not quadratic, work. Small
 * chunks (a slow drip) are copied once into a shared tail block, so a drip does not cost a Buffer
 * object per byte either. Only a whole message is copied out, once, when it spans chunks.
 */

/** Chunks smaller than this are copied into the tail block instead of kept one by one. */
const SMALL_CHUNK = 1024;
/** Size of a tail block. */
const TAIL_BLOCK = 16 * 1024;

/** A FIFO of bytes over the chunks they came in. */
export class ByteQueue {
  private chunks: Buffer[] = [];
  /** Index of the first chunk still held. */
  private first = 0;
  /** Bytes of `chunks[first]` already taken. */
  private head = 0;
  private size = 0;
  /** The block small chunks are copied into; its filled part is the last chunk while `tailLen` > 0. */
  private tail: Buffer | undefined;
  private tailLen = 0;

  /** Bytes held. */
  get length(): number {
    return this.size;
  }

  /** Appends a chunk (kept as is, or copied into the tail block when small). */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.size += chunk.length;
    if (chunk.length >= SMALL_CHUNK) {
      this.tail = undefined;
      this.tailLen = 0;
      this.chunks.push(chunk);
      return;
    }
    if (!this.tail || this.tailLen + chunk.length > this.tail.length) {
      this.tail = Buffer.allocUnsafe(TAIL_BLOCK);
      this.tailLen = 0;
      this.chunks.push(this.tail.subarray(0, 0));
    }
    chunk.copy(this.tail, this.tailLen);
    this.tailLen += chunk.length;
    // The tail's view grows in place; views handed out earlier cover bytes that are never rewritten.
    this.chunks[this.chunks.length - 1] = this.tail.subarray(0, this.tailLen);
  }

  /** The byte `at` bytes from the front. @throws RangeError past the end */
  byteAt(at: number): number {
    if (at < 0 || at >= this.size) throw new RangeError(`byte ${at} of ${this.size}`);
    let i = this.first;
    let off = this.head + at;
    while (off >= (this.chunks[i] as Buffer).length) {
      off -= (this.chunks[i] as Buffer).length;
      i++;
    }
    return (this.chunks[i] as Buffer)[off] as number;
  }

  /** The signed big-endian int32 `at` bytes from the front. */
  int32At(at: number): number {
    const c = this.chunks[this.first];
    if (c && this.head + at + 4 <= c.length) return c.readInt32BE(this.head + at);
    return ((this.byteAt(at) << 24) | (this.byteAt(at + 1) << 16) | (this.byteAt(at + 2) << 8) | this.byteAt(at + 3)) | 0;
  }

  /** Removes and returns the first `n` bytes: a view when they lie in one chunk, else one copy. */
  take(n: number): Buffer {
    if (n < 0 || n > this.size) throw new RangeError(`take ${n} of ${this.size}`);
    if (n === 0) return Buffer.alloc(0);
    const c = this.chunks[this.first] as Buffer;
    if (this.head + n <= c.length) {
      const out = c.subarray(this.head, this.head + n);
      this.skip(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const cur = this.chunks[this.first] as Buffer;
      const k = Math.min(n - at, cur.length - this.head);
      cur.copy(out, at, this.head, this.head + k);
      at += k;
      this.skip(k);
    }
    return out;
  }

  /** Drops the first `n` bytes (n ≤ length). */
  private skip(n: number): void {
    this.size -= n;
    this.head += n;
    while (this.first < this.chunks.length && this.head >= (this.chunks[this.first] as Buffer).length) {
      // The tail block's view may still grow: keep it while it is the last chunk and has room.
      if (this.first === this.chunks.length - 1 && this.tail && this.tailLen < this.tail.length) break;
      this.head -= (this.chunks[this.first] as Buffer).length;
      this.first++;
    }
    if (this.size === 0 && this.first === this.chunks.length) {
      this.chunks = [];
      this.first = 0;
      this.head = 0;
    } else if (this.first > 64 && this.first * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.first);
      this.first = 0;
    }
  }
}
