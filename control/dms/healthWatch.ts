/**
 * Marks nodes `down` when their health reports stop (docs/control-plane.md, "Node health"). Every
 * registered node is told the report period at registration (DMS_HEALTH_INTERVAL_MS); a node that
 * has reported once and then misses DMS_HEALTH_MISSED_REPORTS periods in a row is set `down` with
 * the reason in its health, which takes it out of the targets handed out. Its next report (or a
 * new registration) brings it back. Quarantine is left alone: it is an administrator's state.
 */
import type { DmsContext } from './context';
import type { NodeRole } from './state';

/** Roles that report health (clients and ingesters are not watched). */
export const REPORTING_ROLES: ReadonlySet<NodeRole> = new Set<NodeRole>(['scc', 'storageNode', 'proxy', 'sqlServer']);
/** States a silent node is moved out of. */
const WATCHED = new Set(['registered', 'ready', 'degraded']);

/** Checks the nodes' last reports every health interval. */
export class HealthWatch {
  private timer: NodeJS.Timeout | undefined;
  /** No node is marked down before every node had the time to report to this process (a restarted DMS). */
  private readonly since = Date.now();

  /** @param ctx the DMS; @param observe told of each node marked down */
  constructor(
    private readonly ctx: DmsContext,
    private readonly observe: (name: string) => void = () => undefined,
  ) {}

  /** Starts the periodic check. */
  start(): void {
    this.timer = setInterval(() => void this.sweep().catch((err: unknown) => this.ctx.log(`health check failed: ${(err as Error).message}`, 'error')), this.ctx.settings.healthIntervalMs);
    this.timer.unref();
  }

  /** Stops it. */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Marks silent nodes down now; resolves with their names. */
  async sweep(now = Date.now()): Promise<string[]> {
    const { healthIntervalMs, healthMissedReports } = this.ctx.settings;
    const limit = healthIntervalMs * healthMissedReports;
    if (now - this.since < limit) return [];
    const silent = (n: { role: NodeRole; state: string; health?: unknown; last_seen?: string }): boolean =>
      REPORTING_ROLES.has(n.role) && WATCHED.has(n.state) && n.health !== undefined && n.last_seen !== undefined && now - Date.parse(n.last_seen) > limit;
    if (!Object.values(this.ctx.store.get().nodes).some(silent)) return [];
    const marked = await this.ctx.store.update((s) => {
      const out: string[] = [];
      for (const n of Object.values(s.nodes)) {
        if (!silent(n)) continue;
        n.state = 'down';
        n.health = { status: 'down', detail: { reason: `no health report since ${n.last_seen ?? '?'} (${healthMissedReports} reports of every ${healthIntervalMs} ms missed)` }, at: new Date(now).toISOString() };
        out.push(n.name);
      }
      return out;
    });
    for (const name of marked) {
      this.ctx.log(`node '${name}' marked down: its health reports stopped`, 'warn');
      this.observe(name);
    }
    return marked;
  }
}
