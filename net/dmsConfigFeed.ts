/**
 * A registered node's configuration from the DMS (docs/control-plane.md, "Node configuration"):
 * first the registration answer, then `GET /v1/nodes/{name}/config` every `config_poll_ms` (handed
 * out by the DMS, DMS_CONFIG_POLL_MS) over mutual TLS with the node's certificate, and at once when
 * a node meets a dataset it has no configuration for ({@link DmsConfigFeed.refreshNow}). Polling,
 * not a push: a Storage Node has no HTTPS server the DMS could call, and a node that was away when
 * something changed catches up on its next read. A failed read keeps the configuration held and is
 * logged once until the DMS answers again.
 *
 * With a cache file (the node's state directory, net/dmsConfigCache.ts) every configuration the DMS
 * gives is also written there, and a node whose DMS does not answer at start takes the one written
 * last ({@link DmsConfigFeed.ready}), saying so; the next answer of the DMS replaces it.
 */
import { EventEmitter } from 'node:events';
import type { ReplicaAddress } from '../control/api';
import { readDmsConfigCache, writeDmsConfigCache } from './dmsConfigCache';
import { DMS_PEER_ROLES, requestJson } from './jsonClient';
import type { MtlsIdentity } from './mtls';
import type { LogFn } from '../lib/logging';

/** Default poll period when the DMS hands out none (an older DMS). */
export const DEFAULT_CONFIG_POLL_MS = 5000;
/** Reads asked for by {@link DmsConfigFeed.refreshNow} are at most this often (a flood of unknown datasets). */
const MIN_REFRESH_GAP_MS = 200;
/** An unchanged configuration is written to the cache again at most this often (its `fetched_at` stays recent). */
const CACHE_REFRESH_MS = 10 * 60_000;

/** The hash election (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE, RECORD_SIZE) as the DMS elected it. */
export interface HashElection {
  readonly algorithm: string;
  readonly chainBlockSize: number;
  readonly recordSize: number;
}

/** A storage device the DMS hands a Storage Node (`devices`: config.json's `storage_devices` entries), unchecked. */
export interface DmsDevice {
  readonly name: string;
  readonly address: string;
  readonly type: string;
}

/** Where the configuration held came from: this start's registration answer, a later read, or the cache file. */
export type DmsConfigSource = 'registration' | 'dms' | 'dms-cache';

/** What a node runs with, read from the DMS's answer (only what the nodes use). */
export interface DmsNodeConfig {
  /** Every dataset schema distributed to the node's cluster (raw schema JSON objects, by id). */
  readonly datasets: ReadonlyMap<string, Record<string, unknown>>;
  /** The record size of each dataset with a schema, by dataset id. */
  readonly recordSizes: ReadonlyMap<string, number>;
  /** The cluster's Storage Nodes (an SCC's replica set). */
  readonly replicas: readonly ReplicaAddress[];
  /** The cluster's quarantined Storage Nodes (none from an older DMS): the SCC keeps them as `quarantined` replicas. */
  readonly quarantined?: readonly ReplicaAddress[];
  readonly hashElection: HashElection | undefined;
  /** A Storage Node's devices as declared on the DMS (empty: none declared). */
  readonly devices: readonly DmsDevice[];
  readonly pollMs: number;
}

