/**
 * The SCC's reports of bad batch notices to the DMS (docs/scc.md, "Bad batch notices to the DMS"):
 * every bbn a Storage Node answers a query leg with is noted here with the node's name; the notices
 * are aggregated (the same batch, node and code count up) and sent at most once per interval to
 * `POST /v1/bad-batch-notices` over mutual TLS with the SCC's certificate, so the administrator sees
 * on the WebUX why a node should be quarantined. A failed report keeps its notices for the next one
 * (at most {@link MAX_PENDING}; beyond that they are counted as dropped) and is logged once until one
 * succeeds again.
 */
import { DMS_PEER_ROLES, requestJson } from '../../net/jsonClient';
import type { MtlsIdentity } from '../../net/mtls';
import type { LogFn } from '../../lib/logging';

/** A bbn a Storage Node sent for one batch of a query. */
export interface NodeBadBatch {
  /** The Storage Node that sent it. */
  readonly node: string;
  /** 128 hex digits. */
  readonly batchId: string;
  readonly dataset: string;
  readonly code: number;
  readonly reason: string;
}

/** Notices kept while the DMS is not told; the rest are dropped (and counted). */
export const MAX_PENDING = 1000;
/** Notices per report (the DMS's limit). */
const PER_REPORT = 200;

/** Options of {@link BadBatchReporter}. */
export interface BadBatchReporterOptions {
  readonly dmsUrl: string;
  readonly dmsServerName?: string;
  /** The SCC's certificate, presented on every report. */
  readonly identity: MtlsIdentity;
  /** Least time between two reports; default 1000 ms. */
  readonly intervalMs?: number;
  readonly log: LogFn;
}

interface Pending extends NodeBadBatch {
  count: number;
  at: string;
}

/** Aggregates bbns and reports them to the DMS; {@link stop} sends what is left. */
export class BadBatchReporter {
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private failing = false;
  private stopped = false;
  /** Notices the DMS accepted, and those dropped because too many were waiting. */
  readonly stats = { reported: 0, dropped: 0, reports: 0 };

  /** Nothing is sent until a notice is noted. */
  constructor(private readonly opts: BadBatchReporterOptions) {}

  /** Notices waiting for the next report. */
  get waiting(): number {
    return this.pending.size;
  }

  /** Notes one bbn; a report goes out within the interval. */
  note(n: NodeBadBatch): void {
    if (this.stopped) return;
    const key = `${n.node}\u0000${n.batchId}\u0000${n.code}`;
    const seen = this.pending.get(key);
    if (seen) seen.count++;
    else if (this.pending.size >= MAX_PENDING) this.stats.dropped++;
    else this.pending.set(key, { ...n, reason: n.reason.slice(0, 500), count: 1, at: new Date().toISOString() });
    this.schedule();
  }

  /** Sends what is waiting now (one report at a time). */
  flush(): Promise<void> {
    this.sending ??= this.send().finally(() => {
      this.sending = undefined;
      if (this.pending.size > 0) this.schedule();
    });
    return this.sending;
  }

  /** Stops the timer after one last report of what is waiting. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.sending;
    if (this.pending.size > 0) await this.send().catch(() => undefined);
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.opts.intervalMs ?? 1000);
    this.timer.unref();
  }

  private async send(): Promise<void> {
    const batch = [...this.pending.entries()].slice(0, PER_REPORT);
    if (batch.length === 0) return;
    for (const [key] of batch) this.pending.delete(key);
    const notices = batch.map(([, p]) => ({ node: p.node, batch_id: p.batchId, dataset: p.dataset, code: p.code, reason: p.reason, count: p.count, at: p.at }));
    const m = this.opts.identity.material;
    const url = new URL('/v1/bad-batch-notices', this.opts.dmsUrl).toString();
    try {
      const a = await requestJson('POST', url, { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: this.opts.dmsServerName, roles: DMS_PEER_ROLES }, { notices }, { timeoutMs: 5000 });
      if (a.status !== 200) {
        const b = a.body as { error?: string; message?: string } | undefined;
        // Refused: sending the same notices again would be refused again.
        this.warn(`the DMS refused ${notices.length} bad batch notice(s): HTTP ${a.status} ${b?.error ?? ''}: ${b?.message ?? ''}`);
        return;
      }
      this.stats.reported += notices.length;
      this.stats.reports++;
      if (this.failing) this.opts.log('bad batch notices reach the DMS again', 'info');
      this.failing = false;
    } catch (err) {
      // Unreachable: keep them (merged with any noted since) for the next report.
      for (const [key, p] of batch) {
        const now = this.pending.get(key);
        if (now) now.count += p.count;
        else if (this.pending.size < MAX_PENDING) this.pending.set(key, p);
        else this.stats.dropped++;
      }
      this.warn(`bad batch notices could not reach the DMS (kept for the next report): ${(err as Error).message}`);
    }
  }

  private warn(line: string): void {
    if (!this.failing) this.opts.log(line, 'warn');
    this.failing = true;
  }
}
