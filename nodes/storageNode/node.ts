/**
 * One Storage Node: its devices, recovery on start, the batch index and store, and its
 * observability server (docs/storage-node.md). The `segmentStore` pipeline stage starts one when
 * the pipeline runs; tests start one directly.
 */
import type { BatchID } from '../../engine-rs/batchId';
import type { HashAlgorithmName, ZoneField } from '../../engine-rs/index';
import { serverTlsOptions } from '../../net/mtls';
import type { NodeIdentity } from '../../net/nodeIdentity';
import { ingestMetrics, Observability, type IngestMetrics } from '../../lib/observability';
import { BatchFilterCache, batchFilterRefusal, batchFiltersRoute } from './batchFilters';
import { batchRangesRoute } from './batchRanges';
import { BatchIndex } from './batchIndex';
import { BatchStore } from './batchStore';
import { ColdBootSync, type SyncReport } from './coldBootSync';
import type { SyncPeer } from './peerLink';
import { segmentRefusal, segmentRoute } from './segmentRoute';
import type { StorageNodeConfig } from './config';
import { DevicePool, ioRefusedLine, StorageDevice, type FreeSpace } from './devices';
import { OcfReadCache, type ReadLocation } from './ocf';
import { formatRecovery, recoverDevices, type RecoverySummary } from './recovery';
import { logLine, type LogFn } from '../../lib/logging';

/** Options of {@link StorageNode}. */
export interface StorageNodeOptions {
  readonly config: StorageNodeConfig;
  /** HASH_ALGORITHM (must be the SCC's). */
  readonly algorithm: HashAlgorithmName;
  /** HASH_CHAIN_BLOCK_SIZE (must be the SCC's). */
  readonly blockSize: number;
  /** Recompute every segment's chain at start (default true); false checks layout only, for a fast start. */
  readonly verifyOnStart?: boolean;
  /** Free-space probe (default statfs). */
  readonly freeSpace?: FreeSpace;
  /** Where start-up and recovery lines go (default the process logger). */
  readonly log?: LogFn;
  /** Fields new segments keep zone maps for, per dataset (see BatchStoreOptions). */
  readonly zoneFields?: (dataset: string, recordSize: number) => readonly ZoneField[];
}

/** A Storage Node's state while it runs. */
export class StorageNode {
  readonly config: StorageNodeConfig;
  readonly index = new BatchIndex();
  readonly observability: Observability;
  readonly metrics: IngestMetrics;
  /** Devices new batches go to (the core devices with OCF). */
  readonly pool: DevicePool;
  /** The OCF read tier, when `use_ocf`. */
  readonly cache: OcfReadCache | undefined;
  readonly store: BatchStore;
  private recovery: RecoverySummary | undefined;
  /** The node's DMS identity once registered: batch filters are served over mutual TLS with it. */
  private identity: NodeIdentity | undefined;
  private observabilityAt: { host: string; port: number } | undefined;
  private readonly log: LogFn;
  private markStarted!: () => void;
  /** The cold-boot synchronisation, once `startSync` ran. */
  private sync: ColdBootSync | undefined;
  /** Resolves once `start` has recovered the devices and built the index (queries wait for it). */
  readonly started: Promise<void> = new Promise((resolve) => (this.markStarted = resolve));

  /** Builds the node; nothing touches the disk or the network before `start`. */
  constructor(private readonly opts: StorageNodeOptions) {
    const c = opts.config;
    this.config = c;
    this.log = opts.log ?? logLine();
    // A config.json without storage_devices gets its devices from the DMS or the default (deviceSource.ts) first.
    if (c.storageDevices.length === 0) throw new Error(`storage node '${c.nodeName}': no storage devices (config.json has no storage_devices; resolveDevices gives the DMS's or the default ones)`);
    const byName = new Map(c.storageDevices.map((d) => [d.name, StorageDevice.fromConfig(d, opts.freeSpace)]));
    const pick = (names: readonly string[]): StorageDevice[] => names.map((n) => byName.get(n) as StorageDevice);
    const writeDevices = c.useOcf ? pick(c.ocfCoreDevices) : [...byName.values()];
    this.pool = new DevicePool(writeDevices, c.driveStrategy, c.reserveBytes);
    this.cache = c.useOcf ? new OcfReadCache(pick(c.ocfCacheDevices), c.reserveBytes) : undefined;
    this.observability = new Observability({ role: 'storageNode', nodeName: c.nodeName, host: c.observabilityIp, port: c.observabilityPort, processMetrics: true });
    this.metrics = ingestMetrics(this.observability.registry);
    this.store = new BatchStore({
      pool: this.pool,
      index: this.index,
      algorithm: opts.algorithm,
      blockSize: opts.blockSize,
      metrics: this.metrics,
      zoneFields: opts.zoneFields,
      onDirectIoRefused: (d) => this.log(ioRefusedLine(c.nodeName, d), 'warn'),
    });
    this.registerHealth();
  }

