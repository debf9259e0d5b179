/**
 * hd_sql's HTTP door (fastify): `POST /v1/query` (and `/v1/sql`) {sql, params?} → columns, rows
 * (arrays as JSON arrays) and notices, or Arrow IPC stream with `Accept:
 * application/vnd.apache.arrow.stream`; `GET /v1/datasets[/{id}]`. Errors answer the reference's
 * HTTP status with `{error: {code, sqlstate, message}}`. Before any route: the Host header must be
 * one this door is reached by (hostAllowList.ts: 403 `host_not_allowed`), and with door credentials
 * the request must carry Basic or Bearer credentials (401 `unauthenticated` with WWW-Authenticate);
 * with the doors' TLS it is HTTPS only.
 */
import type net from 'node:net';
import * as arrow from 'apache-arrow';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { authenticate } from './authorizationHeader';
import { statementIdentity, type DoorSecurity } from './doorSecurity';
import type { DoorPrincipal } from './doorUsers';
import { HostAllowList } from './hostAllowList';
import { doorLimitsOf, type DoorLimits } from './doorLimits';
import { limitHttpConnections } from './httpLimits';
import { runAsSqlUser } from './sqlUser';
import type { SqlParam } from '../local/localSqlSession';
import { oidOf, textOf } from './pgwire/pgTypes';
import type { SqlEngine } from './sqlEngine';
import { SqlError } from './sqlError';
import { sqlTypeOf } from './catalog';

const ARROW_STREAM = 'application/vnd.apache.arrow.stream';

/** A JSON value of one cell: numbers that fit, exact numbers beyond as text, lists as arrays. */
function jsonOf(t: arrow.DataType, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  if (arrow.DataType.isList(t) || arrow.DataType.isFixedSizeList(t)) {
    const ct = (t.children[0] as arrow.Field).type;
    return [...(v as Iterable<unknown>)].map((x) => jsonOf(ct, x));
  }
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return typeof v === 'number' && !Number.isFinite(v) ? String(v) : v;
  return textOf(t, v);
}

function errorBody(err: SqlError): { error: { code: string; sqlstate: string; message: string; position?: number } } {
  return { error: { code: err.kind, sqlstate: err.codes.sqlstate, message: err.message, ...(err.position !== undefined ? { position: err.position } : {}) } };
}

/** Where the door listens and what it trusts. */
export interface HttpDoorOptions {
  /** The bound host: allowed as Host besides loopback (every local address when it is a wildcard). Default loopback only. */
  readonly listenHost?: string;
  readonly security?: DoorSecurity;
  /** Told of each refused request (a line for the service log). */
  readonly log?: (line: string) => void;
  /** Connections and header time (sql/doorLimits.ts); absent: the defaults. */
  readonly limits?: Partial<DoorLimits>;
}

/** The challenges a 401 carries: both schemes this door takes. */
const CHALLENGES = ['Basic realm="hd_sql", charset="UTF-8"', 'Bearer realm="hd_sql"'];

