import path from 'node:path';
import { startServiceHealth } from '../../net/serviceHealth';
import { startSqlServer, type RunningSqlServer } from '../../sql/server';
import { startServiceIdentity } from '../../sql/serviceIdentity';
import { doorSecurityOf, withIdentityTls } from '../../sql/doorSettings';
import type { Schema } from '../../engine-rs/schema';
import { dmsTls, fetchDmsSchemas, fetchProxySchemas, type DmsSchemaSource } from '../../sql/schemaSources';
import { loadSchemaDir, parseListenAddress, parseSccTargetList, readPasswordFile, returnAddress, type ListenAddress } from '../../sql/serverSettings';
import { describeUpstream, upstreamReachable, type SqlUpstream } from '../../sql/upstream';
import type { ServiceType } from '../../pipelines/registry';
import { bool, int, str } from '../../pipelines/settings';
import { schemaDirSetting } from '../stages/schemaDirSetting';
import { serve } from './serve';
import { logLine } from '../../lib/logging';

const settings = {
  node_name: str({ doc: 'the SQL server node name (/health) — NODE_NAME', default: 'hd-sql' }),
  proxy_endpoint: str({ doc: 'Proxy mode: URL of the HD Proxy (https://host:6986); queries go through its policy — HD_PROXY_ENDPOINT', default: '', allowEmpty: true }),
  proxy_role: str({ doc: "Proxy mode: the service's identity at the Proxy, sent as X-Forwarded-Role — HD_SQL_PROXY_ROLE", default: '', allowEmpty: true }),
  proxy_email: str({ doc: 'Proxy mode: sent as X-Forwarded-Email with the role — HD_SQL_PROXY_EMAIL', default: '', allowEmpty: true }),
  proxy_token_file: str({ doc: 'Proxy mode: a file holding a JWT sent as Authorization: Bearer (a Proxy that verifies JWTs) — HD_SQL_PROXY_TOKEN_FILE', default: '', allowEmpty: true }),
  dms_endpoint: str({ doc: 'the DMS as schema source (GET /v1/datasets over mutual TLS) — HD_DMS_ENDPOINT', default: '', allowEmpty: true }),
  dms_ca_file: str({ doc: "the DMS's root certificate (PEM); also verifies the Proxy — HD_DMS_CA_FILE", default: '', allowEmpty: true }),
  dms_client_cert_file: str({ doc: 'a certificate the DMS issued to this service (PEM); also presented to the Proxy — HD_DMS_CLIENT_CERT_FILE', default: '', allowEmpty: true }),
  dms_client_key_file: str({ doc: 'its private key (PEM) — HD_DMS_CLIENT_KEY_FILE', default: '', allowEmpty: true }),
  scc_targets: str({ doc: 'direct SCC mode: host:port[:grpcPort], comma-separated — HD_SQL_SCC_TARGETS', default: '', allowEmpty: true }),
  schema_dir: schemaDirSetting('a directory of dataset schema JSON files, one table each (instead of the DMS) — HD_SQL_SCHEMA_DIR'),
  catalog_refresh_ms: int({ doc: 'how often the schema source is read again, so datasets added, changed or removed appear without a restart; 0 turns it off — HD_SQL_CATALOG_REFRESH_MS', default: 5000, min: 0, max: 86_400_000 }),
  data_plane_subnet: str({ doc: 'CIDR whose local address is advertised to Storage Nodes — PLATFORM_DATA_PLANE_SUBNET', default: '10.150.0.0/24' }),
  return_host: str({ doc: 'address advertised to Storage Nodes, overriding discovery — PLATFORM_DATA_RETURN_HOST', default: '', allowEmpty: true }),
  return_port: int({ doc: 'where results arrive — PLATFORM_DATA_RETURN_PORT', default: 6989, min: 0, max: 65535 }),
  time_index_interval: int({ doc: "batch width in seconds; must match the datasets' — HD_TIME_INDEX_INTERVAL", default: 60, min: 1, max: 86_400 * 366 }),
  default_lookback_sec: int({ doc: 'window read by a query with no time bound — HD_SQL_DEFAULT_LOOKBACK_SEC', default: 3600, min: 1, max: 10 * 366 * 86_400 }),
  query_timeout_ms: int({ doc: 'dispatch, wait for every Storage Node and local evaluation — HD_SQL_QUERY_TIMEOUT_MS', default: 300_000, min: 1, max: 24 * 3_600_000 }),
  max_rows: int({ doc: 'cap on rows returned; 0 is unlimited — HD_SQL_MAX_ROWS', default: 0, min: 0 }),
  result_tls: bool({ doc: "receive results over mutual TLS with the HD_DMS_* certificate (the cluster's nodes registered with the DMS) — HD_SQL_RESULT_TLS", default: false }),
  strict: bool({ doc: 'fail a statement whose answer would carry a notice (default lookback applied, rows cut, batches absent) instead of answering it — HD_SQL_STRICT', default: false }),
  query_qos: int({ doc: 'priority weight sent to Storage Nodes — HD_SQL_QUERY_QOS', default: 1, min: 1, max: 255 }),
  aggregate_pushdown: bool({ doc: 'compute the aggregates of statements that split on the Storage Nodes (docs/sql.md, "Aggregate pushdown") — HD_SQL_AGGREGATE_PUSHDOWN', default: true }),
  top_pushdown: bool({ doc: 'have each batch send only its best n records for ORDER BY <field> LIMIT n over one dataset, its WHERE pushed whole (docs/sql.md, "Top records") — HD_SQL_TOP_PUSHDOWN', default: true }),
  row_passthrough: bool({ doc: 'answer statements that only pick columns of one dataset, their WHERE pushed whole, with the fetched rows, without DuckDB (docs/sql.md, "Row passthrough") — HD_SQL_ROW_PASSTHROUGH', default: true }),
  explain_pushdown: bool({ doc: 'every answer carries an informational notice saying what was pushed down (never fails a statement under HD_SQL_STRICT) — HD_SQL_EXPLAIN_PUSHDOWN', default: false }),
  pgwire_enabled: bool({ doc: 'serve the PostgreSQL wire door — HD_SQL_PGWIRE_ENABLED', default: true }),
  pgwire_address: str({ doc: 'PostgreSQL wire listener [host]:port (loopback unless set) — HD_SQL_PGWIRE_ADDRESS', default: '127.0.0.1:5432' }),
  pgwire_password_file: str({ doc: 'file whose first line is the password of every door (any user name); empty: none — HD_SQL_PGWIRE_PASSWORD_FILE', default: '', allowEmpty: true }),
  users_file: str({ doc: 'JSON file of the doors\' users (SCRAM-SHA-256 secret and/or bearer token digest, role, email; docs/sql.md) — HD_SQL_USERS_FILE', default: '', allowEmpty: true }),
  allow_unauthenticated: bool({ doc: 'serve without a credential on an address beyond loopback — HD_SQL_ALLOW_UNAUTHENTICATED', default: false }),
  tls_cert_file: str({ doc: 'certificate chain (PEM) the doors serve TLS with — HD_SQL_TLS_CERT_FILE', default: '', allowEmpty: true }),
  tls_key_file: str({ doc: 'its private key (PEM) — HD_SQL_TLS_KEY_FILE', default: '', allowEmpty: true }),
  tls_from_identity: bool({ doc: 'serve TLS with the certificate the DMS issued to hd_sql (HD_DMS_*) — HD_SQL_TLS_FROM_IDENTITY', default: false }),
  tls_required: bool({ doc: 'PostgreSQL wire clients beyond loopback must use TLS — HD_SQL_TLS_REQUIRED', default: false }),
  identity: str({ doc: 'whose identity the Proxy evaluates: service (default) or user (the SQL user\'s role and email from HD_SQL_USERS_FILE) — HD_SQL_IDENTITY', default: 'service' }),
  http_allowed_hosts: str({ doc: 'Host header names the HTTP door serves beyond loopback and its listen address, comma-separated — HD_SQL_HTTP_ALLOWED_HOSTS', default: '', allowEmpty: true }),
  http_enabled: bool({ doc: 'serve the HTTP door — HD_SQL_HTTP_ENABLED', default: true }),
  http_address: str({ doc: 'HTTP listener [host]:port (loopback unless set) — HD_SQL_HTTP_ADDRESS', default: '127.0.0.1:8081' }),
  flightsql_enabled: bool({ doc: 'serve Arrow Flight SQL (gRPC) — HD_SQL_FLIGHTSQL_ENABLED', default: true }),
  flightsql_address: str({ doc: 'Arrow Flight SQL listener [host]:port (loopback unless set) — HD_SQL_FLIGHTSQL_ADDRESS', default: '127.0.0.1:31337' }),
  observability_host: str({ doc: '/health and /metrics bind address — OBSERVABILITY_INTERFACE', default: '0.0.0.0' }),
  observability_port: int({ doc: '/health and /metrics port; -1 turns them off — OBSERVABILITY_PORT', default: 8080, min: -1, max: 65535 }),
  concurrent_reads: int({ doc: 'reads of the Storage Nodes running at once (each SQL statement reads each of its datasets once); more wait their turn — HD_SQL_CONCURRENT_READS', default: 4, min: 1, max: 256 }),
  threads: int({ doc: 'DuckDB worker threads; 0: one per core — HD_SQL_THREADS', default: 0, min: 0, max: 1024 }),
  login_timeout_ms: int({ doc: 'a connection not logged in by then is closed (PostgreSQL\'s authentication_timeout; HTTP: time to send the request headers) — HD_SQL_LOGIN_TIMEOUT_MS', default: 10_000, min: 1, max: 600_000 }),
  max_connections: int({ doc: 'connections open at once per door, logged in or not (Flight SQL: calls in flight); past it 53300 / 503 / RESOURCE_EXHAUSTED — HD_SQL_MAX_CONNECTIONS', default: 100, min: 1, max: 100_000 }),
  max_prepared_statements: int({ doc: 'prepared statements (and portals) one PostgreSQL wire connection, or one Flight SQL peer, keeps open — HD_SQL_MAX_PREPARED_STATEMENTS', default: 1000, min: 1, max: 1_000_000 }),
  flight_max_put_bytes: int({ doc: 'bytes one Flight SQL DoPut (parameters of a prepared statement) may send — HD_SQL_FLIGHT_MAX_PUT_BYTES', default: 4 * 1024 * 1024, min: 1, max: 1024 * 1024 * 1024 }),
  send_buffer_bytes: int({ doc: 'a result stops being produced while this many bytes wait to be sent to its (slow) client — HD_SQL_SEND_BUFFER_BYTES', default: 1024 * 1024, min: 1, max: 1024 * 1024 * 1024 }),
};

