/**
 * Cold-boot synchronisation (the reference's "Storage Node: cold-boot synchronisation →
 * synchronisation completes → Ready"; docs/storage-node.md, "Cold-boot synchronisation"): after
 * recovery a node with peer replicas reports `syncing`, lists what each peer holds, copies every
 * batch it lacks (batchCopy.ts: verified by its hash chain before it is indexed) and reports
 * `ready` once a pass over the peers that answered found nothing more to copy. Ingest goes on
 * meanwhile (the SCC sends new batches live); the SCC neither routes queries to a `syncing` node nor
 * counts its acknowledgements (docs/scc.md, "Replica states").
 *
 * Resumable by construction: each batch is installed whole or not at all, and a restart starts
 * from what recovery indexed, so a kill in the middle only repeats the batch being copied.
 */
import { BatchID } from '../../engine-rs/index';
import type { MtlsIdentity } from '../../net/mtls';
import { copyBatch, type ChainSettings, type PeerBatch } from './batchCopy';
import type { LogFn } from '../../lib/logging';
import type { BatchStore } from './batchStore';
import { PeerLink, type SyncPeer } from './peerLink';

/** Where a node's synchronisation stands. */
export type SyncState = 'syncing' | 'ready';

/** Options of {@link ColdBootSync}. */
export interface ColdBootSyncOptions {
  readonly peers: readonly SyncPeer[];
  readonly store: BatchStore;
  readonly chain: ChainSettings;
  /** The node's mTLS identity: peers are then called over mutual TLS. */
  readonly identity?: MtlsIdentity;
  /** Passes over the peers in which none answered before the node gives up waiting and reports `ready` (default 10). */
  readonly maxUnreachablePasses?: number;
  /** Pause between passes that found the peers unreachable (default 1 s). */
  readonly retryMs?: number;
  /** Segment bytes copied per second at most, so a sync leaves the disks and links to live ingest; 0 (default): no cap. */
  readonly maxBytesPerSecond?: number;
  /** Per-call timeout towards a peer (default 30 s). */
  readonly timeoutMs?: number;
  /** State changes (`info`) and problems (`warn`), one line each. */
  readonly log?: LogFn;
}

/** The synchronisation's figures, for /health and `GET /v1/sync-state`. */
export interface SyncReport {
  readonly state: SyncState;
  readonly reason: string;
  readonly since: string;
  readonly peers: readonly string[];
  /** Batches copied and verified so far (this run). */
  readonly copied: number;
  /** Record bytes' segments copied so far. */
  readonly bytes: number;
  /** Batches found missing in the latest pass and not yet copied. */
  readonly remaining: number;
  /** Copies that failed (the batch is tried again, from another peer when there is one). */
  readonly failures: number;
  readonly passes: number;
  readonly last_error?: string;
}

/** One node's cold-boot synchronisation. */
export class ColdBootSync {
  private state: SyncState;
  private reason: string;
  private since = Date.now();
  private copied = 0;
  private bytes = 0;
  private remaining = 0;
  private failures = 0;
  private passes = 0;
  private lastError: string | undefined;
  private stopped = false;
  private readonly links: PeerLink[];
  private running: Promise<void> | undefined;
  private paceStart: number | undefined;

  /** @param opts peers, store, chain settings; the state is `syncing` from construction when there are peers */
  constructor(private readonly opts: ColdBootSyncOptions) {
    this.links = opts.peers.map((p) => new PeerLink(p, opts.identity, opts.timeoutMs));
    this.state = opts.peers.length === 0 ? 'ready' : 'syncing';
    this.reason = opts.peers.length === 0 ? 'no peer replicas configured' : 'starting';
  }

  /** `syncing` or `ready`. */
  get current(): SyncState {
    return this.state;
  }

  /** Starts the synchronisation in the background (once); resolves when it is done or stopped. */
  run(): Promise<void> {
    this.running ??= this.loop();
    return this.running;
  }

  /** Stops after the batch being copied (its copy completes or is removed). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  /** The figures. */
  report(): SyncReport {
    return {
      state: this.state,
      reason: this.reason,
      since: new Date(this.since).toISOString(),
      peers: this.opts.peers.map((p) => p.name),
      copied: this.copied,
      bytes: this.bytes,
      remaining: this.remaining,
      failures: this.failures,
      passes: this.passes,
      ...(this.lastError !== undefined && { last_error: this.lastError }),
    };
  }

