/**
 * The environment of an `hd run pipelines/sql.yaml` process in the tests that start one with a DMS
 * identity: only the PostgreSQL door on (HTTP and Flight SQL off), no observability listener, one
 * DuckDB thread (the test machines are small), and results back on a port of the test's choosing.
 */

/** The DMS and the service identity files hd_sql reads its schemas (and reports health) with. */
export interface SqlDmsIdentity {
  readonly url: string;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** Where the hd_sql process listens. */
export interface SqlProcessPorts {
  /** HD_SQL_PGWIRE_ADDRESS is 127.0.0.1:pgPort. */
  readonly pgPort: number;
  /** PLATFORM_DATA_RETURN_PORT: where the Storage Nodes send results. */
  readonly returnPort: number;
  /** HD_DMS_ENDPOINT and HD_DMS_{CA,CLIENT_CERT,CLIENT_KEY}_FILE. */
  readonly dms?: SqlDmsIdentity;
}

/** The hd_sql process environment for `ports` and `dms`, with `extra` (upstream, mode) added last. */
export function sqlProcessEnv(ports: SqlProcessPorts, extra: Record<string, string> = {}): Record<string, string> {
  const dms = ports.dms;
  return {
    ...(dms ? { HD_DMS_ENDPOINT: dms.url, HD_DMS_CA_FILE: dms.ca, HD_DMS_CLIENT_CERT_FILE: dms.cert, HD_DMS_CLIENT_KEY_FILE: dms.key } : {}),
    PLATFORM_DATA_RETURN_HOST: '127.0.0.1',
    PLATFORM_DATA_RETURN_PORT: String(ports.returnPort),
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pgPort}`,
    HD_SQL_HTTP_ENABLED: 'false',
    HD_SQL_FLIGHTSQL_ENABLED: 'false',
    OBSERVABILITY_PORT: '-1',
    HD_SQL_THREADS: '1',
    ...extra,
  };
}