/** Reads the parts of a registration answer or config document a node uses; throws naming a bad field. */
export function parseNodeConfig(body: unknown): DmsNodeConfig {
  if (typeof body !== 'object' || body === null) throw new TypeError('the DMS answered no JSON object');
  const o = body as Record<string, unknown>;
  const datasets = new Map<string, Record<string, unknown>>();
  const recordSizes = new Map<string, number>();
  for (const d of Array.isArray(o.datasets) ? o.datasets : []) {
    if (typeof d !== 'object' || d === null) continue;
    const schema = d as Record<string, unknown>;
    if (typeof schema.id !== 'string') continue;
    datasets.set(schema.id, schema);
    if (typeof schema.record_size === 'number' && Number.isSafeInteger(schema.record_size) && schema.record_size > 0) recordSizes.set(schema.id, schema.record_size);
  }
  const replicas: ReplicaAddress[] = [];
  for (const r of Array.isArray(o.replicas) ? o.replicas : []) {
    const x = r as Partial<ReplicaAddress>;
    const port = (p: unknown): boolean => typeof p === 'number' && Number.isInteger(p) && p > 0 && p < 65536;
    if (typeof x.name !== 'string' || typeof x.host !== 'string' || !port(x.control_port) || !port(x.prod_port)) throw new TypeError(`'replicas' holds a bad entry ${JSON.stringify(r)}`);
    const obs = x.observability;
    const observability = obs && typeof obs.host === 'string' && obs.host !== '' && port(obs.port) ? { observability: { host: obs.host, port: obs.port } } : {};
    replicas.push({ name: x.name, host: x.host, control_port: x.control_port as number, prod_port: x.prod_port as number, ...observability });
  }
  const quarantined = (Array.isArray(o.quarantined) ? o.quarantined : []).map((r) => {
    const x = r as Partial<ReplicaAddress>;
    const port = (p: unknown): boolean => typeof p === 'number' && Number.isInteger(p) && p > 0 && p < 65536;
    if (typeof x.name !== 'string' || typeof x.host !== 'string' || !port(x.control_port) || !port(x.prod_port)) throw new TypeError(`'quarantined' holds a bad entry ${JSON.stringify(r)}`);
    return { name: x.name, host: x.host, control_port: x.control_port as number, prod_port: x.prod_port as number };
  });
  const e = o.hash_election as Record<string, unknown> | null | undefined;
  const hashElection =
    e && typeof e.algorithm === 'string' && typeof e.chain_block_size === 'number' && typeof e.record_size === 'number'
      ? { algorithm: e.algorithm, chainBlockSize: e.chain_block_size, recordSize: e.record_size }
      : undefined;
  const devices = (Array.isArray(o.devices) ? o.devices : []).map((d) => {
    const x = d as Partial<DmsDevice> | null;
    if (!x || typeof x.name !== 'string' || typeof x.address !== 'string' || typeof x.type !== 'string') throw new TypeError(`'devices' holds a bad entry ${JSON.stringify(d)}`);
    return { name: x.name, address: x.address, type: x.type };
  });
  const pollMs = typeof o.config_poll_ms === 'number' && o.config_poll_ms >= 100 ? o.config_poll_ms : DEFAULT_CONFIG_POLL_MS;
  return { datasets, recordSizes, replicas, quarantined, hashElection, devices, pollMs };
}

/** Options of {@link DmsConfigFeed}. */
export interface DmsConfigFeedOptions {
  readonly nodeName: string;
  readonly dmsUrl: string;
  readonly dmsServerName?: string;
  /** The node's certificate, presented on every read (renewals included). */
  readonly identity: MtlsIdentity;
  /** The registration answer of this start; absent when the node started on its stored certificate. */
  readonly initial?: unknown;
  /**
   * Where the last configuration from the DMS is kept (`<state dir>/dms-config.json`); absent: not
   * kept, and a node whose DMS does not answer at start runs on its settings and defaults.
   */
  readonly cacheFile?: string;
  /** Where the feed's lines go, each with its level. */
  readonly log: LogFn;
}

/** The `dms_config` part of a node's /health. */
export interface DmsConfigHealth {
  /** Where the configuration held came from; `none`: the DMS never answered and no cache was usable. */
  readonly source: DmsConfigSource | 'none';
  /** When the DMS gave the configuration held. */
  readonly fetched_at: string | null;
  /** Whether this process has had an answer from the DMS and the last read succeeded. */
  readonly dms_reachable: boolean;
  readonly last_error?: string;
  readonly cache_file: string | null;
}

