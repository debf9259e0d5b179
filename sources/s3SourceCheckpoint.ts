/**
 * The `s3Source` checkpoint: the objects whose records are all durable, by key and ETag, in a JSON
 * file written atomically (temporary file, fsync, rename, fsync of the directory), so a restarted
 * ingester skips them. An object whose ETag changed (it was replaced) is read again.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';

/** The file's content. */
export interface S3CheckpointFile {
  readonly version: 1;
  readonly bucket: string;
  readonly prefix: string;
  /** Object key → ETag of the object as read. */
  readonly done: Readonly<Record<string, string>>;
}

/** Objects done, persisted to one file (or kept in memory only when there is no file). */
export class S3Checkpoint {
  private readonly done = new Map<string, string>();
  private writing: Promise<void> = Promise.resolve();

  /**
   * Loads `file` when it exists. A file for another bucket or prefix, or one that is not a
   * checkpoint, is refused with an error naming it (so a wrong path never skips objects silently).
   */
  constructor(
    private readonly file: string | undefined,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {
    if (!file) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let parsed: Partial<S3CheckpointFile>;
    try {
      parsed = JSON.parse(text) as Partial<S3CheckpointFile>;
    } catch (err) {
      throw new Error(`checkpoint ${file} is not JSON (${(err as Error).message}); move it away to read every object again`);
    }
    if (parsed.version !== 1 || typeof parsed.done !== 'object' || parsed.done === null) throw new Error(`checkpoint ${file} is not an s3Source checkpoint (version 1 with a 'done' map)`);
    if (parsed.bucket !== bucket || parsed.prefix !== prefix) {
      throw new Error(`checkpoint ${file} belongs to s3://${parsed.bucket}/${parsed.prefix}, not s3://${bucket}/${prefix}; give each source its own checkpoint file`);
    }
    for (const [k, v] of Object.entries(parsed.done)) if (typeof v === 'string') this.done.set(k, v);
  }

  /** Objects done so far. */
  get size(): number {
    return this.done.size;
  }

  /** True when `key` with `etag` is done. */
  isDone(key: string, etag: string): boolean {
    return this.done.get(key) === etag;
  }

  /** Marks `key` done and writes the file; writes are serialised, each one complete. */
  markDone(key: string, etag: string): Promise<void> {
    this.done.set(key, etag);
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  private write(): void {
    if (!this.file) return;
    const body: S3CheckpointFile = { version: 1, bucket: this.bucket, prefix: this.prefix, done: Object.fromEntries(this.done) };
    const dir = path.dirname(this.file);
    mkdirSync(dir, { recursive: true });
    const tmp = `${this.file}.partial`;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, JSON.stringify(body, null, 1));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    const dfd = openSync(dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }
}
