/**
 * The Governance page's routes (docs/webux.md, "Governance"): validate a draft Rego policy
 * (regorus' errors with line and column), dry-run it against an identity, a dataset and a sample
 * query (the decision, and which bytes of a record the Proxy would set to 0x00 / keep as 0xff), the
 * published versions and roll-back. Publishing itself is `PUT /v1/policy` (policyRoutes.ts): it
 * compiles, stores the next version and pushes it to every Proxy at once.
 */
import type { FastifyInstance } from 'fastify';
import { CompiledPolicy, PolicyError } from '../../../engine-rs/policy';
import { Schema } from '../../../engine-rs/schema';
import { asObject, onlyKeys, optInt, optString, reqString } from '../../http/body';
import { HttpError } from '../../http/errors';
import type { Store } from '../../store/jsonFileStore';
import { ADMIN_ROLE, requireRole, type DmsContext } from '../context';
import { rememberPolicy, type WebuxState } from './webuxState';

/** Largest policy source accepted (as PUT /v1/policy). */
const MAX_REGO_CHARS = 512 * 1024;

/** One compiler message, located. */
export interface PolicyIssue {
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

/** Reads regorus' `--> policy.rego:LINE:COL ... error: MESSAGE` text into located issues. */
export function policyIssues(text: string): PolicyIssue[] {
  const loc = /-->\s*[^:\n]*:(\d+):(\d+)/.exec(text);
  const msg = /error:\s*(.+)/.exec(text);
  const message = (msg?.[1] ?? text).trim();
  return [{ line: loc ? Number(loc[1]) : 1, column: loc ? Number(loc[2]) : 1, message }];
}

function draftOf(body: Record<string, unknown>): { rego: string; data?: Record<string, unknown> } {
  const rego = reqString(body, 'rego', { max: MAX_REGO_CHARS });
  return { rego, ...(body.data !== undefined && { data: asObject(body.data, "'data'") }) };
}

/** Compiles a draft; the issues when it does not compile. */
function compile(rego: string, data?: Record<string, unknown>): { policy?: CompiledPolicy; issues?: PolicyIssue[] } {
  try {
    return { policy: CompiledPolicy.compile(rego, data) };
  } catch (err) {
    if (err instanceof PolicyError) return { issues: policyIssues(err.message) };
    throw err;
  }
}

/** Registers the routes on `app`. */
export function registerPolicyWorkbench(app: FastifyInstance, ctx: DmsContext, web: Store<WebuxState>): void {
  const admin = (req: Parameters<typeof requireRole>[0]): void => void requireRole(req, ctx, [ADMIN_ROLE]);
  // Every version published (PUT /v1/policy on either port) goes into the history.
  // Recorded before the answer goes out, so the next request already sees it in the history.
  app.addHook('preSerialization', async (req, reply, payload) => {
    if (req.method === 'PUT' && req.url.split('?')[0] === '/v1/policy' && reply.statusCode === 200) await rememberPolicy(web, ctx.store.get().policy);
    return payload;
  });

  app.post('/v1/policy/validate', async (req) => {
    admin(req);
    const body = asObject(req.body);
    onlyKeys(body, ['rego', 'data']);
    const d = draftOf(body);
    const c = compile(d.rego, d.data);
    return c.issues ? { valid: false, issues: c.issues } : { valid: true };
  });

  app.post('/v1/policy/dry-run', async (req) => {
    admin(req);
    const body = asObject(req.body);
    onlyKeys(body, ['rego', 'data', 'dataset', 'identity', 'query']);
    const d = draftOf(body);
    const datasetId = reqString(body, 'dataset', { max: 64 });
    const who = asObject(body.identity ?? {}, "'identity'");
    onlyKeys(who, ['role', 'email'], "'identity'");
    const role = optString(who, 'role', { max: 128 }) ?? '';
    const email = optString(who, 'email', { max: 256 }) ?? '';
    const query = asObject(body.query ?? {}, "'query'");
    const subQueries = query.sub_queries ?? [];
    if (!Array.isArray(subQueries)) throw new HttpError('invalid_request', "'query.sub_queries' must be an array of {filters: [...]} (docs/query.md)");
    const rec = Object.values(ctx.store.get().datasets).find((x) => x.id === datasetId);
    if (!rec) throw new HttpError('unknown_dataset', `no dataset '${datasetId}'; add it on the Datasets page (PUT /v1/datasets/${datasetId})`);
    const schema = Schema.parse(rec.schema);
    const c = compile(d.rego, d.data);
    if (!c.policy) return { valid: false, issues: c.issues };
    let decision;
    try {
      decision = c.policy.evaluate({ role, email, dataset: schema.id, fields: schema.fields.map((f) => f.name), query: { sub_queries: subQueries, batches: 1, verify_hash: false } });
    } catch (err) {
      if (err instanceof PolicyError) return { valid: true, evaluated: false, error: `the policy fails for role '${role}' (the Proxy would refuse the query, fail closed): ${err.message}` };
      throw err;
    }
    // Hidden: every field the policy names; without `allow`, every field (as control/proxy/rewrite.ts).
    const names = new Set(schema.fields.map((f) => f.name));
    const hidden = decision.allow ? [...new Set(decision.hiddenFields)].filter((f) => names.has(f)) : [...names];
    const mask = Buffer.alloc(schema.recordSize, 0xff);
    for (const n of hidden) {
      const f = schema.field(n);
      if (f) mask.fill(0, f.offset, f.offset + f.size);
    }
    const fields = schema.fields.map((f) => ({ name: f.name, offset: f.offset, size: f.size, hidden: mask.subarray(f.offset, f.offset + f.size).includes(0) }));
    const probes = (subQueries as { filters?: { field?: string }[] }[]).filter((sq) => (sq.filters ?? []).some((x) => fields.find((f) => f.name === x.field)?.hidden)).length;
    return {
      valid: true,
      evaluated: true,
      allow: decision.allow,
      hidden_fields: fields.filter((f) => f.hidden).map((f) => f.name),
      constraints: decision.constraints,
      field_mask: mask.toString('hex'),
      fields,
      unmatchable_branches: decision.allow ? probes : Math.max(1, subQueries.length),
    };
  });

  app.get('/v1/policy/history', async (req) => {
    admin(req);
    await rememberPolicy(web, ctx.store.get().policy);
    const current = ctx.store.get().policy?.version ?? 0;
    return { current, versions: [...web.get().policy_history].reverse() };
  });

  app.post('/v1/policy/rollback', async (req) => {
    admin(req);
    const body = asObject(req.body);
    onlyKeys(body, ['version']);
    const version = optInt(body, 'version', 1, Number.MAX_SAFE_INTEGER);
    if (version === undefined) throw new HttpError('invalid_request', "'version' is required: the version to bring back (GET /v1/policy/history)");
    await rememberPolicy(web, ctx.store.get().policy);
    const old = web.get().policy_history.find((p) => p.version === version);
    if (!old) throw new HttpError('not_found', `policy version ${version} is not in the history the DMS keeps; GET /v1/policy/history lists them`);
    // A roll-back publishes the old text as the next version, so every Proxy takes it (versions only grow).
    const next = await ctx.store.update((s) => {
      const v = (s.policy?.version ?? 0) + 1;
      s.policy = { version: v, rego: old.rego, ...(old.data && { data: old.data }), updated_at: new Date().toISOString() };
      return s.policy;
    });
    await rememberPolicy(web, next);
    ctx.log(`policy version ${version} brought back as version ${next.version}; pushing to the Proxies`);
    const proxies = await ctx.pushPolicy();
    return { version: next.version, rolled_back_to: version, proxies };
  });
}
