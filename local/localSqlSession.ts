/**
 * One DuckDB connection of a LocalSql instance: Arrow tables registered under names (temporary tables,
 * seen by this session only), SQL over them returning Arrow, and interruption for timeouts and cancel.
 */
import * as arrow from 'apache-arrow';
import duckdb from '@duckdb/node-bindings';
import { DuckDBDataChunk, type DuckDBConnection } from '@duckdb/node-api';
import { loaderFor, sampleDictionaries, type ColumnLoader } from './arrowToDuckdb';
import { resultToArrow, streamToArrow } from './duckdbToArrow';
import { LocalSqlError } from './localSqlError';
import { checkTableName, quoteIdentifier } from './sqlIdentifier';

/** What `register` takes: rows (a Table, a RecordBatch, batches) or only the schema of rows to come. */
export type TableSource = arrow.Table | arrow.RecordBatch | readonly arrow.RecordBatch[] | arrow.Schema;

/** Options of loading rows (`register`, `append`). */
export interface LoadOptions {
  /** Aborting it stops the load at the next slice (`ERR_SQL_INTERRUPTED`). */
  readonly signal?: AbortSignal;
  /** A `Date.now()` time after which the load stops (`ERR_SQL_INTERRUPTED`, "timed out"). */
  readonly deadline?: number;
}

/** Options of `register`. */
export interface RegisterOptions extends LoadOptions {
  /** Further names for the same table (e.g. the dataset's human-readable name), as views. */
  readonly aliases?: readonly string[];
  /**
   * Label vectors for Dictionary columns (by column name, `list.item` for list elements), used when
   * the table is created before rows with dictionaries arrive (a schema-only registration).
   */
  readonly dictionaries?: ReadonlyMap<string, arrow.Vector>;
}

/** Options of `query`. */
export interface QueryOptions {
  /** Aborting it interrupts the statement; the query rejects with `ERR_SQL_INTERRUPTED`. */
  readonly signal?: AbortSignal;
  /** Interrupts the statement after this many milliseconds (`ERR_SQL_INTERRUPTED`). */
  readonly timeoutMs?: number;
  /** A `Date.now()` time at which the statement is interrupted too (a budget shared with a load). */
  readonly deadline?: number;
  /**
   * Values of the statement's `$1`, `$2`, ... placeholders (bound by DuckDB, never spliced into the
   * text), e.g. the SQL doors' bind parameters. (`json_serialize_sql` takes only a literal.)
   */
  readonly params?: readonly SqlParam[];
  /**
   * Stop once the statement has produced more than this many rows (the result is streamed from
   * DuckDB chunk by chunk and no further chunk is produced): the table then holds `maxRows + 1`
   * rows, which tells the caller the cap applied. Absent: every row.
   */
  readonly maxRows?: number;
}

/** A statement parameter: plain values only (bigint for integers beyond 2^53). */
export type SqlParam = null | boolean | number | bigint | string;

/** A registered table: its schema, and once created in DuckDB its column loaders and reusable chunk. */
interface Registered {
  readonly name: string;
  readonly schema: arrow.Schema;
  readonly aliases: readonly string[];
  readonly dictionaries?: ReadonlyMap<string, arrow.Vector>;
  loaders?: ColumnLoader[];
  chunk?: duckdb.DataChunk;
  /** Rows appended since the table was created or last emptied. */
  rows: number;
  /** Parked (`park`): kept for reuse, lends no metadata to results until registered again. */
  parked: boolean;
}

/** Rows per DuckDB data chunk (DuckDB's vector size). */
const CHUNK_ROWS = duckdb.vector_size();
/** Chunks appended between two yields to the event loop (~130k rows). */
const CHUNKS_PER_YIELD = 64;

function batchesOf(source: Exclude<TableSource, arrow.Schema>): readonly arrow.RecordBatch[] {
  if (source instanceof arrow.Table) return source.batches;
  if (source instanceof arrow.RecordBatch) return [source];
  return source;
}

