/**
 * The DMS reads its nodes' metrics for the WebUX's graphs (docs/webux.md, "Metrics"): every
 * `intervalMs` it GETs `/metrics` (Prometheus text) and `/health` (JSON) from the observability
 * address each node registered or was declared with, and adds what it read to a bounded in-memory
 * history (metricsHistory.ts) that `GET /v1/metrics/history` serves. Plain HTTP, as every node serves
 * those two routes; one connection per request (no pool left open), a timeout, and a cap on the
 * bytes read, since the addresses come from the nodes themselves.
 */
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ADMIN_ROLE, requireRole, type DmsContext } from '../context';
import { MetricsHistory, SERIES } from './metricsHistory';

/** Default scrape interval (DMS_METRICS_INTERVAL_MS). */
export const DEFAULT_METRICS_INTERVAL_MS = 5000;
/** Default points kept per node (DMS_METRICS_HISTORY): 30 minutes at the default interval. */
export const DEFAULT_METRICS_HISTORY = 360;
/** Most bytes read of one answer (a node's /metrics is a few kB). */
export const MAX_SCRAPE_BYTES = 4 * 1024 * 1024;

/** How the scraper runs. */
export interface ScrapeSettings {
  /** Milliseconds between scrapes; 0 or less: no scraping (the route answers an empty history). */
  readonly intervalMs: number;
  /** Points kept per node. */
  readonly history: number;
}

/** A wildcard bind address names no host to call: the node is called on loopback instead. */
function callable(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host.replace(/^\[(.*)\]$/, '$1');
}

/** GETs `path` of host:port; resolves with the status and the body (at most MAX_SCRAPE_BYTES). */
function get(host: string, port: number, path: string, timeoutMs: number, live: Set<http.ClientRequest>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: callable(host), port, path, agent: false, timeout: timeoutMs, headers: { accept: path === '/metrics' ? 'text/plain' : 'application/json' } }, (res) => {
      const parts: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        size += d.length;
        if (size > MAX_SCRAPE_BYTES) req.destroy(new Error(`${path} answered more than ${MAX_SCRAPE_BYTES} bytes`));
        else parts.push(d);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    live.add(req);
    req.on('close', () => live.delete(req));
    req.on('timeout', () => req.destroy(new Error(`${path} did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** Scrapes every node with an observability address, on a timer. */
export class MetricsScraper {
  /** What was read so far. */
  readonly history: MetricsHistory;
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = false;
  private readonly live = new Set<http.ClientRequest>();

  constructor(
    private readonly ctx: DmsContext,
    /** The settings it runs with. */
    readonly settings: ScrapeSettings,
  ) {
    this.history = new MetricsHistory(Math.max(1, settings.history));
  }

  /** Starts scraping (nothing when the interval is 0 or less). */
  start(): void {
    if (this.settings.intervalMs <= 0 || this.stopped) return;
    const tick = (): void => {
      this.round = this.scrapeOnce().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.settings.intervalMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  /** Reads every node once. */
  async scrapeOnce(): Promise<void> {
    const nodes = Object.values(this.ctx.store.get().nodes);
    this.history.keepOnly(new Set(nodes.map((n) => n.name)));
    const timeout = Math.max(500, Math.min(this.settings.intervalMs, 3000));
    await Promise.all(
      nodes.map(async (n) => {
        const at = n.addresses.observability;
        if (!at) return;
        const now = Date.now();
        try {
          const [metrics, health] = await Promise.all([get(at.host, at.port, '/metrics', timeout, this.live), get(at.host, at.port, '/health', timeout, this.live).catch(() => undefined)]);
          if (metrics.status !== 200) throw new Error(`/metrics answered HTTP ${metrics.status}`);
          let h: unknown;
          try {
            h = health ? JSON.parse(health.body) : undefined;
          } catch {
            h = undefined;
          }
          if (!this.stopped) this.history.record(n.name, n.role, { at: now, metrics: metrics.body, health: h });
        } catch (err) {
          if (!this.stopped) this.history.record(n.name, n.role, { at: now, error: `${at.host}:${at.port}: ${(err as Error).message}` });
        }
      }),
    );
  }

  /** Stops the timer and the requests in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const r of this.live) r.destroy();
    await this.round?.catch(() => undefined);
  }
}

/** `GET /v1/metrics/history` (admin): every scraped node's points, with the series they may carry. */
export function registerMetricsRoutes(app: FastifyInstance, ctx: DmsContext, scraper: MetricsScraper): void {
  app.get('/v1/metrics/history', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE]);
    return { interval_ms: Math.max(0, scraper.settings.intervalMs), capacity: scraper.history.capacity, series: SERIES, nodes: scraper.history.view() };
  });
}
