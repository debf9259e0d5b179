/**
 * hd_sql as a running service: the engine over the datasets of a schema directory or the DMS,
 * fetching through one PlatformQueryClient (straight from the SCCs, or through the HD Proxy; results
 * on PLATFORM_DATA_RETURN_PORT), behind the PostgreSQL wire, HTTP and Arrow Flight SQL doors, with
 * /health and /metrics on the observability port. The doors share one security configuration
 * (sql/doorSecurity.ts: credentials, TLS, Host allow-list, identity). The settings come validated
 * from the `sqlServer` pipeline service (roles/services/sqlServer.ts).
 */
import type net from 'node:net';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import { guessLevels, type LogFn } from '../lib/logging';
import { Observability } from '../lib/observability';
import type { Schema } from '../engine-rs/schema';
import { LocalSql } from '../local/localSql';
import { Catalog } from './catalog';
import { startCatalogRefresh } from './catalogRefresh';
import { QueryClientFetcher } from './datasetFetcher';
import { checkDoorSecurity, type DoorSecurity } from './doorSecurity';
import { doorLimitsOf, SendBacklog, type DoorLimits } from './doorLimits';
import { FlightSqlServer } from './flight/flightServer';
import { httpDoor } from './httpDoor';
import { PgServer } from './pgwire/pgServer';
import { certificateNames } from './doorTls';
import { DoorCredentials } from './doorUsers';
import { connectHost, type ListenAddress } from './serverSettings';
import { SqlEngine, type ExecuteOptions, type SqlEngineSettings, type SqlResult } from './sqlEngine';
import { SqlError } from './sqlError';
import { describeUpstream, queryClientFor, upstreamReachable, type SqlUpstream } from './upstream';

/** Everything the service needs, validated. */
export interface SqlServerSettings {
  readonly nodeName: string;
  readonly schemas: readonly Schema[];
  /** Where the schemas came from (for /health and the start-up lines). */
  readonly schemaSource: string;
  /**
   * Reads the schema source again (the live catalog, sql/catalogRefresh.ts): with `catalogRefreshMs`
   * > 0, added, changed and removed datasets are served without a restart.
   */
  readonly reloadSchemas?: () => Promise<Schema[]>;
  /** HD_SQL_CATALOG_REFRESH_MS: how often `reloadSchemas` runs; 0 or absent: the schemas read at start stay. */
  readonly catalogRefreshMs?: number;
  /** The SCCs (direct SCC mode) or the Proxy. */
  readonly upstream: SqlUpstream;
  /** Advertised to the Storage Nodes (and bound); undefined: bind every interface, advertise the address toward the SCC. */
  readonly returnHost: string | undefined;
  readonly returnPort: number;
  readonly engine: SqlEngineSettings;
  /** Reads of the Storage Nodes running at once, over one results port (default 1). */
  readonly concurrentReads?: number;
  /** DuckDB worker threads (default DuckDB's own). */
  readonly threads?: number;
  /** Credentials, TLS, Host allow-list and identity of the three doors; absent: open (refused beyond loopback). */
  readonly security?: DoorSecurity;
  /** Limits before authentication and per user (sql/doorLimits.ts: HD_SQL_MAX_CONNECTIONS, HD_SQL_LOGIN_TIMEOUT_MS, ...); absent: the defaults. */
  readonly limits?: Partial<DoorLimits>;
  /** HD_SQL_ALLOW_UNAUTHENTICATED: serve without a credential beyond loopback. */
  readonly allowUnauthenticated?: boolean;
  /** Undefined: the door is disabled. `password` (HD_SQL_PGWIRE_PASSWORD_FILE) when `security` has no credentials. */
  readonly pgwire: (ListenAddress & { readonly password?: string }) | undefined;
  readonly http: ListenAddress | undefined;
  readonly flightsql: ListenAddress | undefined;
  readonly observability: ListenAddress | undefined;
  /** Where start-up and server lines go, each with its level. */
  readonly log: LogFn;
}

/** A running hd_sql and where its doors listen. */
export interface RunningSqlServer {
  readonly pgwire?: ListenAddress;
  readonly http?: ListenAddress;
  readonly flightsql?: ListenAddress;
  readonly returnAddress: ListenAddress;
  readonly observability?: ListenAddress;
  close(): Promise<void>;
}