/** Builds the HTTP door's fastify app (not yet listening). */
export function httpDoor(engine: SqlEngine, opts: HttpDoorOptions = {}): FastifyInstance {
  const security = opts.security ?? {};
  const tls = security.tls;
  const app = (
    tls
      ? Fastify({ logger: false, bodyLimit: 1024 * 1024, https: { ...tls.pem, minVersion: 'TLSv1.2', SNICallback: (_name: string, cb: (err: Error | null, ctx?: import('node:tls').SecureContext) => void) => cb(null, tls.secureContext()) } })
      : Fastify({ logger: false, bodyLimit: 1024 * 1024 })
  ) as unknown as FastifyInstance;
  if (tls) {
    // Clients that send no SNI (an address as host) get the server's default context: keep it current.
    let served = tls.pem.cert;
    app.server.prependListener('connection', (_socket: net.Socket) => {
      if (tls.pem.cert === served) return;
      served = tls.pem.cert;
      (app.server as unknown as import('node:tls').Server).setSecureContext({ ...tls.pem, minVersion: 'TLSv1.2' });
    });
  }
  // HD_SQL_MAX_CONNECTIONS first: a connection past the cap is refused (503) before Host or credentials are looked at.
  limitHttpConnections(app, doorLimitsOf(opts.limits), tls !== undefined, opts.log);
  const hosts = new HostAllowList(opts.listenHost ?? '127.0.0.1', security.httpAllowedHosts);
  const principals = new WeakMap<FastifyRequest, DoorPrincipal>();
  app.addHook('onRequest', async (req, reply) => {
    if (!hosts.allows(req.headers.host)) {
      opts.log?.(`HTTP: refused Host ${JSON.stringify(String(req.headers.host ?? '').slice(0, 100))} from ${req.ip}`);
      return reply.code(403).send({ error: { code: 'host_not_allowed', message: `the Host header ${JSON.stringify(String(req.headers.host ?? '').slice(0, 100))} is not a name this server is reached by (a DNS rebinding guard); add it to HD_SQL_HTTP_ALLOWED_HOSTS` } });
    }
    if (!security.credentials) return;
    const r = authenticate(security.credentials, req.headers.authorization);
    if ('refused' in r) {
      opts.log?.(`HTTP: refused ${req.method} ${req.url.slice(0, 100)} from ${req.ip}: ${r.refused}`);
      return reply.code(401).header('www-authenticate', CHALLENGES).send({ error: { code: 'unauthenticated', sqlstate: '28000', message: r.refused } });
    }
    principals.set(req, r.principal);
  });
  const query = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => runAsSqlUser(statementIdentity(security, principals.get(req)), () => answer(req, reply));
  const answer = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const body = req.body as { sql?: unknown; params?: unknown } | undefined;
    if (!body || typeof body.sql !== 'string') return reply.code(400).send(errorBody(new SqlError('invalid_statement', 'the body must be a JSON object with "sql" (a string)')));
    if (body.params !== undefined && !Array.isArray(body.params)) return reply.code(400).send(errorBody(new SqlError('invalid_statement', '"params" must be an array')));
    const ac = new AbortController();
    // The client going away (the response closing before it was written) cancels the query.
    reply.raw.on('close', () => {
      if (!reply.raw.writableEnded) ac.abort();
    });
    try {
      const r = await engine.execute(body.sql, { signal: ac.signal, ...(body.params ? { params: body.params as SqlParam[] } : {}) });
      const accept = String(req.headers['accept'] ?? '');
      if (accept.includes(ARROW_STREAM)) {
        reply.header('content-type', ARROW_STREAM);
        if (r.notices.length > 0) reply.header('x-hd-notices', JSON.stringify(r.notices));
        return reply.send(Buffer.from(arrow.tableToIPC(r.table, 'stream')));
      }
      const t = r.table;
      const cols = t.schema.fields.map((_, i) => t.getChildAt(i) as arrow.Vector);
      const rows = Array.from({ length: t.numRows }, (_, ri) => cols.map((c) => jsonOf(c.type, c.get(ri))));
      return reply.send({ columns: t.schema.fields.map((f) => ({ name: f.name, type_oid: oidOf(f.type).oid, arrow_type: String(f.type) })), rows, row_count: t.numRows, notices: r.notices });
    } catch (err) {
      const e = err instanceof SqlError ? err : new SqlError('internal', err instanceof Error ? err.message : String(err));
      return reply.code(e.codes.http).send(errorBody(e));
    }
  };
  app.post('/v1/query', query);
  app.post('/v1/sql', query);
  const dataset = (id: string): unknown => {
    const s = engine.catalog.resolve(id);
    if (!s) return undefined;
    return { id: s.id, name: s.name, time_field: s.timeField, time_index_interval: s.timeIndexInterval, columns: s.fields.map((f) => ({ name: f.name, sql_type: sqlTypeOf(f), hd_type: f.type, ...(f.enum ? { enum: f.enum } : {}) })) };
  };
  app.get('/v1/datasets', async () => ({ datasets: engine.catalog.schemas.map((s) => dataset(s.id)) }));
  app.get('/v1/datasets/:id', async (req, reply) => {
    const id = (req.params as { id: string }).id;
    const d = dataset(id);
    if (!d) return reply.code(404).send(errorBody(new SqlError('unknown_dataset', `unknown dataset ${JSON.stringify(id)}`)));
    return d;
  });
  return app;
}
