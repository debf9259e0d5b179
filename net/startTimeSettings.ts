/**
 * Settings a registered node takes from the DMS once, at start, and must not change while it runs
 * (the hash election, a Storage Node's devices; docs/scc.md and docs/storage-node.md, "Configuration
 * from the DMS"). When the DMS's value changes later, the node keeps the one in force and says so:
 * one log line per new value and a `pending` entry in /health (status `degraded`: the node does not
 * run as a restart would have it), until a restart takes it. Where the operator pinned the value (an
 * explicit setting, which a restart keeps too) the DMS's differing value is only noted
 * (`overridden`), without degrading.
 */
import type { DmsConfigFeed, DmsNodeConfig } from './dmsConfigFeed';
import type { LogFn } from '../lib/logging';

/** One start-time setting. */
export interface StartTimeSetting {
  /** Its name in /health and the log (`hash_election`, `devices`). */
  readonly name: string;
  /** The value in force (compared as JSON). */
  readonly inForce: unknown;
  /** The value a restart would take given the DMS's configuration `cfg` (the node's precedence applied). */
  readonly atRestart: (cfg: DmsNodeConfig) => unknown;
  /** The DMS's own value in `cfg`; undefined when the DMS gives none. */
  readonly fromDms: (cfg: DmsNodeConfig) => unknown;
  /** Why a change waits for a restart, for the log line. */
  readonly why: string;
}

/** The part of /health these settings add (`pending`: the values a restart would take, from the DMS's configuration now). */
export interface StartTimeHealth {
  readonly status: 'ok' | 'degraded';
  readonly pending: Record<string, { readonly in_force: unknown; readonly at_restart: unknown }>;
  readonly overridden: Record<string, { readonly in_force: unknown; readonly dms: unknown }>;
}

/** Watches the DMS's values of start-time settings; {@link stop} ends it. */
export class StartTimeSettings {
  /** The value a restart would take, by setting, where it differs from the one in force. */
  private readonly pending = new Map<string, unknown>();
  /** The DMS's value, by setting, where an explicit setting overrides it. */
  private readonly overridden = new Map<string, unknown>();
  /** The last line logged about each setting. */
  private readonly said = new Map<string, string>();
  private readonly onUpdate = (cfg: DmsNodeConfig): void => this.compare(cfg);

  /** Compares with the feed's configuration now and on every update. */
  constructor(
    private readonly feed: DmsConfigFeed,
    private readonly settings: readonly StartTimeSetting[],
    private readonly log: LogFn,
  ) {
    if (feed.config) this.compare(feed.config);
    feed.on('update', this.onUpdate);
  }

  /** The values a restart would change (`pending`), and the DMS's values an explicit setting overrides. */
  health(): StartTimeHealth {
    const pending: Record<string, { in_force: unknown; at_restart: unknown }> = {};
    const overridden: Record<string, { in_force: unknown; dms: unknown }> = {};
    for (const s of this.settings) {
      const p = this.pending.get(s.name);
      if (p !== undefined) pending[s.name] = { in_force: s.inForce, at_restart: p };
      const o = this.overridden.get(s.name);
      if (o !== undefined) overridden[s.name] = { in_force: s.inForce, dms: o };
    }
    return { status: Object.keys(pending).length > 0 ? 'degraded' : 'ok', pending, overridden };
  }

  /** Stops following the feed. */
  stop(): void {
    this.feed.off('update', this.onUpdate);
  }

  private compare(cfg: DmsNodeConfig): void {
    for (const s of this.settings) {
      const now = JSON.stringify(s.inForce);
      const next = s.atRestart(cfg);
      const dms = s.fromDms(cfg);
      const wasPending = this.pending.delete(s.name);
      this.overridden.delete(s.name);
      let line: [string, 'info' | 'warn'] | undefined;
      if (JSON.stringify(next) !== now) {
        this.pending.set(s.name, next);
        line = [`the DMS now gives ${s.name} ${JSON.stringify(next)}; this node keeps ${now} until it restarts: ${s.why}`, 'warn'];
      } else if (dms !== undefined && JSON.stringify(dms) !== now) {
        this.overridden.set(s.name, dms);
        line = [`the DMS gives ${s.name} ${JSON.stringify(dms)}; it is set explicitly here, so this node keeps ${now}`, 'info'];
      } else if (wasPending) line = [`the DMS's ${s.name} is again the one in force (${now})`, 'info'];
      // One line per new state of each setting, not one per poll.
      const key = line?.[0];
      if (line && this.said.get(s.name) !== key) this.log(line[0], line[1]);
      if (key === undefined) this.said.delete(s.name);
      else this.said.set(s.name, key);
    }
  }
}
