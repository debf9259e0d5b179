/**
 * The policy routes of DMS-Core: an administrator puts a Rego policy (compiled here first, so a
 * policy that does not compile never reaches a Proxy), which is stored with the next version and
 * pushed to every Proxy; Proxies and administrators read it back.
 */
import type { FastifyInstance } from 'fastify';
import { CompiledPolicy, PolicyError } from '../../engine-rs/policy';
import { asObject, onlyKeys, reqString } from '../http/body';
import { HttpError } from '../http/errors';
import { ADMIN_ROLE, requireRole, type DmsContext } from './context';

/** Largest policy source accepted (as the Proxy's limit). */
const MAX_REGO_CHARS = 512 * 1024;

/** Registers `PUT /v1/policy` and `GET /v1/policy`. */
export function registerPolicyRoutes(app: FastifyInstance, ctx: DmsContext): void {
  app.put('/v1/policy', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE]);
    const body = asObject(req.body);
    onlyKeys(body, ['rego', 'data']);
    const rego = reqString(body, 'rego', { max: MAX_REGO_CHARS });
    const data = body.data === undefined ? undefined : asObject(body.data, "'data'");
    try {
      CompiledPolicy.compile(rego, data);
    } catch (err) {
      if (err instanceof PolicyError) throw new HttpError('invalid_policy', `the policy does not compile: ${err.message}`);
      throw err;
    }
    const version = await ctx.store.update((s) => {
      const v = (s.policy?.version ?? 0) + 1;
      s.policy = { version: v, rego, ...(data && { data }), updated_at: new Date().toISOString() };
      return v;
    });
    ctx.log(`policy version ${version} stored; pushing to the Proxies`, 'info');
    const proxies = await ctx.pushPolicy();
    return { version, proxies };
  });

  app.get('/v1/policy', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE, 'proxy']);
    const p = ctx.store.get().policy;
    if (!p) throw new HttpError('not_found', 'no policy has been put yet (PUT /v1/policy)');
    return p;
  });
}
