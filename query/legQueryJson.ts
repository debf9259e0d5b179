/**
 * One checked query's JSON for each of its Storage Node legs (docs/query.md, "What the SCC does",
 * step 4). A leg carries the query with `batch_ids` narrowed to the node's batches and, when the SCC
 * traces, the leg's own `trace_context`; every other key is the same on every leg. So the query is
 * written once, around an empty batch list, and each leg's JSON is that text with its batch list
 * (and trace context) put in — the same text {@link serializeHdQuery} writes for the narrowed query,
 * without converting, checking and writing the whole query again for every leg.
 */
import { hdQueryJsonObject, MAX_QUERY_JSON_BYTES, QueryError, type HdQuery } from './hdQuery';
import type { TraceContext } from '../lib/tracing/traceContext';

/** The leg JSON of one query; see the module doc. */
export class LegQueryJson {
  /** `{"query_id":…,"dataset":…,"batch_ids":` */
  private readonly head: string;
  /** The keys after `batch_ids` (no `trace_context`), without the closing brace. */
  private readonly tail: string;

  /**
   * @param query a checked query (parseHdQuery's): its other keys are written as they are, not
   * checked again; its own `batch_ids` and `trace_context` are left out.
   */
  constructor(query: HdQuery) {
    const obj = hdQueryJsonObject({ ...query, batchIds: [], traceContext: undefined });
    const whole = JSON.stringify(obj);
    // hdQueryJsonObject writes query_id, dataset, batch_ids first: the batch list is the `[]` after them.
    this.head = `${JSON.stringify({ query_id: obj.query_id, dataset: obj.dataset }).slice(0, -1)},"batch_ids":`;
    if (!whole.startsWith(`${this.head}[]`) || !whole.endsWith('}')) throw new Error('hdQueryJsonObject no longer writes query_id, dataset and batch_ids first');
    this.tail = whole.slice(this.head.length + 2, -1);
  }

  /**
   * The query's JSON with `batchIds` (128 lower-case hex digits each, as the checked query holds
   * them) and `traceContext` (absent: none). Throws {@link QueryError} when it is larger than
   * `maxBytes` (default {@link MAX_QUERY_JSON_BYTES}, what a Storage Node takes), as serializeHdQuery does.
   */
  json(batchIds: readonly string[], traceContext?: TraceContext, maxBytes = MAX_QUERY_JSON_BYTES): string {
    const tc = traceContext === undefined ? '' : `,"trace_context":${JSON.stringify(traceContext.tracestate === undefined ? { traceparent: traceContext.traceparent } : { traceparent: traceContext.traceparent, tracestate: traceContext.tracestate })}`;
    const json = `${this.head}${JSON.stringify(batchIds)}${this.tail}${tc}}`;
    // Every byte of the ids is ASCII, so the string length is a lower bound of the UTF-8 size: count only when it may matter.
    if (json.length * 3 > maxBytes) {
      const size = Buffer.byteLength(json);
      if (size > maxBytes) throw new QueryError('', `the query JSON is ${size} bytes, the limit is ${maxBytes}`);
    }
    return json;
  }
}