/** Events of {@link DmsConfigFeed}. */
export interface DmsConfigFeedEvents {
  /** A read brought a configuration that differs from the one held. */
  update: [config: DmsNodeConfig];
}

/** The node's configuration from the DMS, kept fresh until {@link stop}. */
export class DmsConfigFeed extends EventEmitter<DmsConfigFeedEvents> {
  private held: DmsNodeConfig | undefined;
  private heldSource: DmsConfigSource | undefined;
  private heldAt: string | undefined;
  private fingerprint = '';
  /** When the cache was last written (0: not by this process), and the write in flight. */
  private cachedAt = 0;
  private caching: Promise<void> = Promise.resolve();
  private cacheFailing: string | undefined;
  /** Whether this process has read the DMS successfully (a start on the cache has not, yet). */
  private answered = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private failing: string | undefined;
  private reading: Promise<boolean> | undefined;
  private lastRead = 0;

  /** Holds the registration answer's configuration; nothing is read until {@link start}. */
  constructor(private readonly opts: DmsConfigFeedOptions) {
    super();
    if (opts.initial !== undefined) {
      try {
        this.take(opts.initial, 'registration');
        this.answered = true;
      } catch (err) {
        opts.log(`the registration answer's configuration is not usable: ${(err as Error).message}`, 'warn');
      }
    }
  }

  /** The configuration held; undefined until the DMS answered once (or {@link ready} took the cache). */
  get config(): DmsNodeConfig | undefined {
    return this.held;
  }

  /** Where the configuration held came from; undefined while none is held. */
  get source(): DmsConfigSource | undefined {
    return this.heldSource;
  }

  /** When the DMS gave the configuration held (ISO 8601); undefined while none is held. */
  get fetchedAt(): string | undefined {
    return this.heldAt;
  }

  /**
   * The configuration to start with: the one held, else the DMS's after up to `tries` reads, else
   * (the DMS does not answer) the cache file's, logged with the time it was fetched; undefined
   * when none of them is there. Never rejects.
   */
  async ready(tries = 3): Promise<DmsNodeConfig | undefined> {
    for (let i = 0; !this.held && i < tries; i++) await this.refreshNow();
    if (this.held) return this.held;
    const file = this.opts.cacheFile;
    if (file === undefined) return undefined;
    try {
      const cached = await readDmsConfigCache(file, this.opts.nodeName);
      if (!cached) {
        this.opts.log(`the DMS cannot be reached and no configuration of it is cached (${file}): running on the settings and defaults`, 'warn');
        return undefined;
      }
      // A read that succeeded meanwhile wins over the file.
      if (this.held) return this.held;
      this.take(cached.config, 'dms-cache', cached.fetchedAt);
      this.opts.log(`the DMS cannot be reached: starting from the configuration it gave at ${cached.fetchedAt} (cached in ${file}); the next answer of the DMS replaces it`, 'warn');
    } catch (err) {
      this.opts.log(`the DMS cannot be reached and its cached configuration is not usable (running on the settings and defaults): ${(err as Error).message}`, 'warn');
    }
    return this.held;
  }

  /** Where the configuration from the DMS is cached; undefined: not cached. */
  get cacheFile(): string | undefined {
    return this.opts.cacheFile;
  }

  /** The `dms_config` part of /health: where the configuration came from and when. */
  health(): DmsConfigHealth {
    return {
      source: this.heldSource ?? 'none',
      fetched_at: this.heldAt ?? null,
      dms_reachable: this.answered && this.failing === undefined,
      ...(this.failing !== undefined && { last_error: this.failing }),
      cache_file: this.opts.cacheFile ?? null,
    };
  }

  /** Polls every `config_poll_ms` (the timer does not keep the process alive); the first read at once when nothing is held. */
  start(): void {
    this.stopped = false;
    if (this.held) this.schedule();
    else void this.refreshNow().finally(() => this.schedule());
  }

