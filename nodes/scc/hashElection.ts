/**
 * The SCC's hash election (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE, RECORD_SIZE; docs/scc.md, "Hash
 * election"): a variable the operator set, else the DMS's `hash_election` (or the node's cache of it
 * while the DMS does not answer), else sha512, 64 and 150. Taken once, at start.
 *
 * A later change of the election on the DMS is **refused while the SCC runs**, visibly: one log line
 * and `pending_restart` in /health's `hash_election` part (status `degraded`) until a restart takes
 * it. Following it live is not safe: an end-of-batch carries the closing hash but not the election
 * it was computed with, and each Storage Node checks that hash against the chain it computes itself
 * with the election it started with. The SCC and every Storage Node read the DMS at their own moments
 * (each polls every `config_poll_ms`), so a live switch would leave them on different elections for
 * up to a poll period, and every batch closed then would be refused by the replicas (error 10). A
 * restart of the cluster's nodes puts them all on the new election together; segments already
 * stored keep theirs (each segment's header names its algorithm and block size).
 */
import { HASH_ALGORITHMS, isHashAlgorithm, type HashAlgorithmName } from '../../engine-rs/hashChain';
import type { HealthPart } from '../../lib/observability';
import type { LogFn } from '../../lib/logging';
import type { DmsConfigFeed, DmsNodeConfig } from '../../net/dmsConfigFeed';
import { StartTimeSettings } from '../../net/startTimeSettings';

/** The election where neither a variable nor the DMS gives one (the reference's defaults). */
export const SCC_DEFAULT_ELECTION = { algorithm: 'sha512', chainBlockSize: 64, recordSize: 150 } as const;

/** Where a value of the election came from (`dms-cache`: the DMS's, cached, while the DMS did not answer). */
export type ElectionFrom = 'settings' | 'dms' | 'dms-cache' | 'default';

/** The election the SCC hashes with. */
export interface ElectionInForce {
  readonly algorithm: HashAlgorithmName;
  readonly chainBlockSize: number;
  readonly recordSize: number;
  readonly from: { readonly algorithm: ElectionFrom; readonly chainBlockSize: ElectionFrom; readonly recordSize: ElectionFrom };
}

/** The variables the operator set (undefined: unset). */
export interface ElectionSettings {
  readonly algorithm?: HashAlgorithmName;
  readonly chainBlockSize?: number;
  readonly recordSize?: number;
}

/**
 * The precedence applied to `set` and the DMS's configuration `dms` (from `origin`). Throws naming
 * the algorithm when the DMS elects one this build lacks and HASH_ALGORITHM does not pin another.
 */
export function electionOf(set: ElectionSettings, dms: DmsNodeConfig | undefined, origin: 'dms' | 'dms-cache' = 'dms'): ElectionInForce {
  const e = dms?.hashElection;
  if (set.algorithm === undefined && e && !isHashAlgorithm(e.algorithm)) {
    throw new Error(`the DMS elected hash algorithm '${e.algorithm}', which this build lacks (${HASH_ALGORITHMS.join(', ')}); set HASH_ALGORITHM only if every Storage Node uses it too`);
  }
  const pick = <T>(v: T | undefined, fromDms: T | undefined, fallback: T): [T, ElectionFrom] => (v !== undefined ? [v, 'settings'] : fromDms !== undefined ? [fromDms, origin] : [fallback, 'default']);
  const [algorithm, a] = pick<HashAlgorithmName>(set.algorithm, e?.algorithm as HashAlgorithmName | undefined, SCC_DEFAULT_ELECTION.algorithm);
  const [chainBlockSize, b] = pick(set.chainBlockSize, e?.chainBlockSize, SCC_DEFAULT_ELECTION.chainBlockSize);
  const [recordSize, r] = pick(set.recordSize, e?.recordSize, SCC_DEFAULT_ELECTION.recordSize);
  return { algorithm, chainBlockSize, recordSize, from: { algorithm: a, chainBlockSize: b, recordSize: r } };
}

