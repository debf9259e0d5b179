/**
 * The Proxy's query route, `POST /v1/query` (docs/proxy.md): an HDQuery whose batches may be given
 * as a time window, with the identity of the asker; the active policy is evaluated, the query
 * rewritten, the window's batches named, the filter verdict computed, the query dispatched to the
 * SCCs, and the result event answered.
 */
import { generateBatchIdsTime } from '../../engine-rs/batchId';
import { checkTimeRange, enumeratedCount } from '../../query/timeRange';
import type { Schema } from '../../engine-rs/schema';
import { PolicyError } from '../../engine-rs/policy';
import { hdQueryFromJson, MAX_BATCH_IDS, QueryError, serializeHdQuery, type HdQuery } from '../../query/hdQuery';
import { asObject } from '../http/body';
import { HttpError } from '../http/errors';
import type { SccAddress } from '../api';
import type { SccDispatcher, DispatchOutcome } from './dispatch';
import type { Identity } from './identity';
import type { PolicySlot } from './policySlot';
import { rewriteQuery, type RewriteSummary } from './rewrite';
import { computeVerdict, type BatchFilterSource } from './verdict';
import type { BatchWindowSource } from '../../net/storageNodeBatches';
import { inSpan, SpanKind, type Span } from '../../lib/tracing/index';
import { proxyQueryParent, withActiveTraceContext, type RequestHeaders } from './querySpans';

/** What the route works with. */
export interface QueryRouteDeps {
  readonly slot: PolicySlot;
  /** Dataset schemas by id (the DMS's, refreshed). */
  datasets(): ReadonlyMap<string, Schema>;
  /** The primary cluster's SCCs. */
  targets(): readonly SccAddress[];
  readonly dispatcher: SccDispatcher;
  readonly batchFilters: BatchFilterSource;
  /**
   * Resolves a window to the batches the Storage Nodes hold (net/storageNodeBatches.ts). Absent, or
   * when no node answers: the window's intervals are enumerated, as long as they fit MAX_BATCH_IDS.
   */
  readonly batchWindows?: BatchWindowSource;
}

/** How a window's batches were named (the result event's `window`, ours). */
export interface WindowResolution {
  readonly start: number;
  readonly end: number;
  /** `batch_index`: the batches the Storage Nodes hold; `enumeration`: every interval (no node answered). */
  readonly resolved_by: 'batch_index' | 'enumeration';
  readonly nodes_asked: number;
  readonly nodes_answered: number;
}

/** The query result event (the reference names would_exclude_batches and bloomrf_mode). */
export interface QueryResultEvent {
  readonly query_id: number;
  readonly dataset: string;
  /** The batches the query reads, 128 hex digits each. */
  readonly batch_ids: string[];
  readonly would_exclude_batches: string[];
  readonly bloomrf_mode: 'minmax' | 'partial' | 'off';
  readonly policy_version: number;
  readonly identity: { readonly role: string; readonly email: string };
  readonly rewrite: RewriteSummary & { readonly field_mask: string | null };
  readonly dispatch: DispatchOutcome;
  /** Present when the query gave a window instead of batch_ids. */
  readonly window?: WindowResolution;
}

/** Keys the route takes besides the HDQuery's. */
const WINDOW_KEYS = ['start', 'end'] as const;

function seconds(o: Record<string, unknown>, key: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new HttpError('invalid_query', `'${key}' must be Unix seconds (an integer), got ${JSON.stringify(v)}`);
  return v;
}

/** Finds the dataset by id or name. */
function datasetOf(deps: QueryRouteDeps, name: unknown): Schema {
  if (typeof name !== 'string' || name === '') throw new HttpError('invalid_query', "'dataset' is required: a dataset id");
  const all = deps.datasets();
  const s = all.get(name) ?? [...all.values()].find((d) => d.name === name);
  if (!s) throw new HttpError('unknown_dataset', `dataset '${name}' is not known to the Proxy (the DMS distributes none by that name)`);
  return s;
}

