/**
 * The control plane's contract with its clients (docs/control-plane.md): node roles, the addresses a
 * node is reached at, and an SCC as the DMS hands it out (the one `SccAddress`, and `SccTarget`, its
 * spelling in the TypeScript API). Plain data only, so the identity library
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

/**
 * One SCC on the data plane (docs/query.md, SccAddress): `host`/`port` its PRODUCTION_IP/PORT,
 * `grpc_port` its QUERY_GRPC_PORT. The one SCC address type, in its JSON spelling: the DMS's
 * registration answer and topology, the Proxy's `/v1/topology`, and an HDQuery's `targets` (which
 * carry only `host`, `port` and `grpc_port`, see {@link SccTarget}) all write it so.
 */
export interface SccAddress {
  readonly host: string;
  readonly port: number;
  readonly grpc_port?: number;
  /** The SCC's node name (its certificate's common name). */
  readonly name: string;
  /** The SCC registered with the DMS (it holds a certificate): its gRPC port is mutual TLS. */
  readonly mtls?: boolean;
}

/**
 * An {@link SccAddress} as the TypeScript API holds it (the SDK's `setSccTargets`, a parsed
 * `HdQuery`'s `targets`, hd_sql's upstream): its data-plane `host`/`port` and `grpc_port` spelled
 * `grpcPort`. Its JSON form is the SccAddress's (see {@link sccTargetJson}).
 */
export interface SccTarget {
  readonly host: string;
  readonly port: number;
  /** {@link SccAddress}'s `grpc_port`. */
  readonly grpcPort?: number;
}

/** The {@link SccTarget} of an SCC address (its name and mTLS flag left out). */
export function sccTargetOf(a: Pick<SccAddress, 'host' | 'port' | 'grpc_port'>): SccTarget {
  return a.grpc_port === undefined ? { host: a.host, port: a.port } : { host: a.host, port: a.port, grpcPort: a.grpc_port };
}

/** A target's JSON form (an HDQuery's `targets` entry): the SccAddress fields it has. */
export function sccTargetJson(t: SccTarget): Pick<SccAddress, 'host' | 'port' | 'grpc_port'> {
  return { host: t.host, port: t.port, ...(t.grpcPort !== undefined ? { grpc_port: t.grpcPort } : {}) };
}

/**
 * One Storage Node of a cluster's replica set as the DMS hands it to the cluster's SCCs (the
 * registration answer's and `GET /v1/nodes/{name}/config`'s `replicas`): the spelling of one
 * SN_TARGETS entry, `node_name:ip:control_port:prod_port`.
 */
export interface ReplicaAddress {
  readonly name: string;
  readonly host: string;
  readonly control_port: number;
  readonly prod_port: number;
  /** Its /health, /v1/sync-state and /v1/segment port as registered: the SCC's sync probe and the peers' cold-boot synchronisation. */
  readonly observability?: { host: string; port: number };
}
