/**
 * The offsets a `kafkaSource` may commit (docs/ingester.md, "At-least-once"): positions read, taken
 * at checkpoints and committed only once the checkpoint is durable, per consumer-group generation.
 * A rebalance starts a new generation: checkpoints of the old one are dropped (their partitions may
 * now belong to another member, whose commits must not be overwritten), every read position is
 * forgotten (kafkajs reads every assigned partition again from its last commit, and the windows
 * holding what was read are rebuilt: operators/windowRewind.ts), and offsets only ever move forward
 * per partition.
 */

/** `topic` + partition → the next offset to read (the Kafka commit convention). */
export type Positions = Map<string, { readonly topic: string; readonly partition: number; readonly offset: bigint }>;

/** One partition's offset to commit. */
export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to read, as Kafka commits it. */
  readonly offset: string;
}

const key = (topic: string, partition: number): string => `${topic}\n${partition}`;

/** Read positions, assignment and committed offsets of one consumer. */
export class KafkaCommits {
  private generation = 0;
  private readonly read: Positions = new Map();
  private readonly committed = new Map<string, bigint>();
  private assigned = new Set<string>();
  /** Every partition this consumer was assigned in this run. */
  private readonly held = new Map<string, string>();
  /** Checkpoints dropped because a rebalance came first. */
  droppedCheckpoints = 0;

  /** The current consumer-group generation (changes on every rebalance). */
  get currentGeneration(): number {
    return this.generation;
  }

  /** Offsets committed so far by this consumer, per `topic/partition`. */
  committedOffsets(): Map<string, bigint> {
    return new Map([...this.committed].map(([k, v]) => [k.replace('\n', '/'), v]));
  }

  /**
   * A rebalance gave this member `assignment` (topic → partitions): a new generation. Every read
   * position is forgotten: the partitions still assigned are read again from their last commit
   * (kafkajs fetches the committed offsets at each join), those gone are read by their new owner.
   * Returns the partitions (`topic/partition`) this member held earlier in the run and lacks now.
   */
  assign(assignment: Readonly<Record<string, readonly number[]>>): string[] {
    this.generation++;
    this.assigned = new Set(Object.entries(assignment).flatMap(([t, ps]) => ps.map((p) => key(t, p))));
    this.read.clear();
    for (const [t, ps] of Object.entries(assignment)) for (const p of ps) this.held.set(key(t, p), `${t}/${p}`);
    return [...this.held].filter(([k]) => !this.assigned.has(k)).map(([, name]) => name);
  }

  /** Messages up to `lastOffset` of the partition were handed downstream. */
  advance(topic: string, partition: number, lastOffset: string): void {
    this.read.set(key(topic, partition), { topic, partition, offset: BigInt(lastOffset) + 1n });
  }

  /** A copy of the read positions, tagged with the generation, to commit once durable. */
  snapshot(): { readonly generation: number; readonly positions: Positions } {
    return { generation: this.generation, positions: new Map(this.read) };
  }

  /**
   * The offsets of `snap` that should be committed now: none when a rebalance happened since it
   * was taken; otherwise those of partitions still assigned that move forward.
   */
  due(snap: { readonly generation: number; readonly positions: Positions }): TopicPartitionOffset[] {
    if (snap.generation !== this.generation) {
      this.droppedCheckpoints++;
      return [];
    }
    const out: TopicPartitionOffset[] = [];
    for (const [k, p] of snap.positions) {
      if (this.assigned.size > 0 && !this.assigned.has(k)) continue;
      const done = this.committed.get(k);
      if (done !== undefined && done >= p.offset) continue;
      out.push({ topic: p.topic, partition: p.partition, offset: p.offset.toString() });
    }
    return out;
  }

  /** `offsets` were committed. */
  markCommitted(offsets: readonly TopicPartitionOffset[]): void {
    for (const o of offsets) this.committed.set(key(o.topic, o.partition), BigInt(o.offset));
  }
}
