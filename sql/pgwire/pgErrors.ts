/**
 * The wire door's own errors — conditions of a PostgreSQL session rather than of a statement
 * (a failed transaction block, a SET the server cannot honour, a portal that does not exist) — and
 * how any error becomes ErrorResponse fields.
 */
import { SqlError } from '../sqlError';
import type { PgErrorFields } from './backend';
import { PgBinaryError } from './pgBinary';

/** PostgreSQL SQLSTATEs the session layer answers with (errcodes.txt). */
export const PG_STATE = {
  /** A statement other than ROLLBACK inside a failed transaction block. */
  inFailedTransaction: '25P02',
  /** COMMIT / ROLLBACK / SET LOCAL / SAVEPOINT outside a transaction block (a WARNING, or an error for SAVEPOINT). */
  noActiveTransaction: '25P01',
  /** BEGIN inside a transaction block (a WARNING). */
  activeTransaction: '25001',
  /** SET or SHOW of a parameter PostgreSQL does not know. */
  undefinedObject: '42704',
  /** SET of a value hd_sql cannot honour, or out of the parameter's range. */
  invalidParameterValue: '22023',
  /** SET of a read-only parameter (server_version, integer_datetimes...). */
  cantChangeRuntimeParam: '55P02',
  /** SET ROLE / SESSION AUTHORIZATION to another user. */
  insufficientPrivilege: '42501',
  /** ROLLBACK TO / RELEASE of a savepoint that does not exist. */
  invalidSavepoint: '3B001',
  /** Execute / Describe / Close of a portal, or CLOSE of a cursor, that does not exist. */
  invalidCursorName: '34000',
  /** Bind / Describe / DEALLOCATE of a prepared statement that does not exist. */
  invalidStatementName: '26000',
  /** Several statements in one Parse message. */
  syntaxError: '42601',
} as const;

/** An error of the wire session with its PostgreSQL SQLSTATE. */
export class PgSessionError extends Error {
  override readonly name = 'PgSessionError';

  constructor(
    readonly sqlstate: string,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** The ErrorResponse fields of any error a statement or message raised. */
export function errorFields(err: unknown): PgErrorFields {
  if (err instanceof PgSessionError) return { severity: 'ERROR', code: err.sqlstate, message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
  if (err instanceof PgBinaryError) return { severity: 'ERROR', code: '22P03', message: `invalid binary parameter: ${err.message}` };
  if (err instanceof SqlError) return { severity: 'ERROR', code: err.codes.sqlstate, message: err.message, ...(err.position !== undefined ? { position: err.position } : {}) };
  return { severity: 'ERROR', code: 'XX000', message: err instanceof Error ? err.message : String(err) };
}

/** The refusal of one prepared statement (or portal) too many on a connection. */
export function tooManyPrepared(max: number, what: string): SqlError {
  return new SqlError('limit_exceeded', `too many ${what}: a connection keeps at most ${max} open (HD_SQL_MAX_PREPARED_STATEMENTS); close (or DEALLOCATE) those it no longer uses`);
}
