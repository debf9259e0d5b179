/**
 * The SQL server's errors: one kind per row of the reference's error table, each with its SQLSTATE,
 * gRPC status and HTTP status / code, so every door answers the same condition the same way.
 */

/** The conditions of the reference's SQL server error table (plus `internal` for our own faults). */
export type SqlErrorKind = 'unsupported_statement' | 'unknown_dataset' | 'invalid_statement' | 'query_timeout' | 'upstream_unavailable' | 'query_failed' | 'incomplete_result' | 'too_many_connections' | 'limit_exceeded' | 'internal';

/** How each door reports a kind. */
export interface SqlErrorCodes {
  readonly sqlstate: string;
  /** gRPC status code number (Unimplemented 12, NotFound 5, InvalidArgument 3, DeadlineExceeded 4, Unavailable 14). */
  readonly grpc: number;
  readonly http: number;
}

/** The reference's table; `query_failed` (a statement DuckDB refuses while running), `incomplete_result` (HD_SQL_STRICT), `too_many_connections`, `limit_exceeded` (the doors' limits, sql/doorLimits.ts) and `internal` are ours. */
export const SQL_ERROR_CODES: Readonly<Record<SqlErrorKind, SqlErrorCodes>> = {
  unsupported_statement: { sqlstate: '0A000', grpc: 12, http: 400 },
  unknown_dataset: { sqlstate: '42P01', grpc: 5, http: 404 },
  invalid_statement: { sqlstate: '42601', grpc: 3, http: 400 },
  query_timeout: { sqlstate: '57014', grpc: 4, http: 504 },
  upstream_unavailable: { sqlstate: '08006', grpc: 14, http: 502 },
  // Binding errors (a column that does not exist, a type mismatch): 42000 syntax_error_or_access_rule_violation.
  query_failed: { sqlstate: '42000', grpc: 3, http: 400 },
  // HD_SQL_STRICT: the answer would carry a notice. 55000 object_not_in_prerequisite_state, FAILED_PRECONDITION, 422.
  incomplete_result: { sqlstate: '55000', grpc: 9, http: 422 },
  // A door's HD_SQL_MAX_CONNECTIONS reached: 53300 too_many_connections, RESOURCE_EXHAUSTED, 503.
  too_many_connections: { sqlstate: '53300', grpc: 8, http: 503 },
  // A per-connection limit (prepared statements, DoPut bytes): 53400 configuration_limit_exceeded, RESOURCE_EXHAUSTED, 429.
  limit_exceeded: { sqlstate: '53400', grpc: 8, http: 429 },
  internal: { sqlstate: 'XX000', grpc: 13, http: 500 },
};

/** An error of the SQL server, reported by each door with the codes of its kind. */
export class SqlError extends Error {
  override readonly name = 'SqlError';

  /** @param kind the condition; `message` says what happened and, where it helps, what to do. */
  constructor(
    readonly kind: SqlErrorKind,
    message: string,
    options?: { cause?: unknown; position?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.position = options?.position;
  }

  /** 1-based character position in the statement, when the parser named one. */
  readonly position: number | undefined;

  /** The codes each door uses for this error. */
  get codes(): SqlErrorCodes {
    return SQL_ERROR_CODES[this.kind];
  }
}
