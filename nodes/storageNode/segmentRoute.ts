/**
 * `GET /v1/segment?dataset=<id>&batch_id=<128 hex>`: one whole durable segment, for a peer's
 * cold-boot synchronisation (docs/storage-node.md, "Cold-boot synchronisation"). Only indexed
 * (complete, verified) segments are served, never a partial one. The file holds every record, so
 * on a registered node it is served only over mutual TLS to a DMS-CA certificate of role
 * `storageNode` (403 over plain HTTP or to another role, 401 without a certificate); a node
 * without a DMS identity serves it over plain HTTP, as its other links are plain then.
 */
import type { FileResponse, JsonResponse, RouteCaller } from '../../lib/observability';
import { BatchID } from '../../engine-rs/index';
import { peerIdentity } from '../../net/mtls';
import type { NodeIdentity } from '../../net/nodeIdentity';
import type { BatchIndex } from './batchIndex';
import { SYNC_PEER_ROLE } from './peerLink';

const PARAMS = new Set(['dataset', 'batch_id']);

/** Who may read segments: undefined when `caller` may, else the refusal. */
export function segmentRefusal(caller: RouteCaller, identity: NodeIdentity | undefined): JsonResponse | undefined {
  if (!identity) return undefined;
  const refuse = (status: number, why: string): JsonResponse => {
    identity.peerRefused(`segment copy: ${why}`);
    return { status, body: { error: why } };
  };
  if (!caller.tls) return refuse(403, `segments are served only over mutual TLS (https on this port) to a DMS-CA certificate of role ${SYNC_PEER_ROLE}; this request came over plain HTTP`);
  const peer = peerIdentity(caller.socket);
  if (!peer) return refuse(401, `segments need a client certificate of DMS-CA of role ${SYNC_PEER_ROLE}; none (or none this node verifies) was presented`);
  if (peer.role !== SYNC_PEER_ROLE) return refuse(403, `segments are served only to role ${SYNC_PEER_ROLE}; '${peer.name}' holds a ${peer.role} certificate`);
  identity.peerAccepted(peer, 'segment');
  return undefined;
}

/** Answers `GET /v1/segment` from `index`: the segment file, 404 when not held, 400 naming what to send. */
export function segmentRoute(index: BatchIndex, q: URLSearchParams): JsonResponse | FileResponse {
  const bad = (error: string): JsonResponse => ({ status: 400, body: { error } });
  for (const k of new Set(q.keys())) {
    if (!PARAMS.has(k)) return bad(`unknown parameter '${k}': send dataset and batch_id`);
    if (q.getAll(k).length > 1) return bad(`parameter '${k}' is given more than once`);
  }
  const dataset = q.get('dataset');
  if (dataset === null || dataset === '') return bad("'dataset' is required: the dataset id");
  const hex = q.get('batch_id') ?? '';
  if (!/^[0-9a-fA-F]{128}$/.test(hex)) return bad("'batch_id' must be the batch id as 128 hex digits");
  const e = index.get(dataset, BatchID.fromHex(hex.toLowerCase()));
  if (!e) return { status: 404, body: { error: `batch ${hex.toLowerCase()} of '${dataset}' is not durable here` } };
  return { status: 200, file: e.path };
}