  /** Stops polling; resolves once the cache write in flight (if any) settled. */
  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.caching;
  }

  /**
   * Reads the DMS now (at most every 200 ms; a read in flight is shared); resolves true when the
   * configuration changed. Never rejects: a failed read keeps what is held.
   */
  refreshNow(): Promise<boolean> {
    if (this.reading) return this.reading;
    const wait = Math.max(0, this.lastRead + MIN_REFRESH_GAP_MS - Date.now());
    const p = new Promise<void>((r) => setTimeout(r, wait))
      .then(() => this.read())
      .finally(() => {
        this.lastRead = Date.now();
        this.reading = undefined;
      });
    this.reading = p;
    return p;
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refreshNow().finally(() => this.schedule()), this.held?.pollMs ?? DEFAULT_CONFIG_POLL_MS);
    this.timer.unref();
  }

  private async read(): Promise<boolean> {
    const m = this.opts.identity.material;
    const url = new URL(`/v1/nodes/${encodeURIComponent(this.opts.nodeName)}/config`, this.opts.dmsUrl).toString();
    try {
      const a = await requestJson('GET', url, { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: this.opts.dmsServerName, roles: DMS_PEER_ROLES }, undefined, { timeoutMs: 5000 });
      if (a.status !== 200) {
        const b = a.body as { error?: string; message?: string };
        throw new Error(`HTTP ${a.status} ${b.error ?? ''}: ${b.message ?? ''}`);
      }
      const wasCache = this.heldSource === 'dms-cache';
      const changed = this.take(a.body, 'dms');
      if (wasCache) this.opts.log(`the DMS answers again: its configuration replaces the cached one${changed ? ' (it changed meanwhile)' : ' (unchanged)'}`, 'info');
      else if (this.failing !== undefined) this.opts.log('configuration reads reach the DMS again', 'info');
      this.failing = undefined;
      this.answered = true;
      return changed;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.failing) this.opts.log(`reading the configuration from the DMS failed (keeping what is held, retrying): ${message}`, 'warn');
      this.failing = message;
      return false;
    }
  }

  /**
   * Holds `body`'s configuration; true (and an `update` event) when it differs from the one held.
   * One from the DMS is also written to the cache file (when it changed, at the first answer of
   * this process, and every CACHE_REFRESH_MS otherwise).
   */
  private take(body: unknown, source: DmsConfigSource, fetchedAt = new Date().toISOString()): boolean {
    const next = parseNodeConfig(body);
    const fingerprint = JSON.stringify([[...next.datasets.entries()], next.replicas, next.quarantined, next.hashElection, next.devices, next.pollMs]);
    const changed = fingerprint !== this.fingerprint;
    if (source !== 'dms-cache' && (changed || this.heldSource === 'dms-cache' || this.cachedAt === 0 || Date.now() - this.cachedAt >= CACHE_REFRESH_MS)) this.writeCache(body, fetchedAt);
    this.heldSource = source;
    this.heldAt = fetchedAt;
    if (!changed) return false;
    this.held = next;
    this.fingerprint = fingerprint;
    this.emit('update', next);
    return true;
  }

  /** Writes the cache file in the background, one write at a time; a failure is logged once until a write succeeds. */
  private writeCache(body: unknown, fetchedAt: string): void {
    const file = this.opts.cacheFile;
    if (file === undefined) return;
    this.cachedAt = Date.now();
    this.caching = this.caching
      .then(() => writeDmsConfigCache(file, { node: this.opts.nodeName, fetchedAt, config: body as Record<string, unknown> }))
      .then(
        () => {
          if (this.cacheFailing !== undefined) this.opts.log(`the DMS's configuration is cached in ${file} again`, 'info');
          this.cacheFailing = undefined;
        },
        (err: unknown) => {
          const message = (err as Error).message;
          if (message !== this.cacheFailing) this.opts.log(`cannot cache the DMS's configuration in ${file} (a restart while the DMS is down would run on older settings): ${message}`, 'error');
          this.cacheFailing = message;
        },
      );
  }
}
