/**
 * The control plane's contract with its clients (docs/control-plane.md): node roles, the addresses a
 * node is reached at, and an SCC as the DMS hands it out. Plain data only, so the identity library
 * (net/), the roles and the Proxy share it without importing the DMS's store (control/dms/).
 */

/** Node roles; a certificate's OU carries the role. */
export const NODE_ROLES = ['scc', 'storageNode', 'proxy', 'client', 'ingester', 'sqlServer', 'ingress'] as const;
/** A node role. */
export type NodeRole = (typeof NODE_ROLES)[number];

/** host:port pairs a node is reached at. */
export interface NodeAddresses {
  /** Control plane (COMMAND_PORT, 6986). */
  readonly control?: { host: string; port: number };
  /** Data plane (PRODUCTION_IP / PRODUCTION_PORT, 6987). */
  readonly production?: { host: string; port: number };
  /** gRPC query dispatch of an SCC (QUERY_GRPC_PORT, 6990). */
  readonly grpc?: { host: string; port: number };
  /** /health and /metrics (8080). */
  readonly observability?: { host: string; port: number };
}

/** One SCC on the data plane (docs/query.md, SccAddress). */
export interface SccAddress {
  readonly host: string;
  readonly port: number;
  readonly grpc_port?: number;
  /** The SCC's node name (its certificate's common name). */
  readonly name: string;
  /** The SCC registered with the DMS (it holds a certificate): its gRPC port is mutual TLS. */
  readonly mtls?: boolean;
}