  private async loop(): Promise<void> {
    if (this.state === 'ready') return;
    const log: LogFn = this.opts.log ?? (() => undefined);
    const maxUnreachable = this.opts.maxUnreachablePasses ?? 10;
    let unreachable = 0;
    log(`cold-boot sync: comparing with ${this.opts.peers.map((p) => p.name).join(', ')}`, 'info');
    while (!this.stopped) {
      this.passes++;
      const { answered, copied, failed } = await this.pass();
      if (this.stopped) return;
      if (answered > 0 && copied === 0 && failed === 0) {
        this.ready(`in sync with ${answered} peer(s): ${this.copied} batch(es) copied and verified`);
        log(`cold-boot sync: ready — ${this.reason}`, 'info');
        return;
      }
      if (answered === 0) {
        unreachable++;
        if (unreachable >= maxUnreachable) {
          this.ready(`no peer answered in ${unreachable} passes (${this.lastError ?? 'unreachable'}); serving what this node holds`);
          // Serving without having compared with any peer: it may lack batches its peers hold.
          log(`cold-boot sync: ready without a peer — ${this.reason}`, 'warn');
          return;
        }
      }
      if (answered === 0 || failed > 0) await new Promise((r) => setTimeout(r, this.opts.retryMs ?? 1000));
    }
  }

  /** One pass over every peer: copies what this node lacks; counts the peers that answered. */
  private async pass(): Promise<{ answered: number; copied: number; failed: number }> {
    let answered = 0;
    let copied = 0;
    let failed = 0;
    for (const link of this.links) {
      if (this.stopped) break;
      let missing: PeerBatch[];
      try {
        missing = await this.missingFrom(link);
      } catch (err) {
        this.lastError = (err as Error).message;
        continue;
      }
      answered++;
      this.remaining = missing.length;
      this.reason = `copying ${missing.length} batch(es) from ${link.peer.name}`;
      for (const b of missing) {
        if (this.stopped) break;
        try {
          const r = await this.opts.store.installCopy(b.dataset, b.batchId, (device) =>
            copyBatch(link, b, device, this.opts.chain).then((e) => {
              this.bytes += e.bytes;
              return e;
            }),
          );
          if (r === 'installed') {
            this.copied++;
            copied++;
            await this.pace();
          }
        } catch (err) {
          failed++;
          this.failures++;
          this.lastError = (err as Error).message;
          this.opts.log?.(`cold-boot sync: ${this.lastError}`, 'warn');
        }
        this.remaining--;
      }
    }
    return { answered, copied, failed };
  }

  /** The batches `link`'s peer holds durable and this node does not. */
  private async missingFrom(link: PeerLink): Promise<PeerBatch[]> {
    const all = (await link.json('/v1/batches')) as { datasets?: { dataset: string }[] };
    if (!Array.isArray(all.datasets)) throw new Error(`${link.describe('/v1/batches')}: no 'datasets' list in the answer`);
    const out: PeerBatch[] = [];
    for (const { dataset } of all.datasets) {
      const q = new URLSearchParams({ dataset });
      const list = (await link.json(`/v1/batches?${q.toString()}`)) as { batches?: { batch_id: string; records: number; closing_hash: string }[] };
      if (!Array.isArray(list.batches)) throw new Error(`${link.describe('/v1/batches')}: no 'batches' list for '${dataset}'`);
      for (const e of list.batches) {
        const batchId = BatchID.fromHex(e.batch_id);
        if (this.opts.store.index.has(dataset, batchId)) continue;
        out.push({ dataset, batchId, records: e.records, closingHash: Buffer.from(e.closing_hash, 'hex') });
      }
    }
    return out;
  }

  /** Waits while the bytes copied run ahead of `maxBytesPerSecond` (in slices, so `stop` is not held up). */
  private async pace(): Promise<void> {
    const cap = this.opts.maxBytesPerSecond ?? 0;
    if (cap <= 0) return;
    this.paceStart ??= Date.now() - 1;
    for (;;) {
      const ahead = (this.bytes / cap) * 1000 - (Date.now() - this.paceStart);
      if (ahead <= 0 || this.stopped) return;
      await new Promise((r) => setTimeout(r, Math.min(ahead, 100)));
    }
  }

  private ready(reason: string): void {
    this.state = 'ready';
    this.reason = reason;
    this.since = Date.now();
    this.remaining = 0;
  }
}
