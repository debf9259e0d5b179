/**
 * Errors of the query client's local evaluation (DuckDB SQL, vector search, graph, local aggregations).
 */

/**
 * What went wrong:
 * - `ERR_SQL`: DuckDB refused or failed the statement; the message is DuckDB's own.
 * - `ERR_SQL_INTERRUPTED`: the statement was cancelled (abort signal or timeout).
 * - `ERR_SQL_TYPE`: a column type that has no DuckDB counterpart here.
 * - `ERR_SQL_LOAD`: a value that cannot be loaded (an enum label unknown to the table, an integer too wide).
 * - `ERR_SQL_CLOSED`: the LocalSql instance or session was closed.
 * - `ERR_LOCAL_ARGS`: malformed arguments or configuration; the message names the key.
 */
export type LocalSqlErrorCode = 'ERR_SQL' | 'ERR_SQL_INTERRUPTED' | 'ERR_SQL_TYPE' | 'ERR_SQL_LOAD' | 'ERR_SQL_CLOSED' | 'ERR_LOCAL_ARGS';

/** A failure of local evaluation; `code` says which kind. */
export class LocalSqlError extends Error {
  override readonly name = 'LocalSqlError';
  /** The kind of failure. */
  readonly code: LocalSqlErrorCode;

  /** Wraps a failure of kind `code`. */
  constructor(code: LocalSqlErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A malformed argument or configuration value, named by its key. */
export function argsError(key: string, problem: string): LocalSqlError {
  return new LocalSqlError('ERR_LOCAL_ARGS', `${key}: ${problem}`);
}
