/**
 * QoS admission of queries on the SCC (docs/query.md, "What the SCC does", step 2): at most
 * `maxQueries` run at once, and a query of weight `q` (query_qos 1..255) is admitted only while
 * fewer than `ceil(maxQueries × (1/2 + (q − 1)/508))` run — half the slots for weight 1, all of
 * them for weight 255 — so a flood of low-priority queries never locks out an urgent one. Fair
 * sharing of read bandwidth between admitted queries is the Storage Nodes' weighted read queues.
 */
import { QOS_MAX, QOS_MIN } from '../../query/hdQuery';

/** Counts running queries and decides admission by weight. */
export class QueryAdmission {
  private running = 0;

  /** @param maxQueries most queries running at once (≥ 1) */
  constructor(readonly maxQueries: number) {
    if (!Number.isSafeInteger(maxQueries) || maxQueries < 1) throw new RangeError(`maxQueries must be an integer ≥ 1, got ${maxQueries}`);
  }

  /** Queries running now. */
  get active(): number {
    return this.running;
  }

  /** How many queries may run when one of weight `qos` is admitted. */
  limitFor(qos: number): number {
    const q = Math.min(QOS_MAX, Math.max(QOS_MIN, qos));
    return Math.max(1, Math.ceil(this.maxQueries * (0.5 + (q - 1) / 508)));
  }

  /** Takes a slot for a query of weight `qos`; false (nothing taken) when admission is full for it. */
  tryAdmit(qos: number): boolean {
    if (this.running >= this.limitFor(qos)) return false;
    this.running++;
    return true;
  }

  /** Gives a slot back. */
  release(): void {
    this.running = Math.max(0, this.running - 1);
  }
}
