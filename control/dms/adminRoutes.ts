/**
 * DMS-Core routes for administrators (client certificate with OU `admin`): bootstrap tokens,
 * clusters, nodes, datasets and revocations. Node-facing reads (topology, datasets, health reports)
 * are in nodeRoutes.ts.
 */
import type { FastifyInstance } from 'fastify';
import { Schema, SchemaError } from '../../engine-rs/schema';
import { asObject, NAME_DOC, NAME_PATTERN, onlyKeys, optBool, optInt, optString, optStringArray, reqString, type JsonObject } from '../http/body';
import { HttpError } from '../http/errors';
import { normalizeSerial } from '../../net/pki/x509';
import { ADMIN_ROLE, requireRole, type DmsContext } from './context';
import { newBootstrapToken } from './credentials';
import { readAddresses, readRole, reservedName } from './registration';
import { DEFAULT_TOKEN_TTL_S, MAX_TOKEN_TTL_S } from './settings';
import { checkClusterSeat } from './webux/communityLimits';
import { NODE_STATES, PRIVILEGED_ROLES, type DeviceRecord, type NodeRecord, type NodeRole, type NodeState } from './state';

function nameParam(params: unknown, key: string): string {
  const v = (params as Record<string, string>)[key] ?? '';
  if (!NAME_PATTERN.test(v)) throw new HttpError('invalid_request', `the ${key} in the path must be ${NAME_DOC}, got ${JSON.stringify(v)}`);
  return v;
}

function readDevices(o: JsonObject): DeviceRecord[] | undefined {
  if (o.devices === undefined) return undefined;
  if (!Array.isArray(o.devices) || o.devices.length > 256) throw new HttpError('invalid_request', "'devices' must be an array of at most 256 {name, address, type}");
  return o.devices.map((d, i) => {
    const x = asObject(d, `'devices[${i}]'`);
    onlyKeys(x, ['name', 'address', 'type'], `'devices[${i}]'`);
    return { name: reqString(x, 'name', { max: 64 }), address: reqString(x, 'address', { max: 64 }), type: reqString(x, 'type', { max: 32 }) };
  });
}

/** Revokes every unexpired certificate matching `match`; returns their serials. */
async function revokeWhere(ctx: DmsContext, match: (serial: string, nodeName: string) => boolean, reason: string): Promise<string[]> {
  const now = new Date();
  const revoked = await ctx.store.update((s) => {
    const out: string[] = [];
    for (const [serial, c] of Object.entries(s.certificates)) {
      if (c.revoked_at || Date.parse(c.not_after) <= now.getTime() || !match(serial, c.node_name)) continue;
      c.revoked_at = now.toISOString();
      c.reason = reason;
      out.push(serial);
    }
    return out;
  });
  if (revoked.length > 0) await ctx.refreshCrl();
  return revoked;
}