  /** Where /health and /metrics are served, once started. */
  get observabilityAddress(): { host: string; port: number } | undefined {
    return this.observabilityAt;
  }

  /** What recovery found, once it ran. */
  get recoverySummary(): RecoverySummary | undefined {
    return this.recovery;
  }

  /**
   * Starts the observability server (status `initializing`), creates missing device directories,
   * recovers every device and builds the index; then the node is `ok` and its store takes batches.
   */
  async start(): Promise<BatchStore> {
    this.observabilityAt = await this.observability.listen();
    try {
      this.recovery = await recoverDevices(this.pool.devices, this.index, { verifyChains: this.opts.verifyOnStart ?? true, cacheDevices: this.cache?.devices });
    } catch (err) {
      await this.observability.close();
      throw err;
    }
    // Quarantined segments are a problem an operator must look at; a clean recovery is news only.
    this.log(`storage node '${this.config.nodeName}': ${formatRecovery(this.recovery, this.index.size)}`, this.recovery.quarantined.length > 0 ? 'warn' : 'info');
    for (const d of this.pool.devices) if (d.ioRefused) this.log(ioRefusedLine(this.config.nodeName, d), 'warn');
    this.observability.setStatus(this.recovery.quarantined.length > 0 ? 'degraded' : 'ok', this.recovery.quarantined.length > 0 ? 'quarantined segments at start-up' : undefined);
    this.log(this.startupLine(), 'info');
    this.markStarted();
    return this.store;
  }

  /**
   * The node is registered: its observability port also speaks TLS with the node's certificate
   * (following renewals), and batch filters are served there to the Proxy's certificate only.
   */
  useIdentity(id: NodeIdentity): void {
    this.identity = id;
    this.observability.acceptTls(serverTlsOptions(id.identity, { requireClientCert: false }));
  }

  /**
   * Starts cold-boot synchronisation with `peers` (docs/storage-node.md, "Cold-boot
   * synchronisation"): the node reports `syncing` at once and `ready` once it holds every batch its
   * peers hold (copied and verified); over mutual TLS when the node has an identity (`useIdentity`
   * first). Without peers it is `ready` at once. Call after `start`, once; returns the run.
   */
  startSync(peers: readonly SyncPeer[], opts: { readonly maxBytesPerSecond?: number } = {}): Promise<void> {
    if (this.sync) throw new Error('startSync called twice');
    this.sync = new ColdBootSync({
      peers,
      store: this.store,
      chain: { algorithm: this.opts.algorithm, blockSize: this.opts.blockSize },
      ...(this.identity && { identity: this.identity.identity }),
      ...(opts.maxBytesPerSecond !== undefined && { maxBytesPerSecond: opts.maxBytesPerSecond }),
      log: (l, level) => this.log(`storage node '${this.config.nodeName}': ${l}`, level),
    });
    return this.sync.run();
  }

  /** Where synchronisation stands: `ready` when it never started (no peers). */
  syncReport(): SyncReport | { readonly state: 'ready'; readonly reason: string } {
    return this.sync?.report() ?? { state: 'ready', reason: 'no cold-boot synchronisation configured' };
  }

  /** Aborts open batches (never acknowledged, so nothing durable is lost) and stops the observability server. */
  async stop(): Promise<number> {
    await this.sync?.stop();
    const dropped = await this.store.abortAll();
    await this.observability.close();
    return dropped;
  }

  /** Where a durable batch is read from (through the OCF cache when enabled); undefined if not stored here. */
  async readLocation(dataset: string, batchId: BatchID): Promise<ReadLocation | undefined> {
    const e = this.index.get(dataset, batchId);
    if (!e) return undefined;
    return this.cache ? this.cache.resolve(e) : { path: e.path, tier: 'core' };
  }

  /**
   * {@link readLocation} of each of `batchIds`, in order: one lookup pass (a group of a query's
   * batches resolves its segments at once, not an await per batch), through the OCF cache when enabled.
   */
  async readLocations(dataset: string, batchIds: readonly BatchID[]): Promise<(ReadLocation | undefined)[]> {
    const entries = batchIds.map((id) => this.index.get(dataset, id));
    const cache = this.cache;
    if (!cache) return entries.map((e) => e && { path: e.path, tier: 'core' });
    return Promise.all(entries.map((e) => e && cache.resolve(e)));
  }

