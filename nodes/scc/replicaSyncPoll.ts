/**
 * Probing the replicas for cold-boot synchronisation (docs/scc.md, "Replica states"): every poll,
 * the replicas the SCC counts as healthy, or knows as syncing, are asked (syncProbe.ts) whether
 * their node is copying missed batches from a peer. A healthy one that is becomes `syncing` (no
 * queries, its acknowledgements do not count; batches still go to it live); a syncing one that is
 * ready is caught up from the log (what it missed while it was not live) and then healthy. A
 * replica that does not answer keeps its state.
 */
import { catchUpReplica } from './catchUp';
import type { Replica } from './replica';
import type { ReplicaLinks } from './replicaLinks';
import type { SyncProbe } from './syncProbe';

/** Polls `probe` every `pollMs` over the replicas `replicas()` gives; {@link stop} ends it. */
export class ReplicaSyncPoll {
  private readonly timer: NodeJS.Timeout;
  private polling = false;

  /** Starts polling (the timer does not keep the process alive). */
  constructor(
    private readonly probe: SyncProbe,
    pollMs: number,
    private readonly replicas: () => readonly Replica[],
    private readonly links: ReplicaLinks,
  ) {
    this.timer = setInterval(() => void this.poll(), pollMs);
    this.timer.unref?.();
  }

  /** Stops polling. */
  stop(): void {
    clearInterval(this.timer);
  }

  private async poll(): Promise<void> {
    if (this.polling || this.links.closed()) return;
    this.polling = true;
    try {
      await Promise.all(
        this.replicas()
          .filter((r) => r.state === 'healthy' || r.state === 'syncing')
          .map(async (r) => {
            const epoch = r.epoch;
            const was = r.state;
            const s = await this.probe(r.target);
            if (this.links.closed() || r.epoch !== epoch || r.state !== was) return;
            if (was === 'healthy' && s === 'syncing') this.setSyncing(r);
            else if (was === 'syncing' && s === 'ready') {
              // What it missed before it was live again comes from the log, as for any returning replica.
              r.state = 'down';
              void catchUpReplica(this.links, r);
            }
          }),
      );
    } finally {
      this.polling = false;
    }
  }

  private setSyncing(r: Replica): void {
    r.state = 'syncing';
    r.reason = 'the node reports cold-boot synchronisation: no queries, its acknowledgements do not count until it is ready';
    r.since = Date.now();
    this.links.event(`replica ${r.target.name} is syncing (cold-boot synchronisation)`, 'info');
  }
}
