/**
 * DMS-Core routes for nodes: registration and renewal, the CA bundle and revocation list (public),
 * and, for any caller holding a certificate from DMS-CA, the topology, the dataset schemas, the
 * node's own configuration and its health reports.
 */
import type { FastifyInstance } from 'fastify';
import { asObject, NAME_PATTERN, onlyKeys, reqString } from '../http/body';
import { HttpError } from '../http/errors';
import { ADMIN_ROLE, peerOf, requirePeer, type DmsContext } from './context';
import { nodeConfig } from './nodeConfig';
import { register, renew } from './registration';
import type { NodeState } from './state';
import { datasetsFor, topologyView } from './topology';

/** Health a node reports, and the DMS state it moves the node to. */
const HEALTH_TO_STATE: Readonly<Record<string, NodeState>> = { ok: 'ready', degraded: 'degraded', initializing: 'registered', down: 'down' };

/** Counts what the registration route did, for /metrics. */
export type RegistrationObserver = (credential: string, result: 'ok' | 'refused') => void;

/** Registers the node-facing routes on `app`. */
export function registerNodeRoutes(app: FastifyInstance, ctx: DmsContext, observe: RegistrationObserver = () => undefined): void {
  app.get('/v1/ca', async (_req, reply) => reply.type('application/x-pem-file').send(ctx.ca.certPem));
  app.get('/v1/crl', async (_req, reply) => reply.type('application/x-pem-file').send(ctx.crlPem()));

  app.post('/v1/register', async (req) => {
    const body = req.body as Record<string, unknown> | undefined;
    const kind = peerOf(req, ctx) ? 'certificate' : typeof body?.bootstrap_token === 'string' ? 'bootstrap_token' : typeof body?.k8s_token === 'string' ? 'k8s_token' : 'none';
    try {
      const r = await register(req.body, peerOf(req, ctx), ctx);
      observe(kind, 'ok');
      return r;
    } catch (err) {
      observe(kind, 'refused');
      throw err;
    }
  });

  app.post('/v1/certificates/renew', async (req) => renew(req.body, requirePeer(req, ctx), ctx));

  app.get('/v1/topology', async (req) => {
    requirePeer(req, ctx);
    return topologyView(ctx.store.get());
  });

  app.get('/v1/datasets', async (req) => {
    requirePeer(req, ctx);
    return { datasets: datasetsFor(ctx.store.get()) };
  });

  app.get('/v1/datasets/:id', async (req) => {
    requirePeer(req, ctx);
    const id = (req.params as { id: string }).id;
    const d = Object.values(ctx.store.get().datasets).find((x) => x.id === id || x.schema.name === id);
    if (!d) throw new HttpError('unknown_dataset', `no dataset '${id}'`);
    return d.schema;
  });

  // A node's configuration, as its registration answer carried it (docs/control-plane.md, "Node
  // configuration"): registered SCCs and Storage Nodes poll it every config_poll_ms.
  app.get('/v1/nodes/:name/config', async (req) => {
    const peer = requirePeer(req, ctx);
    const name = (req.params as { name: string }).name;
    if (!NAME_PATTERN.test(name)) throw new HttpError('invalid_request', `bad node name ${JSON.stringify(name)}`);
    if (peer.name !== name && peer.role !== ADMIN_ROLE) throw new HttpError('forbidden', `'${peer.name}' may read only its own configuration`);
    const s = ctx.store.get();
    const node = s.nodes[name];
    if (!node) throw new HttpError('unknown_node', `no node '${name}'`);
    if (node.state === 'quarantined') throw new HttpError('forbidden', `node '${name}' is quarantined`);
    return nodeConfig(s, node, undefined, ctx);
  });

  app.post('/v1/nodes/:name/health', async (req) => {
    const peer = requirePeer(req, ctx);
    const name = (req.params as { name: string }).name;
    if (!NAME_PATTERN.test(name)) throw new HttpError('invalid_request', `bad node name ${JSON.stringify(name)}`);
    if (peer.name !== name && peer.role !== ADMIN_ROLE) throw new HttpError('forbidden', `'${peer.name}' may report only its own health`);
    const body = asObject(req.body);
    onlyKeys(body, ['status', 'detail']);
    const status = reqString(body, 'status');
    const next = HEALTH_TO_STATE[status];
    if (!next) throw new HttpError('invalid_request', `'status' must be one of ${Object.keys(HEALTH_TO_STATE).join(', ')}`);
    if (!ctx.store.get().nodes[name]) throw new HttpError('unknown_node', `no node '${name}'`);
    const at = new Date().toISOString();
    return ctx.store.update((s) => {
      const n = s.nodes[name];
      if (!n) throw new HttpError('unknown_node', `no node '${name}'`);
      n.health = { status, ...(body.detail !== undefined && { detail: body.detail }), at };
      n.last_seen = at;
      // Quarantine is an administrator's decision; a health report does not lift it.
      if (n.state !== 'quarantined') n.state = next;
      return { name, state: n.state };
    });
  });
}
