/**
 * The Storage Node's batch index as ranges of time-form batch ids (docs/storage-node.md, "Batch
 * ranges"): which batches of a dataset this node holds in a time window, answered as runs of
 * consecutive intervals. The Proxy and the SCC resolve a query's window with it (docs/proxy.md, docs/scc.md), so a window of
 * a year, or `ts > 0`, costs what the batches that exist cost, not every interval it could hold.
 *
 * ```
 * GET /v1/batch-ranges?dataset=flows&start=1&end=1700000600&interval=60[&limit=100000]
 * {"dataset":"flows","start":1,"end":1700000600,"interval":60,"batches":3,
 *  "runs":[[1668464400,1],[1699999980,2]],"truncated":false}
 * ```
 *
 * A run `[s, n]` is the n time-form ids `[s + k·interval, s + (k+1)·interval)`, k = 0..n−1. Only ids
 * the enumeration of the window would name count (query/timeRange.ts): a batch of another
 * interval, or in string or number form, is never in a window. The dataset's starts at an interval
 * are taken from the index once (until it changes) and each window is a binary search into them;
 * nothing is read from disk.
 *
 * Batch ids and their windows say when data exists, not what it holds (no field value), like
 * `/v1/batches`: the route answers on the plain port and over TLS alike.
 */
import type { JsonResponse } from '../../lib/observability';
import { QueryError } from '../../query/queryError';
import { checkTimeRange, heldRunsOf, sortedStarts } from '../../query/timeRange';
import type { BatchIndex } from './batchIndex';

/** Batches one answer names by default and at most (a query reads at most 100 000, query/hdQuery.ts MAX_BATCH_IDS). */
export const MAX_RANGE_BATCHES = 100_000;

const PARAMS = new Set(['dataset', 'start', 'end', 'interval', 'limit']);

/** Answers `GET /v1/batch-ranges` from `index` (see the module doc); 400 names what to send. */
export function batchRangesRoute(index: BatchIndex, q: URLSearchParams): JsonResponse {
  const bad = (error: string): JsonResponse => ({ status: 400, body: { error } });
  for (const k of new Set(q.keys())) {
    if (!PARAMS.has(k)) return bad(`unknown parameter '${k}': send dataset, start, end, interval and optionally limit`);
    if (q.getAll(k).length > 1) return bad(`parameter '${k}' is given more than once`);
  }
  const dataset = q.get('dataset');
  if (dataset === null || dataset === '') return bad("'dataset' is required: the dataset id");
  const num = (k: string): number | undefined => {
    const v = q.get(k);
    return v === null || !/^-?\d{1,16}$/.test(v) ? undefined : Number(v);
  };
  let limit = MAX_RANGE_BATCHES;
  if (q.has('limit')) {
    const l = num('limit');
    if (l === undefined || l < 1 || l > MAX_RANGE_BATCHES) return bad(`'limit' must be 1 .. ${MAX_RANGE_BATCHES}`);
    limit = l;
  }
  let r;
  try {
    r = checkTimeRange(num('start') ?? q.get('start'), num('end') ?? q.get('end'), num('interval') ?? q.get('interval'));
  } catch (err) {
    if (err instanceof QueryError) return bad(`${err.message} (start and end are inclusive Unix seconds, interval the dataset's time_index_interval)`);
    throw err;
  }
  const held = heldRunsOf(startsOf(index, dataset, r.interval), r, r.interval, limit);
  return { status: 200, body: { dataset, start: r.start, end: r.end, interval: r.interval, batches: held.batches, runs: held.runs, truncated: held.truncated } };
}

function* ids(index: BatchIndex, dataset: string): Generator<Uint8Array> {
  for (const e of index.entries(dataset)) yield e.batchId.bytes;
}

/** Per index: per dataset and interval, the sorted starts and the index version they were taken at. */
const startsCache = new WeakMap<BatchIndex, Map<string, { version: number; starts: number[] }>>();
/** Dataset-interval pairs kept per index (a client naming many intervals cannot grow it without bound). */
const MAX_CACHED_STARTS = 64;

/**
 * The sorted window starts a dataset's time-form ids of `interval` have here, made once per index
 * change: every statement's window (the Proxy asks each node) is then a binary search, not a pass
 * over every held id.
 */
function startsOf(index: BatchIndex, dataset: string, interval: number): number[] {
  let m = startsCache.get(index);
  if (!m) startsCache.set(index, (m = new Map()));
  const key = `${interval}\0${dataset}`;
  const hit = m.get(key);
  if (hit && hit.version === index.version) return hit.starts;
  const starts = sortedStarts(ids(index, dataset), interval);
  if (!hit && m.size >= MAX_CACHED_STARTS) m.clear();
  m.set(key, { version: index.version, starts });
  return starts;
}
