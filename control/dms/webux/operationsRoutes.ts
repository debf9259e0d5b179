/**
 * Administrator routes behind the WebUX pages (docs/webux.md, "Admin API"), served on the control
 * plane (client certificate, OU admin) and on the WebUX port (a signed-in session): the node table
 * with health and certificate expiry, every certificate issued, bootstrap tokens (list, revoke),
 * datasets with their clusters and schema validation by path, and quarantine / release of a node.
 * `GET /v1/quarantine` is for any node with a certificate; the SCC learns of a quarantine from its
 * configuration (`quarantined` in `GET /v1/nodes/{name}/config`, docs/scc.md "Quarantine").
 */
import type { FastifyInstance } from 'fastify';
import { Schema, SchemaError } from '../../../engine-rs/schema';
import { asObject, NAME_DOC, NAME_PATTERN, onlyKeys, reqString } from '../../http/body';
import { HttpError } from '../../http/errors';
import type { Store } from '../../store/jsonFileStore';
import { ADMIN_ROLE, requirePeer, requireRole, type DmsContext } from '../context';
import { noticeLines } from './badBatchRoutes';
import type { WebuxState } from './webuxState';

function nameParam(params: unknown, key: string): string {
  const v = (params as Record<string, string>)[key] ?? '';
  if (!NAME_PATTERN.test(v)) throw new HttpError('invalid_request', `the ${key} in the path must be ${NAME_DOC}, got ${JSON.stringify(v)}`);
  return v;
}

/** The id a bootstrap token is listed and revoked by: the first 16 hex digits of its SHA-256. */
const tokenId = (hash: string): string => hash.slice(0, 16);

