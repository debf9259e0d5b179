/**
 * LocalSql: the query client's embedded DuckDB (@duckdb/node-api). One in-memory instance per client,
 * started on first use and closed by `close()`; each evaluation runs in its own session (connection)
 * with its own temporary tables, so concurrent queries never see each other's rows.
 * docs/sdk-local.md describes the type mapping, the load path and the error rules.
 *
 * The instance is sandboxed (`sandboxConfig`): SQL run in it reaches no file, network or extension
 * on behalf of whoever wrote the SQL — only its own spill folder — and its settings are locked.
 */
import os from 'node:os';
import path from 'node:path';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import * as arrow from 'apache-arrow';
import { DuckDBInstance } from '@duckdb/node-api';
import { arrowSchemaFor } from '../engine-rs/decode';
import { Schema } from '../engine-rs/schema';
import { argsError, LocalSqlError } from './localSqlError';
import { LocalSqlSession, type QueryOptions, type TableSource } from './localSqlSession';
import { checkTableName } from './sqlIdentifier';

/** Settings of the embedded DuckDB. */
export interface LocalSqlOptions {
  /** DuckDB worker threads; default: DuckDB's own (one per core). */
  readonly threads?: number;
  /** DuckDB memory limit, e.g. `'2GB'`; default: DuckDB's (80% of RAM). */
  readonly memoryLimit?: string;
  /**
   * Where DuckDB spills when a query outgrows memory (created 0700 if missing, kept on close);
   * default a fresh private folder (`mkdtemp`, 0700) under the OS temp dir, removed on close. (An
   * in-memory DuckDB otherwise spills into `./.tmp`.) The one place the sandboxed engine may write.
   */
  readonly tempDirectory?: string;
  /**
   * DuckDB's extension directory; default `extensions` inside the private spill folder. Nothing is
   * ever installed or loaded into it (autoinstall, autoload and LOAD are off): it only keeps DuckDB
   * from defaulting to `~/.duckdb`. Never point it at a folder others can write.
   */
  readonly extensionDirectory?: string;
}

/**
 * The DuckDB settings of a sandboxed instance, in the order they must be applied: the folders first
 * (DuckDB refuses to change them once external access is off), then the extension switches, then
 * `enable_external_access=false` (only `temp_directory` stays reachable: DuckDB allows it itself)
 * and last `lock_configuration`, so no SET or PRAGMA can undo any of it later.
 */
export function sandboxConfig(dirs: { readonly tempDirectory: string; readonly extensionDirectory: string }, tuning: Readonly<Record<string, string>> = {}): Record<string, string> {
  return {
    temp_directory: dirs.tempDirectory,
    extension_directory: dirs.extensionDirectory,
    ...tuning,
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    allow_unsigned_extensions: 'false',
    allow_persistent_secrets: 'false',
    enable_external_access: 'false',
    lock_configuration: 'true',
  };
}

/** Options of `applySql` and `executeSqlOnEmpty`. */
export interface ApplySqlOptions extends QueryOptions {
  /** The table's name in the SQL; default: the schema's `hd.dataset` metadata, else `dataset`. */
  readonly tableName?: string;
  /** Further names of the same table (the dataset's human-readable name). */
  readonly aliases?: readonly string[];
}

function checkOptions(o: LocalSqlOptions): void {
  if (o.threads !== undefined && !(Number.isInteger(o.threads) && o.threads >= 1)) throw argsError('threads', `must be an integer >= 1, got ${String(o.threads)}`);
  if (o.memoryLimit !== undefined && !/^\s*\d+(\.\d+)?\s*[KMGT]?i?B\s*$/i.test(o.memoryLimit)) throw argsError('memoryLimit', `must look like '512MB' or '2GB', got ${JSON.stringify(o.memoryLimit)}`);
}

/**
 * The label vectors the decoder would give each enumerated column of `schema` (labels in code order,
 * each once, then the default label), keyed as `register`'s `dictionaries` option expects: so a
 * table registered from the schema alone has the same ENUM columns as one registered from rows.
 */
