/**
 * The four counters every stage reports (docs/specs/stage.md). Items are counted in the stage's
 * unit: bytes for stages that move raw bytes, records for stages that move records. Control
 * elements (eob, bbn) are counted apart, in `controls`.
 */

/** The unit a stage counts its items in. */
export type CounterUnit = 'bytes' | 'records';

/** A snapshot of a stage's counters. */
export interface CounterSnapshot {
  readonly unit: CounterUnit;
  /** Items that reached the stage (for a source: items it read from outside). */
  readonly received: number;
  /** Items the stage passed on (for a sink: items it wrote out). */
  readonly sent: number;
  /** Items the stage discarded (malformed, late, not written on teardown). */
  readonly dropped: number;
  /** Items received but neither sent nor dropped yet (buffered inside the stage). */
  readonly held: number;
  /** Error events: each malformed line, failed write or rejected chunk counts once. */
  readonly errors: number;
  /** Control elements (eob, bbn) passed on. */
  readonly controls: number;
}

/**
 * Mutable counters of one stage. The rule: `received = sent + dropped + held` at every moment the
 * stage is not inside a call, and `held = 0` once the stage has completed.
 */
export class StageCounters {
  /** Items that reached the stage. */
  received = 0;
  /** Items passed on. */
  sent = 0;
  /** Items discarded. */
  dropped = 0;
  /** Error events. */
  errors = 0;
  /** Control elements passed on. */
  controls = 0;

  /** @param unit what one item is for this stage */
  constructor(readonly unit: CounterUnit) {}

  /** Items received and not yet sent or dropped. */
  get held(): number {
    return this.received - this.sent - this.dropped;
  }

  /** A frozen copy. */
  snapshot(): CounterSnapshot {
    const { unit, received, sent, dropped, held, errors, controls } = this;
    return { unit, received, sent, dropped, held, errors, controls };
  }

  /** Problems with the counter rule, empty when the counters add up (`complete`: the stage has finished). */
  check(complete: boolean): string[] {
    const out: string[] = [];
    if (this.held < 0) out.push(`sent (${this.sent}) + dropped (${this.dropped}) exceed received (${this.received})`);
    if (complete && this.held !== 0) out.push(`completed holding ${this.held} ${this.unit} (received ${this.received}, sent ${this.sent}, dropped ${this.dropped})`);
    return out;
  }
}
