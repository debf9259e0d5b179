/**
 * The DMS's embedded store: one JSON document, replaced atomically on every change (write to a
 * temporary file, fsync, rename, fsync the directory). Changes are applied one at a time, in call
 * order, and a change resolves only once it is durable, so an acknowledged change survives a crash.
 * The document is small (topology, schemas, tokens, certificate serials, the policy); a
 * PostgreSQL-backed store implementing {@link Store} is the path to several DMS replicas
 * (docs/control-plane.md, "Store").
 */
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../../lib/atomicFile';

/** A durable document store: read the current state, apply changes in order. */
export interface Store<T> {
  /** The current state (do not mutate it; use {@link update}). */
  get(): Readonly<T>;
  /**
   * Applies `change` to a copy of the state and makes the result durable, then makes it current.
   * A change that throws leaves the state as it was. Resolves with the change's result.
   */
  update<R>(change: (draft: T) => R): Promise<R>;
}

/** A problem with the store's file; the message names it. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
}

/** {@link Store} over one JSON file. */
export class JsonFileStore<T> implements Store<T> {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    /** The file holding the document. */
    readonly file: string,
    private state: T,
  ) {}

  /**
   * Opens the store at `file`, or starts from `initial()` when the file does not exist. `check`
   * validates (and may migrate) what was read; it throws to refuse a damaged file.
   */
  static async open<T>(file: string, initial: () => T, check: (doc: unknown) => T): Promise<JsonFileStore<T>> {
    let text: string | undefined;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new StoreError(`cannot read ${file}: ${(err as Error).message}`);
    }
    if (text === undefined) {
      const s = new JsonFileStore(file, initial());
      await writeFileAtomic(file, JSON.stringify(s.state, null, 1));
      return s;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new StoreError(`${file} is not valid JSON (${(err as Error).message}); restore it from backup`);
    }
    try {
      return new JsonFileStore(file, check(doc));
    } catch (err) {
      throw new StoreError(`${file} does not hold a valid store: ${(err as Error).message}`);
    }
  }

  get(): Readonly<T> {
    return this.state;
  }

  update<R>(change: (draft: T) => R): Promise<R> {
    const run = async (): Promise<R> => {
      const draft = structuredClone(this.state);
      const result = change(draft);
      await writeFileAtomic(this.file, JSON.stringify(draft, null, 1));
      this.state = draft;
      return result;
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }
}
