/**
 * The SCC's side of mutual TLS to its Storage Nodes (docs/control-plane.md, "Mutual TLS between
 * nodes"): replication streams to each node's production port and query legs to its command port
 * present the SCC's certificate and check that the server's certificate names the SN_TARGETS node
 * they meant to reach. The `sccNode` and `queryDispatch` services hand these to the replica set and
 * the query dispatcher, with the identity the `nodeIdentity` service gives them.
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

/** TLS options of the query legs to each target: mutual TLS with the SCC's identity `id`. */
export function tlsLegs(id: NodeIdentity): (target: SnTarget) => tls.ConnectionOptions {
  return (target) => clientLink(id, target.name);
}
