/**
 * The Proxy's query route, `POST /v1/query` (docs/proxy.md): an HDQuery whose batches may be given
 * as a time window, with the identity of the asker; the active policy is evaluated, the query
 * rewritten, the window's batches named, the filter verdict computed, the query dispatched to the
 * SCCs, and the result event answered.
 */
import { generateBatchIdsTime } from '../../engine-rs/batchId';
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

/** What the route works with. */
export interface QueryRouteDeps {
  readonly slot: PolicySlot;
  /** Dataset schemas by id (the DMS's, refreshed). */
  datasets(): ReadonlyMap<string, Schema>;
  /** The primary cluster's SCCs. */
  targets(): readonly SccAddress[];
  readonly dispatcher: SccDispatcher;
  readonly batchFilters: BatchFilterSource;
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

/** Names the batches of [start, end] at the dataset's interval. */
function nameBatches(schema: Schema, start: number, end: number): string[] {
  if (end < start) throw new HttpError('invalid_query', `'end' (${end}) is before 'start' (${start})`);
  const count = Math.floor(end / schema.timeIndexInterval) - Math.floor(start / schema.timeIndexInterval) + 2;
  if (count > MAX_BATCH_IDS) throw new HttpError('invalid_query', `the window [${start}, ${end}] spans about ${count} batches of ${schema.timeIndexInterval} s; the limit is ${MAX_BATCH_IDS}`);
  return generateBatchIdsTime(start, end, schema.timeIndexInterval).map((b) => b.toHex());
}

/** Handles one query (see the module doc). */
export async function handleQuery(raw: unknown, who: Identity, deps: QueryRouteDeps): Promise<QueryResultEvent> {
  const body = asObject(raw);
  const active = deps.slot.current();
  if (!active) throw new HttpError('not_ready', 'no policy is installed yet; the DMS pushes one with POST /v1/proxy/config');
  const schema = datasetOf(deps, body.dataset);
  const hasWindow = body.start !== undefined || body.end !== undefined;
  if (hasWindow && body.batch_ids !== undefined) throw new HttpError('invalid_query', "give either 'batch_ids' or a window ('start', 'end'), not both");
  const rest: Record<string, unknown> = { ...body, dataset: schema.id };
  for (const k of WINDOW_KEYS) delete rest[k];
  if (hasWindow) rest.batch_ids = nameBatches(schema, seconds(body, 'start'), seconds(body, 'end'));
  let q: HdQuery;
  try {
    q = hdQueryFromJson(rest);
  } catch (err) {
    if (err instanceof QueryError) throw new HttpError('invalid_query', err.message);
    throw err;
  }
  if (q.batchIds.length === 0) throw new HttpError('invalid_query', "the query names no batch: give 'batch_ids' or a window ('start', 'end')");

  let decision;
  try {
    decision = active.policy.evaluate({
      role: who.role,
      email: who.email,
      dataset: schema.id,
      fields: schema.fields.map((f) => f.name),
      query: { sub_queries: q.subQueries, batches: q.batchIds.length, verify_hash: q.verifyHash },
    });
  } catch (err) {
    // Fail closed: a policy that cannot decide lets nothing through.
    if (err instanceof PolicyError) throw new HttpError('policy_error', `policy version ${active.version} failed for role '${who.role}': ${err.message}`);
    throw err;
  }
  const rw = rewriteQuery(schema, q.subQueries, decision);
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
  const dispatch = await deps.dispatcher.dispatch(deps.targets(), json);
  return {
    query_id: q.queryId,
    dataset: schema.id,
    batch_ids: [...q.batchIds],
    ...verdict,
    policy_version: active.version,
    identity: { role: who.role, email: who.email },
    rewrite: { ...rw.summary, field_mask: rw.fieldMask ?? null },
    dispatch,
  };
}
