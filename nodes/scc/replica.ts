/**
 * One Storage Node as the SCC's {@link ReplicaSet} sees it: its state, streams and lag, plus the
 * small helpers the replica set and catch-up share (a bounded wait, what counts as a refusal of
 * one batch). State changes are made by the replica set; this file only holds the record.
 */
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import type { HdwpClient } from '../../hdwp/hdwpClient';
import type { SnTarget } from './settings';

/**
 * Where a replica stands (docs/scc.md, "Replica states"). `syncing`: the node reports cold-boot
 * synchronisation — it gets new batches live but takes no queries and does not count for
 * acknowledgements. `quarantined`: an administrator quarantined the node on the DMS — no queries,
 * no batches (what it misses waits in the catch-up log) until released (queryHealth.ts).
 */
export type ReplicaState = 'healthy' | 'down' | 'catching-up' | 'out-of-sync' | 'syncing' | 'quarantined';

/** One Storage Node's mutable state inside a replica set. */
export interface Replica {
  readonly target: SnTarget;
  state: ReplicaState;
  reason: string;
  since: number;
  /** One stream per dataset, opened on first use. */
  readonly clients: Map<string, Promise<HdwpClient>>;
  /** Datasets this replica has had streams for (to probe it again after a failure), with their record size. */
  readonly datasets: Map<string, number>;
  /** Keys of batches it must get by catch-up rather than live. */
  readonly behind: Set<string>;
  /** Record bytes handed to its streams and not yet written. */
  lagBytes: number;
  lagWaiters: (() => void)[];
  /** Next reconnect delay. */
  backoff: number;
  timer?: NodeJS.Timeout;
  acked: number;
  failures: number;
  /** Bumped on every failure, so work of an older connection generation is ignored. */
  epoch: number;
}

/** A new replica, healthy with no streams yet. */
export function newReplica(target: SnTarget, backoffMs: number, now = Date.now()): Replica {
  return {
    target,
    state: 'healthy',
    reason: 'streams open on demand',
    since: now,
    clients: new Map(),
    datasets: new Map(),
    behind: new Set(),
    lagBytes: 0,
    lagWaiters: [],
    backoff: backoffMs,
    acked: 0,
    failures: 0,
    epoch: 0,
  };
}

/** What {@link within} resolves with when time ran out. */
export const TIMEOUT = Symbol('timeout');

/** Resolves with `p`'s value, or {@link TIMEOUT} after `ms`. */
export function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  let t: NodeJS.Timeout | undefined;
  const timer = new Promise<typeof TIMEOUT>((r) => (t = setTimeout(() => r(TIMEOUT), ms)));
  return Promise.race([p, timer]).finally(() => clearTimeout(t));
}

/** An error frame that refused one batch (the stream itself is fine). */
export const isBatchRefusal = (err: unknown): err is HdwpStreamError => err instanceof HdwpStreamError && err.code === 'ERR_HDWP_PEER_ERROR' && err.batchId !== undefined;
