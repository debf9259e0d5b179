import path from 'node:path';
import { startSqlServer } from '../../sql/server';
import { loadSchemaDir, parseListenAddress, parseSccTargetList, readPasswordFile, returnAddress, type ListenAddress } from '../../sql/serverSettings';
import type { SinkType } from '../registry';
import { bool, int, str } from '../settings';
import { schemaDirSetting } from './schemaDirSetting';
import { serviceSink } from './serviceSink';

const settings = {
  node_name: str({ doc: 'the SQL server node name (/health) — NODE_NAME', default: 'hd-sql' }),
  proxy_endpoint: str({ doc: 'URL of the HD Proxy (Proxy mode is not implemented yet: set scc_targets) — HD_PROXY_ENDPOINT', default: '', allowEmpty: true }),
  dms_endpoint: str({ doc: 'the DMS as schema source (not implemented yet: set schema_dir) — HD_DMS_ENDPOINT', default: '', allowEmpty: true }),
  scc_targets: str({ doc: 'direct SCC mode: host:port[:grpcPort], comma-separated — HD_SQL_SCC_TARGETS', default: '', allowEmpty: true }),
  schema_dir: schemaDirSetting('direct SCC mode: a directory of dataset schema JSON files, one table each — HD_SQL_SCHEMA_DIR'),
  data_plane_subnet: str({ doc: 'CIDR whose local address is advertised to Storage Nodes — PLATFORM_DATA_PLANE_SUBNET', default: '10.150.0.0/24' }),
  return_host: str({ doc: 'address advertised to Storage Nodes, overriding discovery — PLATFORM_DATA_RETURN_HOST', default: '', allowEmpty: true }),
  return_port: int({ doc: 'where results arrive — PLATFORM_DATA_RETURN_PORT', default: 6989, min: 0, max: 65535 }),
  time_index_interval: int({ doc: "batch width in seconds; must match the datasets' — HD_TIME_INDEX_INTERVAL", default: 60, min: 1, max: 86_400 * 366 }),
  default_lookback_sec: int({ doc: 'window read by a query with no time bound — HD_SQL_DEFAULT_LOOKBACK_SEC', default: 3600, min: 1, max: 10 * 366 * 86_400 }),
  query_timeout_ms: int({ doc: 'dispatch, wait for every Storage Node and local evaluation — HD_SQL_QUERY_TIMEOUT_MS', default: 300_000, min: 1, max: 24 * 3_600_000 }),
  max_rows: int({ doc: 'cap on rows returned; 0 is unlimited — HD_SQL_MAX_ROWS', default: 0, min: 0 }),
  query_qos: int({ doc: 'priority weight sent to Storage Nodes — HD_SQL_QUERY_QOS', default: 1, min: 1, max: 255 }),
  pgwire_enabled: bool({ doc: 'serve the PostgreSQL wire door — HD_SQL_PGWIRE_ENABLED', default: true }),
  pgwire_address: str({ doc: 'PostgreSQL wire listener [host]:port — HD_SQL_PGWIRE_ADDRESS', default: ':5432' }),
  pgwire_password_file: str({ doc: 'file whose first line is the SQL wire password; empty: no password — HD_SQL_PGWIRE_PASSWORD_FILE', default: '', allowEmpty: true }),
  http_enabled: bool({ doc: 'serve the HTTP door — HD_SQL_HTTP_ENABLED', default: true }),
  http_address: str({ doc: 'HTTP listener [host]:port — HD_SQL_HTTP_ADDRESS', default: ':8081' }),
  flightsql_enabled: bool({ doc: 'serve Arrow Flight SQL (gRPC) — HD_SQL_FLIGHTSQL_ENABLED', default: true }),
  flightsql_address: str({ doc: 'Arrow Flight SQL listener [host]:port — HD_SQL_FLIGHTSQL_ADDRESS', default: ':31337' }),
  observability_host: str({ doc: '/health and /metrics bind address — OBSERVABILITY_INTERFACE', default: '0.0.0.0' }),
  observability_port: int({ doc: '/health and /metrics port; -1 turns them off — OBSERVABILITY_PORT', default: 8080, min: -1, max: 65535 }),
  threads: int({ doc: 'DuckDB worker threads; 0: one per core — HD_SQL_THREADS', default: 0, min: 0, max: 1024 }),
};