/** Why a changed election waits for a restart (the log line's end). */
const WHY =
  "the Storage Nodes check every batch's closing hash against the chain they compute with the election they started with, and an end-of-batch does not say which election it used: switching live would have the replicas refuse batches (docs/scc.md, \"Hash election\")";

/**
 * The SCC's election in force and its watch on the DMS: the `sccNode` service holds it, the
 * `hashChain` stage settles it with its variables ({@link settle}), /health shows it.
 */
export class SccHashElection {
  private inForce: ElectionInForce;
  private settings: ElectionSettings;
  private watch: StartTimeSettings | undefined;

  /** `recordSize`: RECORD_SIZE as the operator set it (the `sccNode` service's setting). */
  constructor(
    private readonly feed: DmsConfigFeed | undefined,
    private readonly origin: 'dms' | 'dms-cache',
    recordSize: number | undefined,
    private readonly log: LogFn,
  ) {
    this.settings = { ...(recordSize !== undefined && { recordSize }) };
    try {
      this.inForce = electionOf(this.settings, feed?.config, origin);
    } catch {
      // The DMS elects an algorithm this build lacks: HASH_ALGORITHM may still pin another; settle() decides.
      const e = electionOf({ ...this.settings, algorithm: SCC_DEFAULT_ELECTION.algorithm }, feed?.config, origin);
      this.inForce = { ...e, from: { ...e.from, algorithm: 'default' } };
    }
  }

  /** The election in force (RECORD_SIZE settled at construction; algorithm and block size once {@link settle} ran). */
  get current(): ElectionInForce {
    return this.inForce;
  }

  /**
   * Settles the algorithm and block size with the `hashChain` stage's HASH_ALGORITHM and
   * HASH_CHAIN_BLOCK_SIZE (undefined: unset) and starts watching the DMS for a changed election.
   */
  settle(set: { readonly algorithm?: HashAlgorithmName; readonly chainBlockSize?: number }): ElectionInForce {
    this.settings = { ...this.settings, ...(set.algorithm !== undefined && { algorithm: set.algorithm }), ...(set.chainBlockSize !== undefined && { chainBlockSize: set.chainBlockSize }) };
    this.inForce = electionOf(this.settings, this.feed?.config, this.origin);
    this.watch?.stop();
    if (this.feed) {
      const restart = (cfg: DmsNodeConfig): ElectionInForce | undefined => {
        try {
          return electionOf(this.settings, cfg);
        } catch {
          return undefined; // an algorithm this build lacks: the DMS's own value is shown
        }
      };
      const of = (e: { algorithm: string; chainBlockSize: number; recordSize: number } | undefined): unknown => e && { algorithm: e.algorithm, chain_block_size: e.chainBlockSize, record_size: e.recordSize };
      this.watch = new StartTimeSettings(
        this.feed,
        [{ name: 'hash_election', inForce: of(this.inForce), atRestart: (cfg) => of(restart(cfg) ?? cfg.hashElection), fromDms: (cfg) => of(cfg.hashElection), why: WHY }],
        this.log,
      );
    }
    return this.inForce;
  }

  /** The `hash_election` part of /health. */
  health(): HealthPart {
    const e = this.inForce;
    const later = this.watch?.health();
    return {
      status: later?.status ?? 'ok',
      algorithm: e.algorithm,
      chain_block_size: e.chainBlockSize,
      record_size: e.recordSize,
      from: { algorithm: e.from.algorithm, chain_block_size: e.from.chainBlockSize, record_size: e.from.recordSize },
      ...(later && Object.keys(later.pending).length > 0 && { pending_restart: later.pending.hash_election }),
      ...(later && Object.keys(later.overridden).length > 0 && { dms_overridden: later.overridden.hash_election }),
    };
  }

  /** Stops watching the DMS. */
  stop(): void {
    this.watch?.stop();
  }
}