function sqlError(err: unknown): LocalSqlError {
  if (err instanceof LocalSqlError) return err;
  return new LocalSqlError('ERR_SQL', err instanceof Error ? err.message : String(err), { cause: err });
}

/**
 * A DuckDB connection with its own registered tables. Create it with `LocalSql.openSession()`;
 * close it when done (its temporary tables go with it).
 * @example
 * const session = await localSql.openSession();
 * await session.register('flows', table, { aliases: ['Network flows'] });
 * const top = await session.query('SELECT src, count(*) n FROM flows GROUP BY src ORDER BY n DESC LIMIT 5');
 * await session.close();
 */
export class LocalSqlSession {
  private readonly tables = new Map<string, Registered>();
  private running = 0;
  private closed = false;
  private closing: Promise<void> | undefined;
  private whenIdle: (() => void) | undefined;
  /** Loads (register, append, table creation) run one at a time: they share the connection and each table's data chunk. */
  private loads: Promise<unknown> = Promise.resolve();

  /** @internal Made by LocalSql.openSession. */
  constructor(
    private readonly connection: DuckDBConnection,
    private readonly onClose: (s: LocalSqlSession) => void,
  ) {}

  /** Rows removed by `park` without dropping their table over the session's life (DuckDB may keep their memory until the connection closes). */
  private emptiedRows = 0;

  /** The names registered so far (aliases not included). */
  get tableNames(): readonly string[] {
    return [...this.tables.keys()];
  }

  /** In a `begin` … `rollback`: each table's row count when it began (tables registered later are not in it). */
  private tx: Map<Registered, number> | undefined;

  /** True between `begin` and `rollback`. */
  get inTransaction(): boolean {
    return this.tx !== undefined;
  }

  /**
   * Starts a transaction for one statement's rows: what `append` loads until `rollback` is
   * transaction-local — no commit per append, and `rollback` discards it with its memory (an emptied
   * table would keep it). Registered tables not created yet are created first. Register nothing
   * during it: such tables are forgotten at `rollback` (their DDL is rolled back too).
   */
  begin(): Promise<void> {
    return this.oneAtATime(async () => {
      this.assertOpen();
      if (this.tx) throw new LocalSqlError('ERR_LOCAL_ARGS', 'begin: a transaction is already open on this session');
      for (const t of this.tables.values()) if (!t.loaders) await this.create(t, []);
      await this.runCounted('BEGIN TRANSACTION');
      this.tx = new Map([...this.tables.values()].map((t) => [t, t.rows]));
    });
  }

  /** Ends `begin`'s transaction, discarding the rows appended in it. No transaction: nothing. */
  rollback(): Promise<void> {
    return this.oneAtATime(async () => {
      this.assertOpen();
      const tx = this.tx;
      if (!tx) return;
      this.tx = undefined;
      await this.runCounted('ROLLBACK');
      for (const [name, t] of this.tables) {
        const before = tx.get(t);
        if (before === undefined) this.tables.delete(name);
        else t.rows = before;
      }
    });
  }

  /** Runs a statement counted as running, so close() waits for it. */
  private async runCounted(sql: string): Promise<void> {
    this.enter();
    try {
      await this.connection.run(sql);
    } catch (err) {
      throw sqlError(err);
    } finally {
      this.leave();
    }
  }

  /** True once `close` was called (or the LocalSql closed it). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Rows `park` emptied from kept tables so far: a pool recycles a session past some bound. */
  get parkedRows(): number {
    return this.emptiedRows;
  }

  /**
   * An empty table `name` of `schema` for rows to come (`append`). When the session already has
   * `name` from a `reuseOrRegister` with this very Schema object and the same aliases, that table
   * is kept (emptied if it holds rows) instead of being created again: statements on a reused
   * session that read the same columns of a dataset skip the DDL. Otherwise `register(name, schema, opts)`.
   */
  reuseOrRegister(name: string, schema: arrow.Schema, opts: RegisterOptions = {}): Promise<void> {
    return this.oneAtATime(async () => {
      this.assertOpen();
      const e = this.tables.get(name);
      const aliases = [...new Set(opts.aliases ?? [])].filter((a) => a !== name);
      if (e && e.loaders && e.schema === schema && e.aliases.length === aliases.length && e.aliases.every((a, i) => a === aliases[i])) {
        if (e.rows > 0) await this.empty(e);
        e.parked = false;
        return;
      }
      await this.registerNow(name, schema, opts);
    });
  }

