/**
 * The observability HTTP server every HD node runs on its observability port (8080 by default):
 * `GET /health` (JSON) and `GET /metrics` (Prometheus text from prom-client), plus the JSON routes
 * a role adds (the Storage Node's `/v1/batches`). Generic: each role registers its own health parts
 * and metrics; {@link ingestMetrics} holds the ingest metrics the SCC and the Storage Node share.
 */
import { open } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { TLSSocket, type TlsOptions } from 'node:tls';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { routeConnection } from './tlsSniff';

/** The registries of the Observability servers open in this process (read by lib/otlpMetrics.ts). */
const LIVE_REGISTRIES = new Set<Registry>();

/** Every metrics registry an open {@link Observability} of this process serves, in creation order. */
export function liveRegistries(): readonly Registry[] {
  return [...LIVE_REGISTRIES];
}

/** A node's health: `ok`; `degraded` (serving, with a problem such as a replica down); `initializing` (not serving yet). */
export type HealthStatus = 'ok' | 'degraded' | 'initializing';

const RANK: Record<HealthStatus, number> = { ok: 0, degraded: 1, initializing: 2 };

/** One named part of the /health body; a `status` in it can lower the node's status. */
export interface HealthPart {
  readonly status?: HealthStatus;
  readonly [key: string]: unknown;
}

/** A JSON answer of a route. */
export interface JsonResponse {
  readonly status: number;
  readonly body: unknown;
}

/** A route's answer that is a whole file, streamed as `application/octet-stream` (a Storage Node's segment copy). */
export interface FileResponse {
  readonly status: 200;
  /** Absolute path of the file sent. */
  readonly file: string;
}

/** The connection a request came on: plain, or TLS (see {@link Observability.acceptTls}). */
export type RouteCaller = { readonly tls: false; readonly socket: net.Socket } | { readonly tls: true; readonly socket: TLSSocket };

/** Handles `GET <path>`; `query` holds the URL's search parameters, `caller` the connection. */
export type JsonRoute = (query: URLSearchParams, caller: RouteCaller) => JsonResponse | FileResponse | Promise<JsonResponse | FileResponse>;

/** Options of {@link Observability}. */
export interface ObservabilityOptions {
  /** The node's role, e.g. `storageNode` or `scc`. */
  readonly role: string;
  readonly nodeName: string;
  /** Bind address (default 0.0.0.0). */
  readonly host?: string;
  /** Port (default 8080; 0 picks a free one, see `listen`'s result). */
  readonly port?: number;
  /** Metrics registry (default a fresh one). */
  readonly registry?: Registry;
  /** Also collect Node.js process metrics (CPU, memory, event loop lag); default false. */
  readonly processMetrics?: boolean;
}

/**
 * The /health, /metrics and JSON-route HTTP server of one node.
 *
 * @example
 * const obs = new Observability({ role: 'storageNode', nodeName: 'sn1', port: 8080 });
 * obs.addHealthPart('devices', () => ({ count: 2 }));
 * const m = ingestMetrics(obs.registry);
 * await obs.listen();
 */
export class Observability {
  /** Where the node's metrics live; roles register theirs here. */
  readonly registry: Registry;
  private status: HealthStatus = 'initializing';
  private reason: string | undefined;
  private readonly parts = new Map<string, () => HealthPart | Promise<HealthPart>>();
  private readonly routes = new Map<string, JsonRoute>();
  /** The listener: each connection goes to `http`, or to `https` when it starts a TLS handshake. */
  private server: net.Server | undefined;
  private readonly http: Server = createServer((req, res) => void this.handle(req, res));
  private https: HttpsServer | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly started = Date.now();

  /** @param opts role, node name, address */
  constructor(private readonly opts: ObservabilityOptions) {
    this.registry = opts.registry ?? new Registry();
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
    LIVE_REGISTRIES.add(this.registry);
  }

  /** Sets the node's own status (parts may still lower it); `reason` is shown in /health. */
  setStatus(status: HealthStatus, reason?: string): void {
    this.status = status;
    this.reason = reason;
  }

  /** Adds a part to the /health body under `name`, computed on every request. */
  addHealthPart(name: string, part: () => HealthPart | Promise<HealthPart>): void {
    if (name === 'status' || name === 'node' || name === 'role') throw new Error(`'${name}' is a reserved /health key`);
    this.parts.set(name, part);
  }

  /** Serves `GET path` with a JSON route. */
  addRoute(path: string, route: JsonRoute): void {
    if (path === '/health' || path === '/metrics') throw new Error(`${path} is served by Observability itself`);
    this.routes.set(path, route);
  }

  /** The /health body; also what the HTTP route answers. */
  async health(): Promise<{ status: HealthStatus } & Record<string, unknown>> {
    let status = this.status;
    const body: Record<string, unknown> = {};
    for (const [name, part] of this.parts) {
      try {
        const p = await part();
        if (p.status && RANK[p.status] > RANK[status]) status = p.status;
        body[name] = p;
      } catch (err) {
        // A failing part is itself a problem worth surfacing, not a reason to fail the endpoint.
        if (RANK.degraded > RANK[status]) status = 'degraded';
        body[name] = { status: 'degraded', error: (err as Error).message };
      }
    }
    return {
      status,
      ...(this.reason ? { reason: this.reason } : {}),
      node: this.opts.nodeName,
      role: this.opts.role,
      uptime_s: Math.round((Date.now() - this.started) / 1000),
      ...body,
    };
  }