/** Registers the administrator routes on `app`. */
export function registerAdminRoutes(app: FastifyInstance, ctx: DmsContext): void {
  const admin = (req: Parameters<typeof requireRole>[0]): void => void requireRole(req, ctx, [ADMIN_ROLE]);

  app.post('/v1/bootstrap-tokens', async (req, reply) => {
    admin(req);
    const body = asObject(req.body);
    onlyKeys(body, ['node_name', 'role', 'ttl_s']);
    const nodeName = reqString(body, 'node_name', { pattern: NAME_PATTERN, patternDoc: NAME_DOC });
    const asked = body.role === undefined ? undefined : readRole(body);
    const ttl = optInt(body, 'ttl_s', 1, MAX_TOKEN_TTL_S) ?? DEFAULT_TOKEN_TTL_S;
    const reserved = reservedName(nodeName, ctx);
    if (reserved) throw new HttpError('forbidden', reserved);
    const { token, hash } = newBootstrapToken();
    const expiresAt = new Date(Date.now() + ttl * 1000).toISOString();
    // The token carries one node name and one role: a declared node's role, else the role asked
    // for, else `client`. A token for a privileged role declares the node if it is not yet.
    const role = await ctx.store.update((s): NodeRole => {
      // Expired and used tokens are pruned here, so the document does not grow without bound.
      const now = Date.now();
      for (const [h, t] of Object.entries(s.tokens)) if (t.used_at || Date.parse(t.expires_at) <= now) delete s.tokens[h];
      const node = s.nodes[nodeName];
      if (node && asked !== undefined && node.role !== asked) throw new HttpError('conflict', `node '${nodeName}' is declared as a ${node.role}, not a ${asked}`);
      const r = node?.role ?? asked ?? 'client';
      if (PRIVILEGED_ROLES.includes(r)) {
        if (!node) s.nodes[nodeName] = { name: nodeName, role: r, state: 'declared', addresses: {}, declared: true, declared_hosts: [] };
        else if (!node.declared) Object.assign(node, { declared: true, declared_hosts: [] });
      }
      s.tokens[hash] = { node_name: nodeName, role: r, expires_at: expiresAt };
      return r;
    });
    return reply.code(201).send({ token, node_name: nodeName, role, expires_at: expiresAt });
  });

  app.put('/v1/clusters/:id', async (req) => {
    admin(req);
    const id = nameParam(req.params, 'id');
    const body = asObject(req.body ?? {});
    onlyKeys(body, ['primary']);
    const primary = optBool(body, 'primary') ?? false;
    return ctx.store.update((s) => {
      checkClusterSeat(s, id, ctx.limitsInEffect());
      if (primary) for (const c of Object.values(s.clusters)) c.primary = false;
      s.clusters[id] = { id, primary: primary || (s.clusters[id]?.primary ?? false) };
      return s.clusters[id];
    });
  });

  app.put('/v1/nodes/:name', async (req) => {
    admin(req);
    const name = nameParam(req.params, 'name');
    const reserved = reservedName(name, ctx);
    if (reserved) throw new HttpError('forbidden', reserved);
    const body = asObject(req.body);
    onlyKeys(body, ['role', 'cluster', 'addresses', 'devices', 'hash_offload_platform', 'state']);
    const role = readRole(body);
    const cluster = optString(body, 'cluster', { pattern: NAME_PATTERN, patternDoc: NAME_DOC });
    const state = optString(body, 'state');
    if (state !== undefined && !(NODE_STATES as readonly string[]).includes(state)) throw new HttpError('invalid_request', `'state' must be one of ${NODE_STATES.join(', ')}`);
    const addresses = readAddresses(body);
    const devices = readDevices(body);
    const offload = optString(body, 'hash_offload_platform', { max: 64 });
    if (cluster !== undefined && !ctx.store.get().clusters[cluster]) throw new HttpError('invalid_request', `'cluster': no cluster '${cluster}'; declare it with PUT /v1/clusters/${cluster}`);
    return ctx.store.update((s) => {
      const old = s.nodes[name];
      if (old && old.role !== role) throw new HttpError('conflict', `node '${name}' exists as a ${old.role}; delete it first to change its role`);
      const n: NodeRecord = old ?? { name, role, state: 'declared', addresses: {} };
      // What a node said about itself before an administrator declared it is not kept as declared.
      if (!n.declared) n.addresses = {};
      n.declared = true;
      if (cluster !== undefined) n.cluster = cluster;
      if (addresses) n.addresses = addresses;
      if (addresses || !n.declared_hosts) n.declared_hosts = [...new Set(Object.values(n.addresses).map((a: { host: string }) => a.host))];
      if (devices) n.devices = devices;
      if (offload !== undefined) n.hash_offload_platform = offload;
      if (state !== undefined) n.state = state as NodeState;
      s.nodes[name] = n;
      return n;
    });
  });

  app.delete('/v1/nodes/:name', async (req) => {
    admin(req);
    const name = nameParam(req.params, 'name');
    if (!ctx.store.get().nodes[name]) throw new HttpError('unknown_node', `no node '${name}'`);
    const revoked = await revokeWhere(ctx, (_s, n) => n === name, 'node removed');
    await ctx.store.update((s) => void delete s.nodes[name]);
    return { removed: name, revoked };
  });

  app.put('/v1/datasets/:id', async (req) => {
    admin(req);
    const id = nameParam(req.params, 'id');
    const body = asObject(req.body);
    onlyKeys(body, ['schema', 'clusters']);
    const raw = asObject(body.schema, "'schema'");
    const clusters = optStringArray(body, 'clusters', 64) ?? [];
    const unknown = clusters.filter((c) => !ctx.store.get().clusters[c]);
    if (unknown.length > 0) throw new HttpError('invalid_request', `'clusters': unknown cluster ${unknown.join(', ')}`);
    let schema: Schema;
    try {
      schema = Schema.parse(raw);
    } catch (err) {
      if (err instanceof SchemaError) throw new HttpError('invalid_schema', err.message);
      throw err;
    }
    if (schema.id !== id) throw new HttpError('invalid_schema', `the schema's id is '${schema.id}' but the path names '${id}'`);
    const canonical = schema.toJSON() as unknown as Record<string, unknown>;
    await ctx.store.update((s) => {
      s.datasets[id] = { id, schema: canonical, clusters, updated_at: new Date().toISOString() };
    });
    return { id, record_size: schema.recordSize, clusters };
  });

  app.delete('/v1/datasets/:id', async (req) => {
    admin(req);
    const id = nameParam(req.params, 'id');
    if (!ctx.store.get().datasets[id]) throw new HttpError('unknown_dataset', `no dataset '${id}'`);
    await ctx.store.update((s) => void delete s.datasets[id]);
    return { removed: id };
  });

  // The administrator certificates DMS-CA issued (serial, subject, issued-at); revoke one with
  // POST /v1/certificates/revoke {serial}, or all of them with {node_name: "admin"}.
  app.get('/v1/admin/certificates', async (req) => {
    admin(req);
    const certificates = Object.entries(ctx.store.get().certificates)
      .filter(([, c]) => c.role === ADMIN_ROLE)
      .map(([serial, c]) => ({ serial, subject: c.subject ?? `O=HD, OU=${c.role}, CN=${c.node_name}`, ...(c.issued_at && { issued_at: c.issued_at }), not_after: c.not_after, ...(c.revoked_at && { revoked_at: c.revoked_at, reason: c.reason }) }))
      .sort((a, b) => (a.issued_at ?? '').localeCompare(b.issued_at ?? ''));
    return { certificates };
  });

  app.post('/v1/certificates/revoke', async (req) => {
    admin(req);
    const body = asObject(req.body);
    onlyKeys(body, ['serial', 'node_name', 'reason']);
    const serial = optString(body, 'serial', { pattern: /^[0-9a-fA-F:]{1,64}$/, patternDoc: 'a hex serial number' });
    const nodeName = optString(body, 'node_name', { pattern: NAME_PATTERN, patternDoc: NAME_DOC });
    const reason = optString(body, 'reason', { max: 200 }) ?? 'revoked by an administrator';
    if ((serial === undefined) === (nodeName === undefined)) throw new HttpError('invalid_request', "give exactly one of 'serial' and 'node_name'");
    const want = serial !== undefined ? normalizeSerial(serial.replace(/:/g, '')) : undefined;
    const revoked = await revokeWhere(ctx, (s, n) => (want !== undefined ? s === want : n === nodeName), reason);
    if (revoked.length === 0) throw new HttpError('not_found', serial !== undefined ? `no unexpired, unrevoked certificate ${want}` : `node '${nodeName}' holds no unexpired, unrevoked certificate`);
    return { revoked };
  });
}