  /**
   * Parks `name` after a statement: its rows go (the table is dropped when it held more than
   * `dropAbove` rows, default 65 536, so a large load's memory is freed at once; else it is
   * emptied and kept for `reuseOrRegister`), and it lends no column metadata to results until
   * registered again. Unknown names are ignored.
   */
  park(name: string, opts: { dropAbove?: number } = {}): Promise<void> {
    return this.oneAtATime(async () => {
      this.assertOpen();
      const e = this.tables.get(name);
      if (!e) return;
      if (!e.loaders || e.rows > (opts.dropAbove ?? 65_536)) {
        this.tables.delete(name);
        if (!e.loaders) return;
        // Counted as running: close() waits for it instead of closing the connection under it.
        this.enter();
        try {
          for (const a of e.aliases) await this.connection.run(`DROP VIEW IF EXISTS temp.main.${quoteIdentifier(a)}`);
          await this.connection.run(`DROP TABLE IF EXISTS temp.main.${quoteIdentifier(name)}`);
        } catch (err) {
          throw sqlError(err);
        } finally {
          this.leave();
        }
        return;
      }
      if (e.rows > 0) await this.empty(e);
      e.parked = true;
    });
  }

  private async empty(e: Registered): Promise<void> {
    this.enter();
    try {
      await this.connection.run(`TRUNCATE temp.main.${quoteIdentifier(e.name)}`);
    } catch (err) {
      throw sqlError(err);
    } finally {
      this.leave();
    }
    this.emptiedRows += e.rows;
    e.rows = 0;
  }

  /**
   * Registers rows (or only their schema, rows to follow with `append`) under `name`, replacing a
   * table of that name. Dictionary columns become DuckDB ENUMs with the labels of the first batch;
   * registered with a schema only, they become VARCHAR when the first rows arrive without one.
   * @throws LocalSqlError `ERR_SQL_TYPE` for a column type DuckDB cannot hold, `ERR_LOCAL_ARGS` for a bad name.
   */
  register(name: string, source: TableSource, opts: RegisterOptions = {}): Promise<void> {
    return this.oneAtATime(() => this.registerNow(name, source, opts));
  }

  private async registerNow(name: string, source: TableSource, opts: RegisterOptions): Promise<void> {
    this.assertOpen();
    checkTableName('tableName', name);
    const aliases = [...new Set((opts.aliases ?? []).map((a) => checkTableName('aliases', a)))].filter((a) => a !== name);
    const schema = source instanceof arrow.Schema ? source : source instanceof arrow.Table || source instanceof arrow.RecordBatch ? source.schema : source[0]?.schema;
    if (!schema) throw new LocalSqlError('ERR_LOCAL_ARGS', `register ${name}: no batches and no schema`);
    const entry: Registered = { name, schema, aliases, dictionaries: opts.dictionaries, rows: 0, parked: false };
    this.tables.set(name, entry);
    if (source instanceof arrow.Schema) return;
    const batches = batchesOf(source);
    await this.create(entry, batches);
    await this.appendBatches(entry, batches, opts);
  }

  /**
   * Appends rows to a registered table, e.g. record batches as they arrive from the Storage Nodes.
   * The rows must have the registered schema's column names and types.
   */
  append(name: string, rows: arrow.Table | arrow.RecordBatch | readonly arrow.RecordBatch[], opts: LoadOptions = {}): Promise<void> {
    return this.oneAtATime(() => this.appendNow(name, rows, opts));
  }