/** The engine with metrics around each statement (every door goes through `execute`). */
class MeteredSqlEngine extends SqlEngine {
  metrics: { queries: Counter<'outcome'>; seconds: Histogram; notices: Counter } | undefined;

  override async execute(sql: string, opts: ExecuteOptions = {}): Promise<SqlResult> {
    const end = this.metrics?.seconds.startTimer();
    try {
      const r = await super.execute(sql, opts);
      this.metrics?.queries.inc({ outcome: 'ok' });
      this.metrics?.notices.inc(r.notices.length);
      return r;
    } catch (err) {
      this.metrics?.queries.inc({ outcome: err instanceof SqlError ? err.kind : 'internal' });
      throw err;
    } finally {
      end?.();
    }
  }
}


/** Starts hd_sql; rejects (after closing what it opened) when a listener cannot bind. */
export async function startSqlServer(s: SqlServerSettings): Promise<RunningSqlServer> {
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const c of closers.reverse()) await c().catch((err: unknown) => s.log(`while stopping: ${(err as Error).message}`, 'warn'));
  };
  try {
    const doors = [
      ...(s.pgwire ? [{ name: 'PostgreSQL wire', variable: 'HD_SQL_PGWIRE_ADDRESS', at: s.pgwire }] : []),
      ...(s.http ? [{ name: 'HTTP', variable: 'HD_SQL_HTTP_ADDRESS', at: s.http }] : []),
      ...(s.flightsql ? [{ name: 'Arrow Flight SQL', variable: 'HD_SQL_FLIGHTSQL_ADDRESS', at: s.flightsql }] : []),
    ];
    const security: DoorSecurity = { ...s.security, ...(!s.security?.credentials && s.pgwire?.password !== undefined && { credentials: DoorCredentials.password(s.pgwire.password) }) };
    // Refused before anything listens: an open door beyond loopback, TLS asked without a certificate.
    const warnings = checkDoorSecurity(security, doors, s.allowUnauthenticated === true);
    // The SDK's query client, the doors and the catalog refresh log bare lines: their levels are
    // guessed (docs/observability.md, "Logs"); this file's own lines state theirs.
    const bare = guessLevels(s.log);
    const log = (l: string): void => bare(`query client: ${l}`);
    const client = queryClientFor(s.upstream, s.returnHost, s.returnPort, log);
    closers.push(() => client.stop());
    // More clients on the same listener: that many reads run at once (HD_SQL_CONCURRENT_READS).
    const clients = [client];
    for (let i = 1; i < (s.concurrentReads ?? 1); i++) clients.push(queryClientFor(s.upstream, s.returnHost, s.returnPort, log, client));
    closers.push(async () => void (await Promise.all(clients.slice(1).map((c) => c.stop()))));
    const ret = await client.ready().catch((err: unknown) => {
      throw new Error(`the results listener (PLATFORM_DATA_RETURN_PORT) cannot listen on ${s.returnHost ?? '0.0.0.0'}:${s.returnPort}: ${(err as Error).message}`);
    });
    const local = new LocalSql(s.threads !== undefined ? { threads: s.threads } : {});
    closers.push(() => local.close());
    // The background warm-up (below) may be running a DuckDB statement: DuckDB is closed after it
    // ends (closing it under a running statement crashed the process at a stop right after start).
    let warming: Promise<unknown> = Promise.resolve();
    closers.push(async () => void (await warming));
    const engine = new MeteredSqlEngine(new Catalog(s.schemas), local, new QueryClientFetcher(clients, { forwardSqlUser: security.identity === 'user', resultFormat: process.env.HD_SQL_RESULT_FORMAT === 'records' ? 'records' : 'columns' }), s.engine);
    if (s.reloadSchemas && (s.catalogRefreshMs ?? 0) > 0) {
      const refresh = startCatalogRefresh({ intervalMs: s.catalogRefreshMs as number, load: s.reloadSchemas, current: () => engine.catalog, apply: (c) => engine.setCatalog(c), log: bare });
      closers.push(async () => refresh.stop());
    }
    // DuckDB and the chess functions are ready before the doors open, not paid by the first statement.
    await engine.warmUp().catch((err: unknown) => s.log(`warming up the local engine failed (the first statement will try again): ${(err as Error).message}`, 'warn'));
    const out: { -readonly [K in keyof RunningSqlServer]?: RunningSqlServer[K] } = { returnAddress: ret };
    const limits = doorLimitsOf(s.limits);
    const backlog = new SendBacklog();

    if (s.observability) {
      const obs = new Observability({ role: 'sql', nodeName: s.nodeName, host: s.observability.host, port: s.observability.port, processMetrics: true });
      engine.metrics = {
        queries: new Counter({ name: 'hd_sql_queries_total', help: 'SQL statements run, by outcome (ok or the error kind)', labelNames: ['outcome'], registers: [obs.registry] }),
        seconds: new Histogram({ name: 'hd_sql_query_seconds', help: 'time of a statement: plan, fetch and local evaluation', buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300], registers: [obs.registry] }),
        notices: new Counter({ name: 'hd_sql_notices_total', help: 'notices sent with answers (lookback applied, rows cut, batches absent)', registers: [obs.registry] }),
      };
      new Gauge({ name: 'hd_sql_send_backlog_bytes', help: 'bytes of results queued toward PostgreSQL wire clients now (HD_SQL_SEND_BUFFER_BYTES bounds each)', registers: [obs.registry], collect() { this.set(backlog.now()); } });
      new Gauge({ name: 'hd_sql_send_backlog_peak_bytes', help: 'the most bytes one PostgreSQL wire connection has had queued since start', registers: [obs.registry], collect() { this.set(backlog.peak); } });
      obs.addHealthPart('schemas', () => ({ source: s.schemaSource, datasets: engine.catalog.schemas.map((x) => x.id), ...(s.reloadSchemas && (s.catalogRefreshMs ?? 0) > 0 ? { refresh_ms: s.catalogRefreshMs } : {}) }));
      obs.addHealthPart('upstream', async () => {
        const targets = await upstreamReachable(s.upstream);
        return { mode: s.upstream.kind === 'scc' ? 'direct SCC' : 'Proxy', targets, ...(targets.some((t) => t.reachable) ? {} : { status: 'degraded' as const }) };
      });
      out.observability = await obs.listen().catch((err: unknown) => {
        throw new Error(`the observability listener (OBSERVABILITY_PORT) cannot listen on ${s.observability?.host}:${s.observability?.port}: ${(err as Error).message}`);
      });
      closers.push(() => obs.close());
      obs.setStatus('ok');
    }
    if (s.pgwire) {
      const pg = new PgServer(engine, { host: s.pgwire.host, port: s.pgwire.port, security, log: bare, limits, backlog });
      out.pgwire = await pg.listen().catch((err: unknown) => {
        throw new Error(`the PostgreSQL wire door (HD_SQL_PGWIRE_ADDRESS) cannot listen on ${s.pgwire?.host}:${s.pgwire?.port}: ${(err as Error).message}`);
      });
      closers.push(() => pg.close());
    }
    if (s.http) {
      const app: FastifyInstance = httpDoor(engine, { listenHost: s.http.host, security, log: bare, limits });
      closers.push(() => app.close());
      await app.listen({ host: s.http.host, port: s.http.port }).catch((err: unknown) => {
        throw new Error(`the HTTP door (HD_SQL_HTTP_ADDRESS) cannot listen on ${s.http?.host}:${s.http?.port}: ${(err as Error).message}`);
      });
      const a = app.server.address() as net.AddressInfo;
      out.http = { host: a.address, port: a.port };
    }
    if (s.flightsql) {
      const flight = new FlightSqlServer(engine, { host: s.flightsql.host, port: s.flightsql.port, log: bare, security, limits });
      closers.push(() => flight.close());
      out.flightsql = await flight.listen().catch((err: unknown) => {
        throw new Error(`the Arrow Flight SQL door (HD_SQL_FLIGHTSQL_ADDRESS) cannot listen on ${s.flightsql?.host}:${s.flightsql?.port}: ${(err as Error).message}`);
      });
    }
    for (const line of startupLines(s, security, out as RunningSqlServer)) s.log(line, 'info');
    // With the doors open, the first statements' plans, tables and sessions are prepared meanwhile (issue #17).
    warming = engine.warmUpPlans().then(
      (ms) => s.log(`prepared the first statements (plans of ${Math.min(engine.catalog.schemas.length, 8)} dataset(s), sessions) in ${ms} ms`, 'debug'),
      () => undefined,
    );
    // What checkDoorSecurity let through but an operator should know (e.g. an open door on loopback).
    for (const line of warnings) s.log(line, 'warn');
    return { ...(out as RunningSqlServer), close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** What start-up prints: where each door listens, how to reach it, and what it asks for. */
function startupLines(s: SqlServerSettings, sec: DoorSecurity, r: RunningSqlServer): string[] {
  const refresh = s.reloadSchemas && (s.catalogRefreshMs ?? 0) > 0 ? `, re-read every ${s.catalogRefreshMs} ms (HD_SQL_CATALOG_REFRESH_MS)` : '';
  const lines = [`hd_sql '${s.nodeName}': ${s.schemas.length} dataset(s) (${s.schemas.map((x) => x.id).join(', ') || 'none'}) from ${s.schemaSource}${refresh}; ${describeUpstream(s.upstream)}`];
  const creds = sec.credentials;
  const user = creds?.kind === 'users' ? (creds.users[0]?.name ?? 'hd') : 'hd';
  lines.push(
    creds
      ? `doors ask for credentials: ${creds.kind === 'users' ? `the ${creds.users.length} user(s) of HD_SQL_USERS_FILE` : 'the password of HD_SQL_PGWIRE_PASSWORD_FILE (any user name)'}; identity at the Proxy: ${sec.identity === 'user' ? "each SQL user's role and email (HD_SQL_IDENTITY=user)" : "the service's"}`
      : 'doors ask for no credential',
  );
  if (sec.tls) lines.push(`TLS: ${sec.tls.source}, for ${certificateNames(sec.tls.pem.cert)}${sec.tlsRequired ? '; required of PostgreSQL wire clients beyond loopback (HD_SQL_TLS_REQUIRED)' : ''}`);
  if (r.pgwire) lines.push(`PostgreSQL wire on ${r.pgwire.host}:${r.pgwire.port} — psql -h ${connectHost(r.pgwire.host)} -p ${r.pgwire.port} -U ${user}${sec.tls ? ' (sslmode=require)' : ''}`);
  else lines.push('PostgreSQL wire door disabled (HD_SQL_PGWIRE_ENABLED=false)');
  const scheme = sec.tls ? 'https' : 'http';
  if (r.http) lines.push(`HTTP on ${scheme}://${connectHost(r.http.host)}:${r.http.port}/v1/query — curl -s${creds ? ` -u ${user}` : ''} ${scheme}://${connectHost(r.http.host)}:${r.http.port}/v1/query -H 'content-type: application/json' -d '{"sql":"SHOW TABLES"}'`);
  else lines.push('HTTP door disabled (HD_SQL_HTTP_ENABLED=false)');
  const grpcUri = `${sec.tls ? 'grpc+tls' : 'grpc'}://${connectHost(r.flightsql?.host ?? '')}:${r.flightsql?.port ?? 0}`;
  if (r.flightsql) lines.push(`Arrow Flight SQL on ${r.flightsql.host}:${r.flightsql.port} — ${grpcUri} (e.g. ADBC: adbc_driver_flightsql.dbapi.connect("${grpcUri}"${creds ? `, db_kwargs={"username": "${user}", "password": ...}` : ''}))`);
  else lines.push('Arrow Flight SQL door disabled (HD_SQL_FLIGHTSQL_ENABLED=false)');
  lines.push(`results from the Storage Nodes arrive at ${r.returnAddress.host}:${r.returnAddress.port}${s.returnHost ? '' : ` (advertised: the local address toward the ${s.upstream.kind === 'scc' ? 'SCC' : 'Proxy'})`}`);
  if (r.observability) lines.push(`/health and /metrics on http://${connectHost(r.observability.host)}:${r.observability.port}`);
  return lines;
}