/** `sqlServer`: hd_sql, the read-only SQL server (docs/sql.md). */
export const sqlServerStage: SinkType<typeof settings> = {
  name: 'sqlServer',
  kind: 'sink',
  standalone: true,
  doc: 'hd_sql: the read-only SQL server (PostgreSQL wire, HTTP) over the datasets of a schema directory, querying the SCCs directly, until the run stops.',
  unit: 'records',
  input: 'batched-records',
  settings,
  create: (c, ctx) => {
    const log = (line: string): void => void process.stderr.write(`hd_sql: ${line}\n`);
    if (c.scc_targets === '') {
      throw new Error(
        c.proxy_endpoint !== ''
          ? 'HD_PROXY_ENDPOINT is set, but Proxy mode is not implemented in hd_sql yet: set HD_SQL_SCC_TARGETS (host:port[:grpcPort],...) and HD_SQL_SCHEMA_DIR for direct SCC mode'
          : 'HD_SQL_SCC_TARGETS is not set: hd_sql needs the SCCs to query (host:port[:grpcPort], comma-separated), and HD_SQL_SCHEMA_DIR for the dataset schemas',
      );
    }
    const sccTargets = parseSccTargetList(c.scc_targets, 'HD_SQL_SCC_TARGETS');
    if (sccTargets.length === 0) throw new Error('HD_SQL_SCC_TARGETS names no SCC');
    if (c.schema_dir === undefined) {
      throw new Error(c.dms_endpoint !== '' ? 'HD_DMS_ENDPOINT is set, but reading schemas from the DMS is not implemented in hd_sql yet: set HD_SQL_SCHEMA_DIR' : 'HD_SQL_SCHEMA_DIR is not set: hd_sql needs a directory of dataset schema JSON files (one table each)');
    }
    const schemas = loadSchemaDir(c.schema_dir, 'HD_SQL_SCHEMA_DIR');
    for (const s of schemas) {
      if (s.timeIndexInterval !== c.time_index_interval) log(`WARNING: dataset ${s.id} has time_index_interval ${s.timeIndexInterval} but HD_TIME_INDEX_INTERVAL is ${c.time_index_interval}; its batches are named with the dataset's own`);
    }
    const at = (enabled: boolean, text: string, variable: string): ListenAddress | undefined => (enabled ? parseListenAddress(text, variable) : undefined);
    const pg = at(c.pgwire_enabled, c.pgwire_address, 'HD_SQL_PGWIRE_ADDRESS');
    const password = c.pgwire_password_file === '' ? undefined : readPasswordFile(path.resolve(c.pgwire_password_file), 'HD_SQL_PGWIRE_PASSWORD_FILE');
    const ret = returnAddress(c.return_host, c.data_plane_subnet);
    const start = () =>
      startSqlServer({
        nodeName: c.node_name,
        schemas,
        schemaSource: c.schema_dir as string,
        sccTargets,
        returnHost: ret.host,
        returnPort: c.return_port,
        engine: { lookbackSec: c.default_lookback_sec, timeoutMs: c.query_timeout_ms, maxRows: c.max_rows, qos: c.query_qos },
        ...(c.threads > 0 ? { threads: c.threads } : {}),
        pgwire: pg ? { ...pg, ...(password !== undefined ? { password } : {}) } : undefined,
        http: at(c.http_enabled, c.http_address, 'HD_SQL_HTTP_ADDRESS'),
        flightsql: at(c.flightsql_enabled, c.flightsql_address, 'HD_SQL_FLIGHTSQL_ADDRESS'),
        observability: c.observability_port < 0 ? undefined : { host: c.observability_host, port: c.observability_port },
        log,
      });
    return serviceSink(start, ctx);
  },
};