  /** The line saying where the node listens and which devices it uses. */
  startupLine(): string {
    const c = this.config;
    const devs = this.pool.devices.map((d) => `${d.name} (${d.type}, ${d.dir}, ${d.ioInEffect} I/O${d.ioRefused ? `: ${d.ioRefusedNote}` : ''})`).join(', ');
    const cache = this.cache ? `; OCF cache: ${this.cache.devices.map((d) => `${d.name} (${d.type}, ${d.dir})`).join(', ')}` : '';
    const obs = this.observabilityAt ? `http://${this.observabilityAt.host}:${this.observabilityAt.port}` : 'not started';
    return (
      `storage node '${c.nodeName}' ready: HDWP ingest on ${c.productionIp}:${c.productionPort}, /health and /metrics on ${obs}; ` +
      `devices (${c.driveStrategy}): ${devs}${cache}; ${this.index.size} batches stored`
    );
  }

  private registerHealth(): void {
    const obs = this.observability;
    obs.addHealthPart('devices', async () => {
      const all = [...this.pool.devices.map((d) => ({ d, use: 'write' })), ...(this.cache?.devices ?? []).map((d) => ({ d, use: 'cache' }))];
      const list = await Promise.all(
        all.map(async ({ d, use }) => {
          try {
            return { name: d.name, type: d.type, dir: d.dir, use, io: d.ioInEffect, io_configured: d.io, io_refused: d.ioRefusal, free_bytes: await d.freeBytes() };
          } catch (err) {
            return { name: d.name, type: d.type, dir: d.dir, use, io: d.ioInEffect, io_configured: d.io, io_refused: d.ioRefusal, error: (err as Error).message };
          }
        }),
      );
      const unreadable = list.some((x) => 'error' in x);
      const writable = list.some((x) => x.use === 'write' && 'free_bytes' in x && (x.free_bytes as number) > this.config.reserveBytes);
      return { status: unreadable || !writable ? 'degraded' : 'ok', drive_strategy: this.config.driveStrategy, reserve_bytes: this.config.reserveBytes, list };
    });
    obs.addHealthPart('batches', () => ({ open: this.store.openBatches, stored: this.index.size, datasets: this.index.datasets().length }));
    obs.addHealthPart('recovery', () => {
      const r = this.recovery;
      if (!r) return { done: false };
      return { done: true, complete: r.complete, discarded: r.discarded.length, quarantined: r.quarantined, duplicates: r.duplicates.length, ms: r.ms };
    });
    // Cold-boot synchronisation: `syncing` lowers /health to degraded; the SCC reads /v1/sync-state.
    obs.addHealthPart('sync', () => {
      const r = this.syncReport();
      return { ...r, status: r.state === 'syncing' ? 'degraded' : 'ok' };
    });
    obs.addRoute('/v1/sync-state', () => ({ status: this.recovery ? 200 : 503, body: this.recovery ? this.syncReport() : { state: 'initializing', reason: 'recovery has not finished' } }));
    // Whole segments for a peer's cold-boot synchronisation: mutual TLS to storageNode certificates when registered.
    obs.addRoute('/v1/segment', (q, caller) => {
      const refused = segmentRefusal(caller, this.identity);
      if (refused) return refused;
      return this.recovery ? segmentRoute(this.index, q) : { status: 503, body: { error: 'initializing: recovery has not finished' } };
    });
    if (this.cache) {
      const cache = this.cache;
      obs.addHealthPart('ocf', () => ({ hits: cache.hits, fills: cache.fills, bypasses: cache.bypasses }));
    }
    obs.addRoute('/v1/batches', (q) => {
      // The index is complete only once recovery has run; a partial answer would look like lost batches.
      if (!this.recovery) return { status: 503, body: { error: 'initializing: recovery has not finished' } };
      const dataset = q.get('dataset');
      if (dataset === null) {
        return { status: 200, body: { datasets: this.index.datasets().map((d) => ({ dataset: d, batches: this.index.list(d).length })) } };
      }
      return { status: 200, body: { dataset, batches: this.index.list(dataset).map((e) => BatchIndex.toJson(e)) } };
    });
    // The Proxy resolves a query's time window here (docs/storage-node.md, "Batch ranges").
    obs.addRoute('/v1/batch-ranges', (q) => (this.recovery ? batchRangesRoute(this.index, q) : { status: 503, body: { error: 'initializing: recovery has not finished' } }));
    // The Proxy's filter verdict reads batch filters here (docs/storage-node.md, "Batch filters"):
    // over mutual TLS, to the proxy role only.
    const filters = new BatchFilterCache(this.index);
    obs.addRoute('/v1/batch-filters', (q, caller) => {
      const refused = batchFilterRefusal(caller, this.identity);
      if (refused) return refused;
      return this.recovery ? batchFiltersRoute(filters, q) : { status: 503, body: { error: 'initializing: recovery has not finished' } };
    });
  }
}
