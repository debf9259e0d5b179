/**
 * The Proxy's link to the DMS: registration at start (role `proxy`, with the URL policy updates are
 * posted to), then on a period the topology (the primary cluster's SCCs) and the dataset schemas,
 * all over mutual TLS with the Proxy's certificate (its health reports: net/healthReporter.ts).
 */
import { Schema } from '../../engine-rs/schema';
import type { SccAddress } from '../api';
import { DMS_PEER_ROLES, requestJson } from '../../net/jsonClient';
import type { MtlsIdentity } from '../../net/mtls';
import type { RegistrationResult } from '../../net/registerWithDms';
import type { LogFn } from '../../lib/logging';

/** What the Proxy knows of the cluster. */
export interface ClusterView {
  readonly primaryCluster: string | null;
  /** The primary cluster's serving SCCs. */
  readonly targets: readonly SccAddress[];
  /** Every cluster and its SCCs (the topology route's answer). */
  readonly clusters: readonly { id: string; primary: boolean; sccs: SccAddress[] }[];
  readonly datasets: ReadonlyMap<string, Schema>;
  /** The primary cluster's serving Storage Nodes with an observability address (batch filters are read there). */
  readonly storageNodes: readonly StorageNodeAddress[];
  /** When it was last read from the DMS. */
  readonly at: string;
}

/** Where a Storage Node serves its observability routes (`/v1/batch-filters`). */
export interface StorageNodeAddress {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

interface TopologyNode {
  name: string;
  state: string;
  mtls?: boolean;
  addresses?: { production?: { host: string; port: number }; grpc?: { host: string; port: number }; observability?: { host: string; port: number } };
}

const SERVING = new Set(['declared', 'registered', 'ready', 'degraded']);

function schemasOf(list: readonly unknown[], log: LogFn): Map<string, Schema> {
  const out = new Map<string, Schema>();
  for (const s of list) {
    try {
      const schema = Schema.parse(s as object);
      out.set(schema.id, schema);
    } catch (err) {
      log(`a dataset schema from the DMS was refused: ${(err as Error).message}`, 'warn');
    }
  }
  return out;
}

/** The view a registration answer gives. */
export function viewFromRegistration(r: RegistrationResult, log: LogFn): ClusterView {
  return { primaryCluster: null, targets: r.scc_targets, clusters: [], datasets: schemasOf(r.datasets, log), storageNodes: [], at: new Date().toISOString() };
}

/** Reads topology and schemas from the DMS with the Proxy's certificate. */
export async function readClusterView(dmsUrl: string, id: MtlsIdentity, dmsServerName: string | undefined, log: LogFn): Promise<ClusterView> {
  const m = id.material;
  const tls = { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: dmsServerName, roles: DMS_PEER_ROLES };
  const [topo, ds] = await Promise.all([requestJson('GET', new URL('/v1/topology', dmsUrl).toString(), tls), requestJson('GET', new URL('/v1/datasets', dmsUrl).toString(), tls)]);
  if (topo.status !== 200) throw new Error(`GET /v1/topology: HTTP ${topo.status} ${JSON.stringify(topo.body).slice(0, 200)}`);
  if (ds.status !== 200) throw new Error(`GET /v1/datasets: HTTP ${ds.status} ${JSON.stringify(ds.body).slice(0, 200)}`);
  const t = topo.body as { primary_cluster: string | null; clusters: { id: string; primary: boolean; sccs: TopologyNode[]; storage_nodes?: TopologyNode[] }[] };
  const clusters = t.clusters.map((c) => ({
    id: c.id,
    primary: c.primary,
    sccs: c.sccs
      .filter((n) => SERVING.has(n.state) && n.addresses?.production)
      .map((n): SccAddress => ({ name: n.name, host: n.addresses?.production?.host ?? '', port: n.addresses?.production?.port ?? 0, ...(n.addresses?.grpc && { grpc_port: n.addresses.grpc.port }), ...(n.mtls === true && { mtls: true }) })),
  }));
  const primary = clusters.find((c) => c.id === t.primary_cluster);
  const sns = (t.clusters.find((c) => c.id === t.primary_cluster)?.storage_nodes ?? [])
    .filter((n) => SERVING.has(n.state) && n.addresses?.observability)
    .map((n): StorageNodeAddress => ({ name: n.name, host: n.addresses?.observability?.host ?? '', port: n.addresses?.observability?.port ?? 0 }));
  return {
    primaryCluster: t.primary_cluster,
    targets: primary?.sccs ?? [],
    clusters,
    storageNodes: sns,
    datasets: schemasOf((ds.body as { datasets: unknown[] }).datasets, log),
    at: new Date().toISOString(),
  };
}
