/**
 * A {@link RunningQuery} for tests of the query stages taken one at a time (scan, resultStream):
 * what the listener would make of a query frame, with the replies to the SCC recorded.
 */
import { BatchID } from '../../engine-rs/batchId';
import type { BbnFrame, EobFrame, EobsFrame, ErrorFrame, QueryAuth } from '../../engine-rs/hdwpFrame';
import type { QuerySpec, RunningQuery } from '../../stream/queryElement';
import { QueryLifecycle } from '../../operators/queryLifecycle';
import { newQueryToken } from '../../query/token';

/** A running query whose replies land in `replies`. */
export class TestQuery extends QueryLifecycle implements RunningQuery {
  readonly auth: QueryAuth;
  readonly helloRecordSize: number;
  readonly from = 'test';
  readonly replies: (EobFrame | EobsFrame | BbnFrame | ErrorFrame)[] = [];

  /** @param spec what to run; `helloRecordSize` the SCC hello's record size */
  constructor(
    readonly spec: QuerySpec,
    helloRecordSize = 8,
  ) {
    super();
    this.auth = { queryId: spec.queryId, token: newQueryToken() };
    this.helloRecordSize = helloRecordSize;
  }

  reply(frame: EobFrame | EobsFrame | BbnFrame | ErrorFrame): void {
    if (!this.ended) this.replies.push(frame);
  }
}

/** A query spec over `batches` (numbers become number-form batch ids) with `extra` fields. */
export function specOf(queryId: number, batches: readonly BatchID[], extra: Partial<QuerySpec> = {}): QuerySpec {
  return {
    queryId,
    dataset: 'ds',
    batchIds: batches,
    subQueriesJson: '[]',
    branches: 0,
    verifyHash: false,
    qos: 1,
    returnAddress: { host: '127.0.0.1', port: 1 },
    ...extra,
  };
}

/** A batch id from a small number. */
export function idOf(n: number): BatchID {
  const b = new Uint8Array(64);
  new DataView(b.buffer).setBigUint64(56, BigInt(n));
  return new BatchID(b);
}
