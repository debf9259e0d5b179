/**
 * What a `kafkaSource` does across consumer-group rebalances (docs/ingester.md, "Rebalances"), so
 * that the re-read every rebalance causes stores each record once:
 *
 * - while the group rebalances nothing is read, so the windows' batch timeout is held;
 * - a join starts a new generation ({@link KafkaCommits.assign}): kafkajs reads every assigned
 *   partition again from its last commit, so once everything emitted before has reached
 *   `timeBatch` (the pipeline drained) the open windows are discarded with a bbn each and rebuilt
 *   from the re-read ({@link WindowRewind}); nothing of the new generation is emitted before
 *   ({@link KafkaRebalances.rewound});
 * - a join that leaves the member without a partition it read earlier pauses the partitions kept
 *   and holds the timeout for at most `holdMs`, waiting for the partition to come back.
 */
import type { Consumer } from 'kafkajs';
import type { Flow } from '../stream/flow';
import type { KafkaCommits } from './kafkaSourceCommits';
import { REWIND_REASON, type WindowRewind } from '../operators/windowRewind';

/** Options of {@link KafkaRebalances}. */
export interface KafkaRebalancesOptions {
  readonly consumer: Consumer;
  /** The topics the consumer subscribed to (paused and resumed as a whole). */
  readonly topics: readonly string[];
  /** The run's pending-work accounting (the rewind waits for it to drain). */
  readonly flow: Flow;
  /** The source's offsets, told about each assignment. */
  readonly commits: KafkaCommits;
  /** The pipeline's open windows (its `timeBatch`), held and rewound across rebalances. */
  readonly windows: WindowRewind;
  /** Longest hold (and pause); default 30 s, 0 never holds. */
  readonly holdMs?: number;
  readonly report: (message: string) => void;
  /** False once the source is torn down. */
  readonly isActive: () => boolean;
}

/** Listens to the consumer's `REBALANCING` and `GROUP_JOIN` events and acts on them (see the file comment). */
export class KafkaRebalances {
  private readonly windows: WindowRewind;
  private readonly holdMs: number;
  private holdTimer: NodeJS.Timeout | undefined;
  private pausedNow = false;
  private rewinding: Promise<void> = Promise.resolve();

  constructor(private readonly opts: KafkaRebalancesOptions) {
    this.windows = opts.windows;
    this.holdMs = opts.holdMs ?? 30_000;
    const { consumer } = opts;
    consumer.on(consumer.events.REBALANCING, () => this.rebalancing());
    consumer.on(consumer.events.GROUP_JOIN, (e) => this.joined(e.payload.memberAssignment));
  }

  /** Settles once the newest generation's windows are rewound: nothing read in it may be emitted before. */
  get rewound(): Promise<void> {
    return this.rewinding;
  }

  /** True while the partitions kept are paused, waiting for one that another member holds. */
  get paused(): boolean {
    return this.pausedNow;
  }

  /** The group rebalances (kafkajs said so, or a heartbeat was answered so): hold the timeout. */
  rebalancing(): void {
    this.hold('the group is rebalancing', false);
  }

  /** The source stops: nothing stays held or paused. */
  stop(): void {
    this.release();
  }

  private joined(assignment: Readonly<Record<string, readonly number[]>>): void {
    const { commits, flow, report } = this.opts;
    const missing = commits.assign(assignment);
    const generation = commits.currentGeneration;
    this.rewinding = (async () => {
      do await flow.whenAtMost(0);
      while (flow.pending > 0);
      if (!this.opts.isActive() || generation !== commits.currentGeneration) return;
      if (generation > 1) {
        const n = this.windows.rewind(`${REWIND_REASON} (generation ${generation}); the batch is read again from the last commit`);
        const parts = Object.entries(assignment).flatMap(([t, ps]) => ps.map((p) => `${t}/${p}`));
        report(`consumer-group rebalance (generation ${generation}, assigned ${parts.join(', ') || 'nothing'}): ${n} open window(s) discarded (bbn), reading again from the last commit`);
      }
      if (missing.length > 0) this.hold(`${missing.join(', ')} held by another member`, true);
      else this.release();
    })();
  }

  /**
   * Holds the windows' timeout for at most `holdMs`. With `pause`, the partitions kept are not read
   * meanwhile either: reading ahead on them would close windows by eviction (MAX_OPEN_BATCHES)
   * before the missing partition's records for them come back.
   */
  private hold(why: string, pause: boolean): void {
    if (this.holdMs <= 0) return;
    this.windows.hold();
    if (pause && !this.pausedNow) {
      try {
        this.opts.consumer.pause(this.topics());
        this.pausedNow = true;
      } catch (err) {
        this.opts.report(`kafka pause: ${(err as Error).message}`);
      }
    }
    clearTimeout(this.holdTimer);
    this.holdTimer = setTimeout(() => {
      if (this.windows.held) this.opts.report(`reading and the windows' batch timeout go on after ${this.holdMs} ms held (${why})`);
      this.release();
    }, this.holdMs);
  }

  private release(): void {
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.windows.release();
    if (!this.pausedNow) return;
    this.pausedNow = false;
    try {
      this.opts.consumer.resume(this.topics());
    } catch (err) {
      this.opts.report(`kafka resume: ${(err as Error).message}`);
    }
  }

  private topics(): { topic: string }[] {
    return this.opts.topics.map((topic) => ({ topic }));
  }
}