/** Registers the routes on `app` (the control plane's or the WebUX's). */
export function registerOperationsRoutes(app: FastifyInstance, ctx: DmsContext, web: Store<WebuxState>): void {
  const admin = (req: Parameters<typeof requireRole>[0]): string => requireRole(req, ctx, [ADMIN_ROLE]).name;

  app.get('/v1/nodes', async (req) => {
    admin(req);
    const s = ctx.store.get();
    const q = web.get().quarantine;
    const nodes = Object.values(s.nodes)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((n) => {
        const cert = n.cert_serial ? s.certificates[n.cert_serial] : undefined;
        return {
          name: n.name,
          role: n.role,
          ...(n.cluster && { cluster: n.cluster }),
          state: n.state,
          addresses: n.addresses,
          ...(n.health && { health: n.health }),
          ...(n.last_seen && { last_seen: n.last_seen }),
          ...(n.cert_serial && { cert_serial: n.cert_serial }),
          ...(cert && { cert_not_after: cert.not_after, ...(cert.revoked_at && { cert_revoked_at: cert.revoked_at }) }),
          ...(n.policy_version !== undefined && { policy_version: n.policy_version }),
          ...(q[n.name] && n.state === 'quarantined' && { quarantine: q[n.name] }),
        };
      });
    return { nodes };
  });

  app.get('/v1/certificates', async (req) => {
    admin(req);
    const certificates = Object.entries(ctx.store.get().certificates)
      .map(([serial, c]) => ({ serial, node_name: c.node_name, role: c.role, ...(c.issued_at && { issued_at: c.issued_at }), not_after: c.not_after, ...(c.revoked_at && { revoked_at: c.revoked_at, reason: c.reason }) }))
      .sort((a, b) => a.node_name.localeCompare(b.node_name) || a.not_after.localeCompare(b.not_after));
    return { certificates, crl_number: ctx.store.get().crl_number };
  });

  app.get('/v1/bootstrap-tokens', async (req) => {
    admin(req);
    const now = Date.now();
    const tokens = Object.entries(ctx.store.get().tokens)
      .map(([hash, t]) => ({ id: tokenId(hash), node_name: t.node_name, role: t.role ?? 'client', expires_at: t.expires_at, ...(t.used_at && { used_at: t.used_at }), status: t.used_at ? 'used' : Date.parse(t.expires_at) <= now ? 'expired' : 'valid' }))
      .sort((a, b) => a.expires_at.localeCompare(b.expires_at));
    return { tokens };
  });

  app.delete('/v1/bootstrap-tokens/:id', async (req) => {
    admin(req);
    const id = (req.params as { id: string }).id;
    if (!/^[0-9a-f]{16}$/.test(id)) throw new HttpError('invalid_request', `the token id in the path must be 16 lowercase hex digits (the id GET /v1/bootstrap-tokens lists), got ${JSON.stringify(id)}`);
    const removed = await ctx.store.update((s) => {
      const hash = Object.keys(s.tokens).find((h) => tokenId(h) === id);
      if (hash) delete s.tokens[hash];
      return hash !== undefined;
    });
    if (!removed) throw new HttpError('not_found', `no bootstrap token ${id}; GET /v1/bootstrap-tokens lists them`);
    return { revoked: id };
  });

  app.get('/v1/admin/datasets', async (req) => {
    admin(req);
    return { datasets: Object.values(ctx.store.get().datasets).sort((a, b) => a.id.localeCompare(b.id)) };
  });

  app.post('/v1/datasets/validate', async (req) => {
    admin(req);
    const body = asObject(req.body);
    onlyKeys(body, ['schema']);
    try {
      const s = Schema.parse(asObject(body.schema, "'schema'"));
      return { valid: true, id: s.id, record_size: s.recordSize, fields: s.fields.map((f) => ({ name: f.name, type: f.type, offset: f.offset, size: f.size })) };
    } catch (err) {
      if (err instanceof SchemaError) return { valid: false, issues: err.issues };
      throw err;
    }
  });

  app.post('/v1/nodes/:name/quarantine', async (req) => {
    const by = admin(req);
    const name = nameParam(req.params, 'name');
    const body = asObject(req.body ?? {});
    onlyKeys(body, ['reason', 'notices']);
    const reason = reqString(body, 'reason', { max: 500 });
    if (body.notices !== undefined && (!Array.isArray(body.notices) || body.notices.length > 100 || !body.notices.every((x) => typeof x === 'string' && x.length <= 500))) {
      throw new HttpError('invalid_request', "'notices' must be an array of at most 100 strings (bad batch notices, each at most 500 characters)");
    }
    // Without notices given, the node's bad batch notices reported by the SCCs (badBatchRoutes.ts) are recorded.
    const notices = (body.notices as string[] | undefined) ?? noticeLines(web.get(), name);
    const node = ctx.store.get().nodes[name];
    if (!node) throw new HttpError('unknown_node', `no node '${name}'; GET /v1/nodes lists them`);
    if (node.role !== 'storageNode') throw new HttpError('invalid_request', `node '${name}' is a ${node.role}; only Storage Nodes are quarantined (revoke another node's certificate instead)`);
    if (node.state === 'quarantined') throw new HttpError('conflict', `node '${name}' is quarantined already (since ${web.get().quarantine[name]?.at ?? '?'}); release it first`);
    const previous = await ctx.store.update((s) => {
      const n = s.nodes[name];
      if (!n) throw new HttpError('unknown_node', `no node '${name}'`);
      const was = n.state;
      n.state = 'quarantined';
      return was;
    });
    const record = { at: new Date().toISOString(), by, reason, notices, previous_state: previous };
    await web.update((w) => void (w.quarantine[name] = record));
    ctx.log(`node '${name}' quarantined by ${by}: ${reason}`);
    return { name, state: 'quarantined', quarantine: record };
  });

  app.post('/v1/nodes/:name/release', async (req) => {
    const by = admin(req);
    const name = nameParam(req.params, 'name');
    const node = ctx.store.get().nodes[name];
    if (!node) throw new HttpError('unknown_node', `no node '${name}'; GET /v1/nodes lists them`);
    if (node.state !== 'quarantined') throw new HttpError('conflict', `node '${name}' is not quarantined (it is ${node.state})`);
    const state = await ctx.store.update((s) => {
      const n = s.nodes[name];
      if (!n) throw new HttpError('unknown_node', `no node '${name}'`);
      // Its next health report moves it on to ready; the SCC catches it up before it serves.
      n.state = n.cert_serial ? 'registered' : 'declared';
      return n.state;
    });
    await web.update((w) => void delete w.quarantine[name]);
    ctx.log(`node '${name}' released from quarantine by ${by}`);
    return { name, state };
  });

  app.get('/v1/quarantine', async (req) => {
    requirePeer(req, ctx);
    const s = ctx.store.get();
    const q = web.get().quarantine;
    const quarantined = Object.values(s.nodes)
      .filter((n) => n.state === 'quarantined')
      .map((n) => ({ name: n.name, ...(n.cluster && { cluster: n.cluster }), ...(q[n.name] && { since: q[n.name].at, reason: q[n.name].reason }) }))
      .sort((a, b) => a.name.localeCompare(b.name));
    return { quarantined };
  });
}
