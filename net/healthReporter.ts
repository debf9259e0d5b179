/**
 * A registered node's health reports to the DMS (docs/control-plane.md, "Node health"): every
 * health interval (the DMS hands it out at registration, DMS_HEALTH_INTERVAL_MS) the node posts
 * `POST /v1/nodes/{name}/health` with its status and a detail, over mutual TLS with its own
 * certificate. The DMS moves the node to `ready` / `degraded` from it, and to `down` when reports
 * stop. A failed report is logged once until one succeeds again; the next period tries again.
 */
import { DMS_PEER_ROLES, requestJson } from './jsonClient';
import type { MtlsIdentity } from './mtls';
import type { LogFn } from '../lib/logging';

/** A health report. */
export interface HealthReport {
  readonly status: 'ok' | 'degraded' | 'initializing' | 'down';
  readonly detail?: unknown;
}

/** Options of {@link HealthReporter}. */
export interface HealthReporterOptions {
  readonly nodeName: string;
  readonly identity: MtlsIdentity;
  readonly dmsUrl: string;
  readonly dmsServerName?: string;
  /** Report period in ms. */
  readonly intervalMs: number;
  /** What to report now. */
  readonly source: () => Promise<HealthReport>;
  /** A failing DMS (`warn`, once until it answers again) and its return (`info`). */
  readonly log: LogFn;
}

/** Default period when the DMS named none (an older DMS, or unreachable at start). */
export const DEFAULT_HEALTH_REPORT_MS = 10_000;

/** Reports on a period until {@link stop}. */
export class HealthReporter {
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private failing = false;
  private sent = 0;

  /** Nothing is sent until {@link start}. */
  constructor(private readonly opts: HealthReporterOptions) {}

  /** Reports now, then every interval. */
  start(): void {
    this.stopped = false;
    this.tick();
  }

  /** Stops reporting. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Reports accepted by the DMS so far. */
  get reports(): number {
    return this.sent;
  }

  private tick(): void {
    void this.reportNow()
      .catch(() => undefined)
      .then(() => {
        if (this.stopped) return;
        this.timer = setTimeout(() => this.tick(), this.opts.intervalMs);
        this.timer.unref();
      });
  }

  /** Sends one report; resolves with the DMS's state for the node. */
  async reportNow(): Promise<string> {
    try {
      const report = await this.opts.source().catch((err: unknown): HealthReport => ({ status: 'degraded', detail: { error: `cannot read the node's health: ${(err as Error).message}` } }));
      const m = this.opts.identity.material;
      const url = new URL(`/v1/nodes/${encodeURIComponent(this.opts.nodeName)}/health`, this.opts.dmsUrl).toString();
      const a = await requestJson('POST', url, { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: this.opts.dmsServerName, roles: DMS_PEER_ROLES }, { status: report.status, ...(report.detail !== undefined && { detail: report.detail }) });
      const b = a.body as { state?: string; error?: string; message?: string };
      if (a.status !== 200) throw new Error(`HTTP ${a.status} ${b.error ?? ''}: ${b.message ?? ''}`);
      if (this.failing) this.opts.log('health reports reach the DMS again', 'info');
      this.failing = false;
      this.sent++;
      return b.state ?? '';
    } catch (err) {
      if (!this.failing) this.opts.log(`health report to the DMS failed (retrying every ${this.opts.intervalMs} ms): ${(err as Error).message}`, 'warn');
      this.failing = true;
      throw err;
    }
  }
}

/**
 * A report from a node's own /health document (lib/observability.ts): its status (`initializing`
 * maps to itself, anything unknown to degraded) and, as detail, the document when it is small,
 * else the status of each part. Unreachable: `unreachable` (degraded; initializing while the node is
 * still starting), with the reason.
 */
export async function reportFromHealthUrl(url: string, timeoutMs = 2000, unreachable: 'degraded' | 'initializing' = 'degraded'): Promise<HealthReport> {
  let parsed: unknown;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    parsed = await res.json();
  } catch (err) {
    return { status: unreachable, detail: { error: `${url}: ${(err as Error).message}` } };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { status: 'degraded', detail: { error: `${url}: not a JSON object (${JSON.stringify(parsed)?.slice(0, 100) ?? 'nothing'})` } };
  const body = parsed as Record<string, unknown>;
  const s = body.status;
  const status: HealthReport['status'] = s === 'ok' || s === 'degraded' || s === 'initializing' ? s : 'degraded';
  const text = JSON.stringify(body);
  if (text.length <= 16_384) return { status, detail: body };
  const parts = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, typeof v === 'object' && v !== null && 'status' in v ? (v as { status: unknown }).status : typeof v === 'object' ? 'ok' : v]));
  return { status, detail: parts };
}