/** `sqlServer`: hd_sql, the read-only SQL server (docs/sql.md). */
export const sqlServerType: ServiceType<typeof settings, Record<string, never>, undefined> = {
  name: 'sqlServer',
  kind: 'service',
  server: true,
  doc: 'hd_sql: the read-only SQL server (PostgreSQL wire, HTTP, Arrow Flight SQL) over the datasets of a schema directory or the DMS, querying through the HD Proxy or the SCCs directly, until the run stops.',
  settings,
  start: async (c) => {
    const log = logLine('hd_sql: ');
    const dms = dmsSource(c);
    if (c.result_tls && !dms) throw new Error('HD_SQL_RESULT_TLS=true needs the certificate the listener presents: set HD_DMS_ENDPOINT, HD_DMS_CA_FILE, HD_DMS_CLIENT_CERT_FILE and HD_DMS_CLIENT_KEY_FILE');
    const upstream: SqlUpstream = { ...upstreamOf(c, dms), ...(c.result_tls && { resultTls: true }) };
    if (c.schema_dir === undefined && !dms && upstream.kind !== 'proxy') {
      throw new Error('hd_sql needs its dataset schemas: set HD_SQL_SCHEMA_DIR (a directory of schema JSON files, one table each), HD_DMS_ENDPOINT with HD_DMS_CA_FILE, HD_DMS_CLIENT_CERT_FILE and HD_DMS_CLIENT_KEY_FILE, or HD_PROXY_ENDPOINT (the Proxy\'s copy)');
    }
    const readSchemas = async (): Promise<Schema[]> =>
      c.schema_dir !== undefined ? loadSchemaDir(c.schema_dir, 'HD_SQL_SCHEMA_DIR') : dms ? await fetchDmsSchemas(dms) : await fetchProxySchemas(upstream as Extract<SqlUpstream, { kind: 'proxy' }>);
    const loadSchemas = async (): Promise<{ schemas: Schema[]; source: string }> => {
      const schemas = await readSchemas();
      for (const s of schemas) {
        if (s.timeIndexInterval !== c.time_index_interval) log(`WARNING: dataset ${s.id} has time_index_interval ${s.timeIndexInterval} but HD_TIME_INDEX_INTERVAL is ${c.time_index_interval}; its batches are named with the dataset's own`, 'warn');
      }
      return { schemas, source: c.schema_dir ?? (dms ? `the DMS at ${dms.endpoint}` : `the Proxy at ${c.proxy_endpoint}`) };
    };
    const at = (enabled: boolean, text: string, variable: string): ListenAddress | undefined => (enabled ? parseListenAddress(text, variable) : undefined);
    const pg = at(c.pgwire_enabled, c.pgwire_address, 'HD_SQL_PGWIRE_ADDRESS');
    const doorSecurity = doorSecurityOf(c, dms !== undefined);
    const ret = returnAddress(c.return_host, c.data_plane_subnet);
    const start = async (): Promise<RunningSqlServer> => {
      const { schemas, source } = await loadSchemas();
      // With a DMS-CA certificate: renewed while hd_sql runs, and read live by everything presenting it.
      // sql/serviceIdentity.ts logs bare lines: their levels are guessed (docs/observability.md, "Logs").
      const service = dms ? startServiceIdentity(dms, { log }) : undefined;
      let server: RunningSqlServer;
      try {
        server = await startSqlServer({
          nodeName: c.node_name,
          schemas,
          schemaSource: source,
          reloadSchemas: readSchemas,
          catalogRefreshMs: c.catalog_refresh_ms,
          upstream: service ? { ...upstream, tls: service.tls } : upstream,
          returnHost: ret.host,
          returnPort: c.return_port,
          engine: { lookbackSec: c.default_lookback_sec, timeoutMs: c.query_timeout_ms, maxRows: c.max_rows, qos: c.query_qos, strict: c.strict, aggregatePushdown: c.aggregate_pushdown, rowPassthrough: c.row_passthrough, topPushdown: c.top_pushdown, explainPushdown: c.explain_pushdown },
          concurrentReads: c.concurrent_reads,
          ...(c.threads > 0 ? { threads: c.threads } : {}),
          security: withIdentityTls(doorSecurity, c.tls_from_identity, service?.tls),
          allowUnauthenticated: c.allow_unauthenticated,
          limits: { loginTimeoutMs: c.login_timeout_ms, maxConnections: c.max_connections, maxPreparedStatements: c.max_prepared_statements, maxPutBytes: c.flight_max_put_bytes, sendBufferBytes: c.send_buffer_bytes },
          pgwire: pg,
          http: at(c.http_enabled, c.http_address, 'HD_SQL_HTTP_ADDRESS'),
          flightsql: at(c.flightsql_enabled, c.flightsql_address, 'HD_SQL_FLIGHTSQL_ADDRESS'),
          observability: c.observability_port < 0 ? undefined : { host: c.observability_host, port: c.observability_port },
          log,
        });
      } catch (err) {
        service?.stop();
        throw err;
      }
      if (!dms || !service) return server;
      // With a DMS-CA certificate the service reports its health to the DMS like a registered node
      // (docs/control-plane.md, "Node health"): degraded while an upstream address does not answer.
      const health = startServiceHealth({
        dmsUrl: dms.endpoint,
        identity: service.identity,
        log,
        source: async () => {
          const upstreams = await upstreamReachable(upstream);
          return { status: upstreams.every((u) => u.reachable) ? 'ok' : 'degraded', detail: { upstream: describeUpstream(upstream), addresses: upstreams } };
        },
      });
      return {
        ...server,
        close: async () => {
          health.stop();
          service.stop();
          await server.close();
        },
      };
    };
    return serve(start);
  },
};