/**
 * Names the batches of [start, end] at the dataset's interval: those the Storage Nodes hold there
 * (docs/proxy.md, "Naming the batches of a window"); every interval only when no node answered.
 */
async function nameBatches(deps: QueryRouteDeps, schema: Schema, body: Record<string, unknown>): Promise<{ ids: string[]; window: WindowResolution }> {
  const [start, end] = [seconds(body, 'start'), seconds(body, 'end')];
  if (end < start) throw new HttpError('invalid_query', `'end' (${end}) is before 'start' (${start})`);
  let r;
  try {
    r = checkTimeRange(start, end, schema.timeIndexInterval);
  } catch (err) {
    if (err instanceof QueryError) throw new HttpError('invalid_query', `'${err.path}' ${err.message.slice(err.path.length + 2)}`);
    throw err;
  }
  const iv = schema.timeIndexInterval;
  const found = deps.batchWindows ? await deps.batchWindows.batchesInWindow(schema.id, r, iv, MAX_BATCH_IDS) : undefined;
  if (found && found.nodesAnswered > 0) {
    if (found.truncated) throw new HttpError('invalid_query', `the window [${r.start}, ${r.end}] holds more than ${MAX_BATCH_IDS} batches of ${iv} s on the Storage Nodes; the limit is ${MAX_BATCH_IDS}: narrow the window`);
    return { ids: found.batchIds, window: { start: r.start, end: r.end, resolved_by: 'batch_index', nodes_asked: found.nodesAsked, nodes_answered: found.nodesAnswered } };
  }
  const count = enumeratedCount(r, iv);
  if (count > MAX_BATCH_IDS) {
    const head = `the window [${r.start}, ${r.end}] spans about ${count} batches of ${iv} s, too many to name one by one (the limit is ${MAX_BATCH_IDS})`;
    // Nodes that did not answer may answer the next try; a topology without nodes will not.
    if (found && found.nodesAsked > 0) throw new HttpError('not_ready', `${head}, and none of the ${found.nodesAsked} Storage Nodes answered which batches they hold (GET /v1/batch-ranges); try again, or narrow the window`);
    throw new HttpError('invalid_query', `${head}, and the Proxy knows no Storage Node to ask which batches exist (none in the topology with an observability address); narrow the window`);
  }
  return { ids: generateBatchIdsTime(r.start, r.end, iv).map((b) => b.toHex()), window: { start: r.start, end: r.end, resolved_by: 'enumeration', nodes_asked: found?.nodesAsked ?? 0, nodes_answered: 0 } };
}

/**
 * Handles one query (see the module doc) inside its `proxy.query` span, whose parent the request's
 * `traceparent` header names (else the query's `trace_context`; docs/observability.md, "Traces").
 */
export function handleQuery(raw: unknown, who: Identity, deps: QueryRouteDeps, headers: RequestHeaders = {}): Promise<QueryResultEvent> {
  return inSpan('proxy.query', (span) => answerQuery(raw, who, deps, span), { parent: proxyQueryParent(headers, raw), kind: SpanKind.SERVER });
}

