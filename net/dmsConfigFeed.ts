/**
 * A registered node's configuration from the DMS (docs/control-plane.md, "Node configuration"):
 * first the registration answer, then `GET /v1/nodes/{name}/config` every `config_poll_ms` (handed
 * out by the DMS, DMS_CONFIG_POLL_MS) over mutual TLS with the node's certificate, and at once when
 * a node meets a dataset it has no configuration for ({@link DmsConfigFeed.refreshNow}). Polling,
 * not a push: a Storage Node has no HTTPS server the DMS could call, and a node that was away when
 * something changed catches up on its next read. A failed read keeps the configuration held and is
 * logged once until the DMS answers again.
 */
import { EventEmitter } from 'node:events';
import type { ReplicaAddress } from '../control/api';
import { DMS_PEER_ROLES, requestJson } from './jsonClient';
import type { MtlsIdentity } from './mtls';

/** Default poll period when the DMS hands out none (an older DMS). */
export const DEFAULT_CONFIG_POLL_MS = 5000;
/** Reads asked for by {@link DmsConfigFeed.refreshNow} are at most this often (a flood of unknown datasets). */
const MIN_REFRESH_GAP_MS = 200;

/** The hash election (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE, RECORD_SIZE) as the DMS elected it. */
export interface HashElection {
  readonly algorithm: string;
  readonly chainBlockSize: number;
  readonly recordSize: number;
}

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
  const pollMs = typeof o.config_poll_ms === 'number' && o.config_poll_ms >= 100 ? o.config_poll_ms : DEFAULT_CONFIG_POLL_MS;
  return { datasets, recordSizes, replicas, quarantined, hashElection, pollMs };
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
  readonly log: (line: string) => void;
}

/** Events of {@link DmsConfigFeed}. */
export interface DmsConfigFeedEvents {
  /** A read brought a configuration that differs from the one held. */
  update: [config: DmsNodeConfig];
}

/** The node's configuration from the DMS, kept fresh until {@link stop}. */
export class DmsConfigFeed extends EventEmitter<DmsConfigFeedEvents> {
  private held: DmsNodeConfig | undefined;
  private fingerprint = '';
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
        this.take(opts.initial);
      } catch (err) {
        opts.log(`the registration answer's configuration is not usable: ${(err as Error).message}`);
      }
    }
  }

  /** The configuration held; undefined until the DMS answered once. */
  get config(): DmsNodeConfig | undefined {
    return this.held;
  }

  /** Polls every `config_poll_ms` (the timer does not keep the process alive); the first read at once when nothing is held. */
  start(): void {
    this.stopped = false;
    if (this.held) this.schedule();
    else void this.refreshNow().finally(() => this.schedule());
  }

  /** Stops polling. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
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
      const changed = this.take(a.body);
      if (this.failing !== undefined) this.opts.log('configuration reads reach the DMS again');
      this.failing = undefined;
      return changed;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.failing) this.opts.log(`reading the configuration from the DMS failed (keeping what is held, retrying): ${message}`);
      this.failing = message;
      return false;
    }
  }

  /** Holds `body`'s configuration; true (and an `update` event) when it differs from the one held. */
  private take(body: unknown): boolean {
    const next = parseNodeConfig(body);
    const fingerprint = JSON.stringify([[...next.datasets.entries()], next.replicas, next.quarantined, next.hashElection, next.pollMs]);
    if (fingerprint === this.fingerprint) return false;
    this.held = next;
    this.fingerprint = fingerprint;
    this.emit('update', next);
    return true;
  }
}