export function enumDictionaries(schema: Schema, arrowSchema: arrow.Schema = arrowSchemaFor(schema)): Map<string, arrow.Vector> {
  const labelsOf = (name: string): arrow.Vector | undefined => {
    const e = schema.enums[name];
    if (!e) return undefined;
    const byCode = Object.entries(e.values).sort(([, a], [, b]) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
    const labels = [...new Set([...byCode.map(([l]) => l), e.defaultLabel])];
    return arrow.vectorFromArray(labels, new arrow.Utf8());
  };
  const out = new Map<string, arrow.Vector>();
  for (const f of schema.fields) {
    const af = arrowSchema.fields.find((x) => x.name === f.name);
    const name = f.array?.enum ?? f.enum;
    const labels = name === undefined ? undefined : labelsOf(name);
    if (!af || !labels) continue;
    const child = f.array ? (af.type as arrow.DataType).children?.[0] : undefined;
    out.set(child ? `${f.name}.${child.name}` : f.name, labels);
  }
  return out;
}

/**
 * The embedded DuckDB of one query client.
 * @example
 * const local = new LocalSql();
 * const top = await local.applySql(table, 'SELECT proto, count(*) AS n FROM flows GROUP BY proto', { tableName: 'flows' });
 * await local.close();
 */
export class LocalSql {
  private instance: Promise<DuckDBInstance> | undefined;
  private readonly sessions = new Set<LocalSqlSession>();
  /** The private spill folder this instance made (and removes on close); undefined until started or when the caller named one. */
  private ownTempDirectory: string | undefined;
  private closed = false;

  /** @throws LocalSqlError `ERR_LOCAL_ARGS` for a bad option, naming it. */
  constructor(private readonly options: LocalSqlOptions = {}) {
    checkOptions(options);
  }

  /** Where this instance spills (undefined before the first session when no `tempDirectory` was given). */
  get tempDirectory(): string | undefined {
    return this.options.tempDirectory ?? this.ownTempDirectory;
  }

  /** Opens a session: one DuckDB connection whose registered tables only it sees. Close it when done. */
  async openSession(): Promise<LocalSqlSession> {
    if (this.closed) throw new LocalSqlError('ERR_SQL_CLOSED', 'LocalSql is closed');
    let connection;
    try {
      const instance = await (this.instance ??= this.start());
      connection = await instance.connect();
    } catch (err) {
      // A failed start is not cached: the next call tries again.
      this.instance = undefined;
      throw new LocalSqlError('ERR_SQL', `cannot start the embedded DuckDB: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    if (this.closed) {
      connection.closeSync();
      throw new LocalSqlError('ERR_SQL_CLOSED', 'LocalSql is closed');
    }
    const session = new LocalSqlSession(connection, (s) => this.sessions.delete(s));
    this.sessions.add(session);
    return session;
  }

  /**
   * Runs `sql` over `table`, registered as `tableName` (and `aliases`); the reference's apply_sql.
   * Empty SQL returns the table unchanged (execute_to_sql's rule).
   * @throws LocalSqlError `ERR_SQL` with DuckDB's message when the SQL fails (the reference returns
   * null; we reject), `ERR_SQL_INTERRUPTED` on abort or timeout.
   */
  async applySql(table: Exclude<TableSource, arrow.Schema>, sql: string, opts: ApplySqlOptions = {}): Promise<arrow.Table> {
    const t = table instanceof arrow.Table ? table : new arrow.Table(table instanceof arrow.RecordBatch ? [table] : [...table]);
    if (sql.trim() === '') return t;
    return this.withTable(t, t.schema, sql, opts);
  }

  /**
   * Runs `sql` over a zero-row table typed by `schema` (an HD dataset schema, named by its id with its
   * human-readable name as alias, or an Arrow schema), so `SELECT count(*)` answers 0: for callers
   * whose dispatch returned no batches.
   */
  async executeSqlOnEmpty(schema: Schema | arrow.Schema, sql: string, opts: ApplySqlOptions = {}): Promise<arrow.Table> {
    if (schema instanceof Schema) {
      const aliases = opts.aliases ?? (schema.name && schema.name !== schema.id ? [schema.name] : []);
      const arrowSchema = arrowSchemaFor(schema);
      return this.withTable(arrowSchema, arrowSchema, sql, { ...opts, tableName: opts.tableName ?? schema.id, aliases }, enumDictionaries(schema, arrowSchema));
    }
    return this.withTable(schema, schema, sql, opts);
  }

  /** Closes every session and the DuckDB instance, and removes the spill folder. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.sessions].map((s) => s.close()));
    const instance = this.instance;
    this.instance = undefined;
    if (instance) {
      try {
        (await instance).closeSync();
      } catch {
        // The instance never started: nothing to close.
      }
    }
    if (this.ownTempDirectory !== undefined) rmSync(this.ownTempDirectory, { recursive: true, force: true });
    this.ownTempDirectory = undefined;
  }

  /** `await using local = new LocalSql()` closes it. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async withTable(source: TableSource, schema: arrow.Schema, sql: string, opts: ApplySqlOptions, dictionaries?: ReadonlyMap<string, arrow.Vector>): Promise<arrow.Table> {
    const name = checkTableName('tableName', opts.tableName ?? schema.metadata.get('hd.dataset') ?? 'dataset');
    // timeoutMs covers the load and the statement; the signal cancels either.
    const deadline = opts.timeoutMs !== undefined && opts.timeoutMs > 0 ? Date.now() + opts.timeoutMs : undefined;
    const session = await this.openSession();
    try {
      await session.register(name, source, { aliases: opts.aliases ?? [], signal: opts.signal, deadline, dictionaries });
      return await session.query(sql, { signal: opts.signal, timeoutMs: opts.timeoutMs, deadline });
    } finally {
      await session.close();
    }
  }

  private async start(): Promise<DuckDBInstance> {
    const o = this.options;
    let temp = o.tempDirectory;
    if (temp === undefined) {
      // mkdtemp: a new 0700 folder with an unguessable name, so no other local user can pre-create,
      // read or link it (the old fixed names under a world-writable /tmp allowed all three).
      temp = this.ownTempDirectory ??= mkdtempSync(path.join(os.tmpdir(), 'hd-duckdb-'));
    } else {
      // DuckDB creates only the last level, and cannot once external access is off.
      mkdirSync(temp, { recursive: true, mode: 0o700 });
    }
    const tuning: Record<string, string> = {};
    if (o.threads !== undefined) tuning['threads'] = String(o.threads);
    if (o.memoryLimit !== undefined) tuning['memory_limit'] = o.memoryLimit;
    return DuckDBInstance.create(':memory:', sandboxConfig({ tempDirectory: temp, extensionDirectory: o.extensionDirectory ?? path.join(temp, 'extensions') }, tuning));
  }
}
