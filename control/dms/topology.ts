/**
 * Views of the DMS state handed out: the topology (clusters with their SCCs and Storage Nodes,
 * health and state), the SCC targets a node or client talks to, and the datasets a cluster holds.
 */
import type { SccAddress } from '../api';
import type { DmsState, NodeRecord } from './state';

/** Whether a node registered (holds a DMS-CA certificate), so its ports are mutual TLS. */
const registered = (n: NodeRecord): boolean => n.cert_serial !== undefined && n.state !== 'declared';

/** States in which a node is handed out as a target. */
const SERVING = new Set(['declared', 'registered', 'ready', 'degraded']);

function nodeView(n: NodeRecord): Record<string, unknown> {
  return {
    name: n.name,
    role: n.role,
    state: n.state,
    ...(n.health && { health: n.health }),
    addresses: n.addresses,
    ...(n.devices && { devices: n.devices }),
    ...(n.last_seen && { last_seen: n.last_seen }),
    ...(registered(n) && { mtls: true }),
  };
}

/** The primary cluster's id: the one marked primary, else the first by id. */
export function primaryCluster(s: Readonly<DmsState>): string | undefined {
  const ids = Object.keys(s.clusters).sort();
  return ids.find((id) => s.clusters[id].primary) ?? ids[0];
}

/** SCC targets of `cluster` (default: the primary cluster), serving ones with a data-plane address. */
export function sccTargets(s: Readonly<DmsState>, cluster = primaryCluster(s)): SccAddress[] {
  if (cluster === undefined) return [];
  return Object.values(s.nodes)
    .filter((n) => n.role === 'scc' && n.cluster === cluster && SERVING.has(n.state) && n.addresses.production)
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((n) => ({
      name: n.name,
      host: n.addresses.production?.host ?? '',
      port: n.addresses.production?.port ?? 0,
      ...(n.addresses.grpc && { grpc_port: n.addresses.grpc.port }),
      ...(registered(n) && { mtls: true }),
    }));
}

/** Schemas of the datasets distributed to `cluster` (a dataset with no clusters goes everywhere). */
export function datasetsFor(s: Readonly<DmsState>, cluster?: string): Record<string, unknown>[] {
  return Object.values(s.datasets)
    .filter((d) => d.clusters.length === 0 || cluster === undefined || d.clusters.includes(cluster))
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((d) => d.schema);
}

/** The topology document of `GET /v1/topology`. */
export function topologyView(s: Readonly<DmsState>): Record<string, unknown> {
  const primary = primaryCluster(s);
  const clusters = Object.values(s.clusters)
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((c) => {
      const members = Object.values(s.nodes).filter((n) => n.cluster === c.id).sort((a, b) => a.name.localeCompare(b.name));
      return {
        id: c.id,
        primary: c.id === primary,
        sccs: members.filter((n) => n.role === 'scc').map(nodeView),
        storage_nodes: members.filter((n) => n.role === 'storageNode').map(nodeView),
        datasets: Object.values(s.datasets).filter((d) => d.clusters.length === 0 || d.clusters.includes(c.id)).map((d) => d.id).sort(),
      };
    });
  const others = Object.values(s.nodes)
    .filter((n) => n.role !== 'scc' && n.role !== 'storageNode')
    .sort((a, b) => a.name.localeCompare(b.name))
    .map(nodeView);
  return { instance: s.instance.id, primary_cluster: primary ?? null, clusters, nodes: others, policy_version: s.policy?.version ?? 0 };
}