  /**
   * Also serves TLS on the same port (before or after `listen`): a connection whose first byte
   * opens a TLS handshake is answered by an HTTPS server with `options` (e.g. a node's mutual-TLS
   * server options); routes see such callers as `{ tls: true, socket }`. Until this is called a
   * TLS connection is closed.
   */
  acceptTls(options: TlsOptions): void {
    this.https?.close();
    this.https = createHttpsServer(options, (req, res) => void this.handle(req, res));
  }

  /** Starts serving; resolves with the bound address. */
  listen(): Promise<{ host: string; port: number }> {
    if (this.server) return Promise.reject(new Error('Observability.listen called twice'));
    const server = net.createServer((sock) => {
      this.sockets.add(sock);
      sock.once('close', () => this.sockets.delete(sock));
      sock.on('error', () => undefined);
      routeConnection(sock, this.http, () => this.https);
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port ?? 8080, this.opts.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        const a = server.address() as AddressInfo;
        resolve({ host: a.address, port: a.port });
      });
    });
  }

  /** Stops serving and closes open connections. */
  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    LIVE_REGISTRIES.delete(this.registry);
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      for (const sock of this.sockets) sock.destroy();
    });
    this.http.closeAllConnections();
    this.https?.closeAllConnections();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'application/json', JSON.stringify({ error: 'only GET is served' }), { allow: 'GET, HEAD' });
      if (url.pathname === '/metrics') return send(res, 200, this.registry.contentType, await this.registry.metrics());
      if (url.pathname === '/health') {
        const h = await this.health();
        // Load balancers and probes read the code: 503 until the node serves.
        return send(res, h.status === 'initializing' ? 503 : 200, 'application/json', JSON.stringify(h));
      }
      const route = this.routes.get(url.pathname);
      if (!route) return send(res, 404, 'application/json', JSON.stringify({ error: `no route ${url.pathname}` }));
      const sock = req.socket;
      const r = await route(url.searchParams, sock instanceof TLSSocket ? { tls: true, socket: sock } : { tls: false, socket: sock });
      if ('file' in r) return await sendFile(res, r.file);
      send(res, r.status, 'application/json', JSON.stringify(r.body));
    } catch (err) {
      // A file cut mid-stream: the client sees a short body (content-length), nothing else to send.
      if (res.headersSent) return void res.destroy();
      send(res, 500, 'application/json', JSON.stringify({ error: (err as Error).message }));
    }
  }
}

/** Streams a whole file (its size in content-length, so a cut transfer shows as short). */
async function sendFile(res: ServerResponse, file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    const rs = fh.createReadStream({ autoClose: false });
    await new Promise<void>((resolve, reject) => {
      rs.once('error', reject);
      res.once('error', reject);
      res.once('close', () => (res.writableFinished ? resolve() : reject(new Error('the client went away'))));
      rs.pipe(res);
    });
  } finally {
    await fh.close();
  }
}

function send(res: ServerResponse, code: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** The ingest metrics shared by the SCC and the Storage Node (names in docs/storage-node.md). */
export interface IngestMetrics {
  /** `hd_records_ingested_total`: records accepted (SN: made durable). */
  readonly recordsIngested: Counter;
  /** `hd_bytes_ingested_total`: record bytes accepted (SN: made durable). */
  readonly bytesIngested: Counter;
  /** `hd_batches_open`: batches open now. */
  readonly batchesOpen: Gauge;
  /** `hd_batches_closed_total`: batches closed by an end-of-batch and made durable. */
  readonly batchesClosed: Counter;
  /** `hd_batches_discarded_total{reason}`: batches discarded (`bbn`, `refused`, `failed`, `shutdown`, `timeout`). */
  readonly batchesDiscarded: Counter<'reason'>;
  /** `hd_fsync_duration_seconds`: durable commit time (footer write, fsync, rename, directory fsync). */
  readonly fsyncSeconds: Histogram;
  /** `hd_replica_lag_batches{replica}`: batches a replica has not yet made durable (SCC). */
  readonly replicaLag: Gauge<'replica'>;
}

/** Registers (once per registry) and returns the shared ingest metrics. */
export function ingestMetrics(registry: Registry): IngestMetrics {
  const get = <T>(name: string, make: () => T): T => (registry.getSingleMetric(name) as T | undefined) ?? make();
  return {
    recordsIngested: get('hd_records_ingested_total', () => new Counter({ name: 'hd_records_ingested_total', help: 'Records ingested (made durable on a Storage Node)', registers: [registry] })),
    bytesIngested: get('hd_bytes_ingested_total', () => new Counter({ name: 'hd_bytes_ingested_total', help: 'Record bytes ingested (made durable on a Storage Node)', registers: [registry] })),
    batchesOpen: get('hd_batches_open', () => new Gauge({ name: 'hd_batches_open', help: 'Batches open now', registers: [registry] })),
    batchesClosed: get('hd_batches_closed_total', () => new Counter({ name: 'hd_batches_closed_total', help: 'Batches closed by an end-of-batch and made durable', registers: [registry] })),
    batchesDiscarded: get(
      'hd_batches_discarded_total',
      () => new Counter({ name: 'hd_batches_discarded_total', help: 'Batches discarded, by reason', labelNames: ['reason'] as const, registers: [registry] }),
    ),
    fsyncSeconds: get(
      'hd_fsync_duration_seconds',
      () =>
        new Histogram({
          name: 'hd_fsync_duration_seconds',
          help: 'Durable commit of a segment: footer write, fsync(file), rename, fsync(directory)',
          buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
          registers: [registry],
        }),
    ),
    replicaLag: get(
      'hd_replica_lag_batches',
      () => new Gauge({ name: 'hd_replica_lag_batches', help: 'Batches a replica has not yet made durable', labelNames: ['replica'] as const, registers: [registry] }),
    ),
  };
}
