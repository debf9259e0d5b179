/**
 * A Storage Node's reading of a `query` frame (docs/query.md, "HDQuery JSON"): the HDQuery JSON is
 * checked by `parseHdQuery`, the one check every reader runs, and its query id and token must be
 * the frame's own. Filter values are checked against the dataset schema later, when the scan
 * compiles them.
 */
import { BatchID } from '../engine-rs/batchId';
import type { QueryFrame } from '../engine-rs/hdwpFrame';
import type { QuerySpec } from './queryElement';
import { filterJson } from '../query/filter';
import { parseHdQuery, QueryError } from '../query/hdQuery';
import { sameToken } from '../query/token';

/** What the node runs for a query frame; throws {@link QueryError} naming the key at fault. */
export function querySpecOf(frame: QueryFrame): QuerySpec {
  const q = parseHdQuery(frame.json);
  if (q.queryId !== frame.queryId) throw new QueryError('query_id', `${q.queryId} differs from the query frame's query id ${frame.queryId}`);
  if (!sameToken(q.token, frame.token)) throw new QueryError('token', "differs from the query frame's token");
  return {
    queryId: q.queryId,
    dataset: q.dataset,
    batchIds: q.batchIds.map((h) => BatchID.fromHex(h)),
    subQueriesJson: JSON.stringify(q.subQueries.map((s) => ({ filters: s.filters.map(filterJson) }))),
    branches: q.subQueries.length,
    verifyHash: q.verifyHash,
    qos: q.queryQos,
    returnAddress: q.returnAddress,
    ...(q.limit === undefined ? {} : { limit: q.limit }),
    ...(q.fieldMask === undefined ? {} : { fieldMask: Buffer.from(q.fieldMask) }),
    ...(q.aggregate === undefined ? {} : { aggregateJson: JSON.stringify(q.aggregate) }),
    ...(q.mergeBatches === true ? { mergeBatches: true } : {}),
    ...(q.top === undefined ? {} : { top: q.top }),
    ...(q.traceContext === undefined ? {} : { traceContext: q.traceContext }),
    ...(q.resultFormat === 'columns' ? { columnar: q.columns === undefined ? {} : { fields: q.columns } } : {}),
  };
}
