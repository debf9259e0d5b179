/**
 * Row passthrough's rows handed to the door as they arrive (sql/passthroughRun.ts): the first batch
 * decides — when it passes as it is, the door gets the statement's columns and then every batch,
 * cut at the plan's LIMIT and at HD_SQL_MAX_ROWS, while later batches are still on their way; when
 * it does not, nothing was sent and the caller keeps the batches for DuckDB as before.
 */
import type * as arrow from 'apache-arrow';
import type { RowStream } from './engineTypes';
import { PassthroughBatches } from './passthroughTable';
import type { PassthroughPlan } from './rowPassthrough';
import { SqlError } from './sqlError';

/** The state of one statement's streamed rows. */
export class StreamedRows {
  /** The door has the columns (and maybe rows): the answer is streamed. */
  started = false;
  /** Rows the door was given. */
  sent = 0;
  /** Rows that arrived, passed on or not. */
  private arrived = 0;
  /** The first batch did not pass: every batch goes to the caller. */
  private declined = false;
  private readonly answer: PassthroughBatches;
  private readonly cap: number;

  /** @param maxRows HD_SQL_MAX_ROWS (0: no cap) */
  constructor(
    private readonly door: RowStream,
    private readonly pass: PassthroughPlan,
    private readonly schema: arrow.Schema,
    private readonly maxRows: number,
  ) {
    // Each batch keeps its own enum labels: the door writes them batch by batch.
    this.answer = new PassthroughBatches(pass, schema, { sameLabels: false });
    this.cap = Math.min(pass.limit ?? Infinity, maxRows > 0 ? maxRows : Infinity);
  }

  /** Takes `b`: true when it was handled here (sent, or past the cap), false when the caller must keep it. */
  async offer(b: arrow.RecordBatch): Promise<boolean> {
    if (this.declined) return false;
    this.arrived += b.numRows;
    const take = Math.min(b.numRows, this.cap - this.sent);
    if (take <= 0) return true;
    const built = this.answer.batch(b, take);
    if ('reason' in built) {
      if (this.started) throw new SqlError('internal', `row passthrough: a batch no longer fits the answer's columns after rows were sent: ${built.reason}`);
      this.declined = true;
      this.arrived -= b.numRows;
      return false;
    }
    if (!this.started) {
      this.door.begin(this.schema);
      this.started = true;
    }
    this.sent += take;
    await this.door.rows(built);
    return true;
  }

  /** True when HD_SQL_MAX_ROWS cut the answer (more rows than it, after LIMIT, arrived). */
  get cut(): boolean {
    return this.maxRows > 0 && Math.min(this.pass.limit ?? Infinity, this.arrived) > this.maxRows;
  }
}