  private async appendNow(name: string, rows: arrow.Table | arrow.RecordBatch | readonly arrow.RecordBatch[], opts: LoadOptions): Promise<void> {
    this.assertOpen();
    const entry = this.tables.get(name);
    if (!entry) throw new LocalSqlError('ERR_LOCAL_ARGS', `append: no table registered as ${JSON.stringify(name)}`);
    const batches = batchesOf(rows);
    for (const b of batches) this.checkShape(entry, b.schema);
    if (!entry.loaders) await this.create(entry, batches);
    await this.appendBatches(entry, batches, opts);
  }

  /**
   * Runs `sql` (one statement or several; the last one's rows are returned) over the registered
   * tables and returns its rows as an Arrow Table.
   * @throws LocalSqlError `ERR_SQL` with DuckDB's message when the statement fails; `ERR_SQL_INTERRUPTED`
   * when `signal` aborts or `timeoutMs` passes first.
   */
  async query(sql: string, opts: QueryOptions = {}): Promise<arrow.Table> {
    this.assertOpen();
    await this.oneAtATime(async () => {
      for (const t of this.tables.values()) if (!t.loaders) await this.create(t, []);
    });
    if (opts.signal?.aborted) throw new LocalSqlError('ERR_SQL_INTERRUPTED', 'query cancelled before it started');
    let why: string | undefined;
    const stop = (reason: string): void => {
      why ??= reason;
      this.connection.interrupt();
    };
    const onAbort = (): void => stop('query cancelled');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const limits = [opts.timeoutMs, opts.deadline === undefined ? undefined : Math.max(1, opts.deadline - Date.now())].filter((x): x is number => x !== undefined && x > 0);
    const label = opts.timeoutMs !== undefined && opts.timeoutMs > 0 ? `query timed out after ${opts.timeoutMs} ms` : 'query timed out';
    const timer = limits.length > 0 ? setTimeout(() => stop(label), Math.min(...limits)) : undefined;
    this.enter();
    try {
      const check = (): void => {
        why ??= this.closed ? 'query cancelled: the session was closed' : undefined;
        if (why) throw new LocalSqlError('ERR_SQL_INTERRUPTED', why);
      };
      const params = opts.params && opts.params.length > 0 ? [...opts.params] : undefined;
      if (opts.maxRows !== undefined) {
        const streamed = params ? await this.connection.stream(sql, params) : await this.connection.stream(sql);
        if (why) throw new LocalSqlError('ERR_SQL_INTERRUPTED', why);
        return await streamToArrow(streamed, opts.maxRows, this.hints(), check);
      }
      const result = params ? await this.connection.run(sql, params) : await this.connection.run(sql);
      if (why) throw new LocalSqlError('ERR_SQL_INTERRUPTED', why);
      return await resultToArrow(result, this.hints(), check);
    } catch (err) {
      if (err instanceof LocalSqlError && err.code === 'ERR_SQL_INTERRUPTED') throw err;
      why ??= this.closed ? 'query cancelled: the session was closed' : undefined;
      if (why) throw new LocalSqlError('ERR_SQL_INTERRUPTED', `${why} (${err instanceof Error ? err.message : String(err)})`, { cause: err });
      throw sqlError(err);
    } finally {
      this.leave();
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Interrupts the running statement, if any (it rejects with DuckDB's interrupt message). */
  interrupt(): void {
    if (!this.closed) this.connection.interrupt();
  }

  /**
   * Closes the connection; its tables are dropped. A running statement is interrupted (it rejects with
   * `ERR_SQL_INTERRUPTED`) and the connection closes once it has returned. Idempotent.
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    if (this.running > 0) this.connection.interrupt();
    // Closing a connection under a running statement would leave that statement's promise unsettled.
    const idle = this.running === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.whenIdle = resolve));
    this.closing = idle.then(() => {
      this.connection.closeSync();
      this.onClose(this);
    });
    return this.closing;
  }

  /** Runs `fn` after every load queued before it, so concurrent callers cannot interleave. */
  private oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.loads.then(fn);
    this.loads = next.catch(() => undefined);
    return next;
  }

  private enter(): void {
    this.running++;
  }

  private leave(): void {
    if (--this.running === 0 && this.whenIdle) this.whenIdle();
  }

  private assertOpen(): void {
    if (this.closed) throw new LocalSqlError('ERR_SQL_CLOSED', 'the local SQL session is closed');
  }

  /** Fields of every registered table (first registration wins), to keep metadata on result columns. */
  private hints(): arrow.Schema {
    const seen = new Set<string>();
    const fields: arrow.Field[] = [];
    for (const t of this.tables.values()) {
      if (t.parked) continue;
      for (const f of t.schema.fields) if (!seen.has(f.name)) (seen.add(f.name), fields.push(f));
    }
    return new arrow.Schema(fields);
  }

  private checkShape(entry: Registered, schema: arrow.Schema): void {
    const want = entry.schema.fields;
    const got = schema.fields;
    const same = want.length === got.length && want.every((f, i) => f.name === got[i]!.name && String(f.type) === String(got[i]!.type));
    if (!same) {
      const show = (fs: readonly arrow.Field[]): string => fs.map((f) => `${f.name}: ${String(f.type)}`).join(', ');
      throw new LocalSqlError('ERR_SQL_LOAD', `append to ${entry.name}: rows have columns (${show(got)}), the table has (${show(want)})`);
    }
  }

  private async create(entry: Registered, batches: readonly arrow.RecordBatch[]): Promise<void> {
    const dictionaries = new Map<string, arrow.Vector>(entry.dictionaries);
    for (const b of batches) sampleDictionaries(entry.schema.fields, b.data.children, dictionaries);
    const loaders = entry.schema.fields.map((f) => loaderFor(f, dictionaries));
    const columns = entry.schema.fields.map((f, i) => `${quoteIdentifier(f.name)} ${loaders[i]!.type.toString()}`);
    try {
      await this.connection.run(`CREATE OR REPLACE TEMP TABLE ${quoteIdentifier(entry.name)} (${columns.join(', ')})`);
      for (const alias of entry.aliases) {
        await this.connection.run(`CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(alias)} AS SELECT * FROM temp.main.${quoteIdentifier(entry.name)}`);
      }
    } catch (err) {
      throw sqlError(err);
    }
    entry.loaders = loaders;
    entry.chunk = duckdb.create_data_chunk(loaders.map((l) => l.type.toLogicalType().logical_type));
  }

  private async appendBatches(entry: Registered, batches: readonly arrow.RecordBatch[], opts: LoadOptions): Promise<void> {
    const loaders = entry.loaders!;
    const chunk = entry.chunk!;
    const wrapped = new DuckDBDataChunk(chunk);
    let appender;
    try {
      appender = await this.connection.createAppender(entry.name, null, 'temp');
    } catch (err) {
      throw sqlError(err);
    }
    let sinceYield = 0;
    this.enter();
    try {
      for (const batch of batches) {
        const columns = batch.data.children;
        for (let start = 0; start < batch.numRows; start += CHUNK_ROWS) {
          const n = Math.min(CHUNK_ROWS, batch.numRows - start);
          duckdb.data_chunk_reset(chunk);
          for (let c = 0; c < loaders.length; c++) loaders[c]!.write(duckdb.data_chunk_get_vector(chunk, c), columns[c]!, start, n);
          duckdb.data_chunk_set_size(chunk, n);
          appender.appendDataChunk(wrapped);
          entry.rows += n;
          if (++sinceYield >= CHUNKS_PER_YIELD) {
            sinceYield = 0;
            // Appends are synchronous native calls: let timers and sockets run between slices.
            await new Promise<void>((resolve) => setImmediate(resolve));
            this.assertOpen();
            if (opts.signal?.aborted) throw new LocalSqlError('ERR_SQL_INTERRUPTED', 'query cancelled while loading rows');
            if (opts.deadline !== undefined && Date.now() > opts.deadline) throw new LocalSqlError('ERR_SQL_INTERRUPTED', 'query timed out while loading rows');
          }
        }
      }
      appender.closeSync();
    } catch (err) {
      throw sqlError(err);
    } finally {
      this.leave();
    }
  }
}
