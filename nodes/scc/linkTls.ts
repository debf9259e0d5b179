/**
 * The SCC's side of mutual TLS to its Storage Nodes (docs/control-plane.md, "Mutual TLS between
 * nodes"): replication streams to each node's production port and query legs to its command port
 * present the SCC's certificate and check that the server's certificate names the SN_TARGETS node
 * they meant to reach. The `queryDispatch` stage registers the identity here for its targets; a
 * {@link QueryLeg} looks its node up (the query path builds legs deep inside a run).
 */
import type tls from 'node:tls';
import type { NodeIdentity } from '../../net/nodeIdentity';
import { clientLink } from '../../net/nodeLinks';
import { HdwpClient } from '../../hdwp/hdwpClient';
import type { ReplicaConnector } from './replicas';
import type { SnTarget } from './settings';

/** Connects replication streams over mutual TLS with the SCC's identity. */
export function tlsReplicaConnector(id: NodeIdentity): ReplicaConnector {
  return (target, datasetId, recordSize) =>
    HdwpClient.connect({ host: target.host, port: target.prodPort, role: 'scc', datasetId, recordSize, connectTimeoutMs: 5000, tls: clientLink(id, target.name) });
}

const legIdentities = new Map<string, NodeIdentity>();
const keyOf = (t: SnTarget): string => `${t.name}|${t.host}|${t.controlPort}`;

/** Query legs to these targets use mutual TLS with `id` until the returned function is called. */
export function registerLegIdentity(targets: readonly SnTarget[], id: NodeIdentity): () => void {
  for (const t of targets) legIdentities.set(keyOf(t), id);
  return () => {
    for (const t of targets) if (legIdentities.get(keyOf(t)) === id) legIdentities.delete(keyOf(t));
  };
}

/** TLS options of a query leg to `target`, or undefined for plain TCP (no identity registered). */
export function legTlsOf(target: SnTarget): tls.ConnectionOptions | undefined {
  const id = legIdentities.get(keyOf(target));
  return id ? clientLink(id, target.name) : undefined;
}
