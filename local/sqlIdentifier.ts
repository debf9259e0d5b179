/**
 * SQL identifiers for the embedded DuckDB: quoting, and the check that a table name is usable.
 */
import { argsError } from './localSqlError';

/** `name` as a double-quoted SQL identifier (`"` doubled), safe for any text. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Checks a table name or alias given by a caller: a non-empty string of at most 255 characters,
 * without NUL.
 * @throws LocalSqlError `ERR_LOCAL_ARGS` naming `key`.
 */
export function checkTableName(key: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw argsError(key, `a table name must be a non-empty string, got ${JSON.stringify(name)}`);
  if (name.length > 255) throw argsError(key, `a table name is at most 255 characters, got ${name.length}`);
  if (name.includes('\0')) throw argsError(key, 'a table name cannot contain a NUL character');
  return name;
}