type StageConfig = Parameters<(typeof sqlServerType)['start']>[0];

/** The DMS as schema source when HD_DMS_ENDPOINT is set; every file it needs, or an error naming the missing one. */
function dmsSource(c: StageConfig): DmsSchemaSource | undefined {
  if (c.dms_endpoint === '') return undefined;
  const missing = (['dms_ca_file', 'dms_client_cert_file', 'dms_client_key_file'] as const).filter((k) => c[k] === '').map((k) => `HD_${k.toUpperCase()}`);
  if (missing.length > 0) throw new Error(`HD_DMS_ENDPOINT is set, but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not: the DMS serves schemas over mutual TLS to a certificate it issued`);
  return { endpoint: c.dms_endpoint, caFile: path.resolve(c.dms_ca_file), certFile: path.resolve(c.dms_client_cert_file), keyFile: path.resolve(c.dms_client_key_file) };
}

/** The Proxy (HD_PROXY_ENDPOINT) or the SCCs (HD_SQL_SCC_TARGETS); exactly one. */
function upstreamOf(c: StageConfig, dms: DmsSchemaSource | undefined): SqlUpstream {
  if (c.proxy_endpoint !== '' && c.scc_targets !== '') throw new Error('set HD_PROXY_ENDPOINT (queries through the Proxy) or HD_SQL_SCC_TARGETS (straight to the SCCs), not both');
  if (c.proxy_endpoint === '') {
    if (c.scc_targets === '') throw new Error('hd_sql needs where to send its reads: HD_PROXY_ENDPOINT (the HD Proxy) or HD_SQL_SCC_TARGETS (host:port[:grpcPort],... of the SCCs)');
    const targets = parseSccTargetList(c.scc_targets, 'HD_SQL_SCC_TARGETS');
    if (targets.length === 0) throw new Error('HD_SQL_SCC_TARGETS names no SCC');
    // SCCs registered with a DMS serve QueryDispatch with mutual TLS: dispatch with the service's DMS-CA certificate.
    return { kind: 'scc', targets, ...(dms && { tls: dmsTls(dms) }) };
  }
  let url: URL;
  try {
    url = new URL(c.proxy_endpoint);
  } catch {
    throw new Error(`HD_PROXY_ENDPOINT must be a URL such as https://hd-proxy:6986, got "${c.proxy_endpoint}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`HD_PROXY_ENDPOINT must be https:// (or http://), got "${c.proxy_endpoint}"`);
  const headers: Record<string, string> = {};
  if (c.proxy_role !== '') headers['x-forwarded-role'] = c.proxy_role;
  if (c.proxy_email !== '') headers['x-forwarded-email'] = c.proxy_email;
  if (c.proxy_token_file !== '') headers.authorization = `Bearer ${readPasswordFile(path.resolve(c.proxy_token_file), 'HD_SQL_PROXY_TOKEN_FILE')}`;
  if (Object.keys(headers).length === 0) throw new Error('HD_PROXY_ENDPOINT is set without an identity for the Proxy: set HD_SQL_PROXY_ROLE (and HD_SQL_PROXY_EMAIL) for a Proxy behind an ingress, or HD_SQL_PROXY_TOKEN_FILE for one that verifies JWTs');
  return { kind: 'proxy', url: c.proxy_endpoint, tls: dms ? dmsTls(dms) : {}, headers };
}