async function answerQuery(raw: unknown, who: Identity, deps: QueryRouteDeps, span: Span): Promise<QueryResultEvent> {
  const body = asObject(raw);
  const active = deps.slot.current();
  if (!active) throw new HttpError('not_ready', 'no policy is installed yet; the DMS pushes one with POST /v1/proxy/config');
  const schema = datasetOf(deps, body.dataset);
  const hasWindow = body.start !== undefined || body.end !== undefined;
  if (hasWindow && body.batch_ids !== undefined) throw new HttpError('invalid_query', "give either 'batch_ids' or a window ('start', 'end'), not both");
  const rest: Record<string, unknown> = { ...body, dataset: schema.id };
  for (const k of WINDOW_KEYS) delete rest[k];
  let window: WindowResolution | undefined;
  if (hasWindow) {
    const named = await nameBatches(deps, schema, body);
    rest.batch_ids = named.ids;
    window = named.window;
  }
  let q: HdQuery;
  try {
    q = hdQueryFromJson(rest);
  } catch (err) {
    if (err instanceof QueryError) throw new HttpError('invalid_query', err.message);
    throw err;
  }
  if (q.batchIds.length === 0 && !window) throw new HttpError('invalid_query', "the query names no batch: give 'batch_ids' or a window ('start', 'end')");

  span.setAttributes({ 'hd.query_id': q.queryId, 'hd.dataset': schema.id, 'hd.batches': q.batchIds.length });
  const decision = await inSpan('proxy.policy', async (s) => {
    try {
      const d = active.policy.evaluate({
        role: who.role,
        email: who.email,
        dataset: schema.id,
        fields: schema.fields.map((f) => f.name),
        query: { sub_queries: q.subQueries, batches: q.batchIds.length, verify_hash: q.verifyHash },
      });
      s.setAttributes({ 'hd.decision': d.allow ? 'allow' : 'deny', 'hd.hidden_fields': d.hiddenFields.length, 'hd.constraints': d.constraints.length });
      return d;
    } catch (err) {
      // Fail closed: a policy that cannot decide lets nothing through.
      if (err instanceof PolicyError) throw new HttpError('policy_error', `policy version ${active.version} failed for role '${who.role}': ${err.message}`);
      throw err;
    }
  }, { attributes: { 'hd.policy_version': active.version, 'hd.role': who.role } });
  const rw = await inSpan('proxy.rewrite', async (s) => {
    const r = rewriteQuery(schema, q.subQueries, decision);
    s.setAttributes({ 'hd.decision': r.summary.allow ? 'allow' : 'deny', 'hd.hidden_fields': r.summary.hidden_fields.length, 'hd.constraints': r.summary.constraints, 'hd.unmatchable_branches': r.summary.unmatchable_branches });
    return r;
  });
  const rewritten: HdQuery = { ...q, subQueries: rw.subQueries, targets: q.targets };
  let json: string;
  try {
    json = serializeHdQuery(rewritten, { maxBytes: 16 * 1024 * 1024 });
  } catch (err) {
    if (err instanceof QueryError) throw new HttpError('invalid_query', err.message);
    throw err;
  }
  if (rw.fieldMask !== undefined) json = JSON.stringify({ ...(JSON.parse(json) as object), field_mask: rw.fieldMask });
  // Neither the ranges asked for nor the verdict touch a hidden byte (verdict.ts).
  const verdict = computeVerdict(schema, rw.subQueries, q.batchIds, await deps.batchFilters.filters(schema.id, q.batchIds, rw.hiddenRanges), rw.hiddenRanges);
  // A window where no batch exists reads nothing: nothing to dispatch, the client completes at once.
  // The SCC's spans hang under the Proxy's dispatch span: the dispatch client puts it in the call's
  // metadata, and it replaces the query's trace_context.
  const dispatch: DispatchOutcome =
    q.batchIds.length === 0
      ? { scc: '', batches: 0, nodes: [], missing_batch_ids: [] }
      : await inSpan(
          'proxy.dispatch',
          async (s) => {
            const out = await deps.dispatcher.dispatch(deps.targets(), withActiveTraceContext(json));
            s.setAttributes({ 'hd.scc': out.scc, 'hd.nodes': out.nodes.length, 'hd.batches_missing': out.missing_batch_ids.length });
            return out;
          },
          { kind: SpanKind.CLIENT, attributes: { 'hd.batches': q.batchIds.length } },
        );
  return {
    query_id: q.queryId,
    dataset: schema.id,
    batch_ids: [...q.batchIds],
    ...verdict,
    policy_version: active.version,
    identity: { role: who.role, email: who.email },
    rewrite: { ...rw.summary, field_mask: rw.fieldMask ?? null },
    dispatch,
    ...(window && { window }),
  };
}
