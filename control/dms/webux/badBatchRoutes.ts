/**
 * Bad batch notices on the DMS (docs/webux.md, "Bad batch notices"): an SCC reports the bbns its
 * queries met, per Storage Node, to `POST /v1/bad-batch-notices` over mutual TLS with its node
 * certificate (OU scc; an administrator may post too); the WebUX's quarantine control lists them per
 * node (`GET /v1/bad-batch-notices`, administrators) so the administrator sees why to quarantine.
 * The SCC aggregates and sends at most one report a second (nodes/scc/badBatchReporter.ts); here a
 * report carries at most {@link MAX_NOTICES_PER_REPORT} notices, a batch reported again with the
 * same code only counts up, and each node keeps its {@link MAX_NOTICES_PER_NODE} latest.
 */
import type { FastifyInstance } from 'fastify';
import { asObject, NAME_DOC, NAME_PATTERN, onlyKeys, optInt, reqString } from '../../http/body';
import { HttpError } from '../../http/errors';
import type { Store } from '../../store/jsonFileStore';
import { ADMIN_ROLE, requireRole, type DmsContext } from '../context';
import type { BadBatchRecord, WebuxState } from './webuxState';

/** The certificate role (OU) of the nodes that report notices. */
export const REPORTER_ROLE = 'scc';
/** Notices one report may carry. */
export const MAX_NOTICES_PER_REPORT = 200;
/** Notices kept per Storage Node (the latest). */
export const MAX_NOTICES_PER_NODE = 50;

/** One notice of a report, checked. */
export interface ReportedNotice {
  readonly node: string;
  readonly batch_id: string;
  readonly dataset: string;
  readonly code: number;
  readonly reason: string;
  readonly count: number;
  readonly at: string;
}

/** Checks a report's body; throws `invalid_request` naming the notice and key at fault. */
export function parseReport(body: unknown): ReportedNotice[] {
  const o = asObject(body);
  onlyKeys(o, ['notices']);
  const list = o.notices;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_NOTICES_PER_REPORT) throw new HttpError('invalid_request', `'notices' must be an array of 1..${MAX_NOTICES_PER_REPORT} bad batch notices`);
  return list.map((raw, i) => {
    const what = `notices[${i}]`;
    const n = asObject(raw, what);
    onlyKeys(n, ['node', 'batch_id', 'dataset', 'code', 'reason', 'count', 'at'], what);
    const at = reqString(n, 'at', { max: 40 });
    if (Number.isNaN(Date.parse(at))) throw new HttpError('invalid_request', `${what}.at must be an ISO 8601 time, got ${JSON.stringify(at)}`);
    const code = optInt(n, 'code', 0, 65_535);
    if (code === undefined) throw new HttpError('invalid_request', `${what}.code is required: the bbn's code, an integer 0..65535`);
    return {
      node: reqString(n, 'node', { pattern: NAME_PATTERN, patternDoc: NAME_DOC }),
      batch_id: reqString(n, 'batch_id', { pattern: /^[0-9a-f]{128}$/, patternDoc: '128 lowercase hex digits (a batch id)' }),
      dataset: reqString(n, 'dataset', { max: 200 }),
      code,
      reason: reqString(n, 'reason', { max: 500 }),
      count: optInt(n, 'count', 1, 1_000_000_000) ?? 1,
      at: new Date(at).toISOString(),
    };
  });
}

/** Adds `notices` to the node lists of `state` (a batch reported again with the same code counts up). */
export function recordNotices(state: WebuxState, notices: readonly ReportedNotice[], by: string): void {
  const all = (state.bad_batch_notices ??= {});
  for (const n of notices) {
    const list = (all[n.node] ??= []);
    const same = list.find((r) => r.batch_id === n.batch_id && r.code === n.code);
    if (same) {
      same.count += n.count;
      if (n.at > same.last_at) same.last_at = n.at;
      same.reported_by = by;
      continue;
    }
    const rec: BadBatchRecord = { batch_id: n.batch_id, dataset: n.dataset, code: n.code, reason: n.reason, count: n.count, first_at: n.at, last_at: n.at, reported_by: by };
    list.push(rec);
  }
  for (const name of new Set(notices.map((n) => n.node))) {
    const list = all[name] ?? [];
    list.sort((a, b) => a.last_at.localeCompare(b.last_at));
    if (list.length > MAX_NOTICES_PER_NODE) list.splice(0, list.length - MAX_NOTICES_PER_NODE);
  }
}

/** The notice lines a quarantine records by default: the node's latest notices, as text. */
export function noticeLines(state: WebuxState, node: string, max = 100): string[] {
  return (state.bad_batch_notices?.[node] ?? []).slice(-max).map((r) => `${r.last_at} ${r.dataset} batch ${r.batch_id.slice(0, 16)}… code ${r.code}: ${r.reason}${r.count > 1 ? ` (×${r.count})` : ''}`.slice(0, 500));
}

/** Registers the routes on `app` (the control plane's or the WebUX's). */
export function registerBadBatchRoutes(app: FastifyInstance, ctx: DmsContext, web: Store<WebuxState>): void {
  app.post('/v1/bad-batch-notices', async (req) => {
    const peer = requireRole(req, ctx, [REPORTER_ROLE, ADMIN_ROLE]);
    const notices = parseReport(req.body);
    const nodes = ctx.store.get().nodes;
    // Notices about nodes the DMS does not know as Storage Nodes (an SCC pinned by SN_TARGETS) are counted, not kept.
    const known = notices.filter((n) => nodes[n.node]?.role === 'storageNode');
    const ignored = [...new Set(notices.filter((n) => !known.includes(n)).map((n) => n.node))].sort();
    if (known.length > 0) await web.update((w) => recordNotices(w, known, peer.name));
    return { accepted: known.length, ...(ignored.length > 0 && { ignored_nodes: ignored }) };
  });

  app.get('/v1/bad-batch-notices', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE]);
    return { nodes: web.get().bad_batch_notices ?? {} };
  });
}
