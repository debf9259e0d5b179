/**
 * What DMS-Core keeps: clusters, nodes (declared by an administrator, then registered, with their
 * health and state), dataset schemas and where they are distributed, bootstrap tokens (hashed),
 * issued certificate serials (for the revocation list), active Proxies and the policy. All of it
 * lives in one {@link Store} document (docs/control-plane.md, "Store").
 */

import { NODE_ROLES, type NodeAddresses, type NodeRole } from '../api';

export { NODE_ROLES, type NodeAddresses, type NodeRole };

/**
 * Roles whose certificates open more than a client's door (the SCC's data, the Proxy's policy
 * enforcement, hd_sql's service identity, administration): issued only for nodes an administrator
 * declared (`PUT /v1/nodes/{name}`, or a bootstrap token made for that role). `admin` is never
 * issued by registration at all (the administrator credential comes from the DMS's data directory).
 */
export const PRIVILEGED_ROLES: readonly string[] = ['scc', 'proxy', 'sqlServer', 'ingress', 'admin'];

/** A node's lifecycle state in the DMS. */
export const NODE_STATES = ['declared', 'registered', 'ready', 'degraded', 'quarantined', 'down'] as const;
/** A node state (docs/control-plane.md, "Node states"). */
export type NodeState = (typeof NODE_STATES)[number];

/** A storage device of a Storage Node (config.json's storage_devices entry). */
export interface DeviceRecord {
  readonly name: string;
  readonly address: string;
  readonly type: string;
}

/** One node. */
export interface NodeRecord {
  readonly name: string;
  role: NodeRole;
  /** The cluster it belongs to (SCCs and Storage Nodes). */
  cluster?: string;
  state: NodeState;
  addresses: NodeAddresses;
  /** Storage Nodes: the devices handed out at registration. */
  devices?: DeviceRecord[];
  /** Storage Nodes: hash offload hardware (config.json's hash_offload_platform). */
  hash_offload_platform?: string;
  /** Proxies: the URL the DMS posts policy updates to (…/v1/proxy/config). */
  config_url?: string;
  /** Proxies: the newest policy version the Proxy acknowledged. */
  policy_version?: number;
  /** Last health reported by the node. */
  health?: { status: string; detail?: unknown; at: string };
  registered_at?: string;
  last_seen?: string;
  /** Serial of the node's current certificate. */
  cert_serial?: string;
  /**
   * Set when an administrator declared the node (PUT /v1/nodes, or a bootstrap token made for a
   * privileged role): only such nodes get privileged roles, and only their declared addresses go
   * into their certificates.
   */
  declared?: boolean;
  /** The hosts of the addresses the administrator declared: the only names besides the node's own in its certificates. */
  declared_hosts?: string[];
}

/** A cluster: one SCC group and its Storage Nodes. */
export interface ClusterRecord {
  readonly id: string;
  /** The primary cluster's SCCs are the targets handed to clients. */
  primary: boolean;
}

/** A dataset schema and the clusters that hold the dataset. */
export interface DatasetRecord {
  readonly id: string;
  /** The schema JSON (docs/schema.md), validated by engine-rs when it was put. */
  schema: Record<string, unknown>;
  /** Clusters the dataset is distributed to; empty means every cluster. */
  clusters: string[];
  updated_at: string;
}

/** A single-use registration token, stored by its SHA-256. */
export interface TokenRecord {
  readonly node_name: string;
  /**
   * The role the administrator made the token for; a registration with it may ask for no other.
   * Tokens stored before roles were kept have none and count as `client` tokens.
   */
  readonly role?: NodeRole;
  readonly expires_at: string;
  used_at?: string;
}

/** A certificate DMS-CA issued. */
export interface CertificateRecord {
  readonly node_name: string;
  readonly role: string;
  readonly not_after: string;
  /** When it was issued (certificates recorded before this field was kept have none). */
  readonly issued_at?: string;
  /** Its subject, `O=HD, OU=<role>, CN=<name>` (kept for the administrator certificate). */
  readonly subject?: string;
  revoked_at?: string;
  reason?: string;
}

/** The active policy (Rego) the Proxies enforce. */
export interface PolicyRecord {
  /** Grows by one with every change. */
  readonly version: number;
  readonly rego: string;
  readonly data?: Record<string, unknown>;
  readonly updated_at: string;
}

/** Values that must be identical on every node, elected by the DMS and handed out at registration. */
export interface InstanceRecord {
  readonly id: string;
  readonly created_at: string;
}

/** The whole DMS document. */
export interface DmsState {
  readonly format: 1;
  readonly instance: InstanceRecord;
  clusters: Record<string, ClusterRecord>;
  nodes: Record<string, NodeRecord>;
  datasets: Record<string, DatasetRecord>;
  tokens: Record<string, TokenRecord>;
  certificates: Record<string, CertificateRecord>;
  /** Grows with every revocation list DMS-CA signs. */
  crl_number: number;
  policy: PolicyRecord | null;
}

/** A fresh document for a new instance. */
export function initialState(instanceId: string, now = new Date()): DmsState {
  return {
    format: 1,
    instance: { id: instanceId, created_at: now.toISOString() },
    clusters: {},
    nodes: {},
    datasets: {},
    tokens: {},
    certificates: {},
    crl_number: 0,
    policy: null,
  };
}

/** Checks a document read from disk has the shape of {@link DmsState}; throws naming the first bad key. */
export function checkState(doc: unknown): DmsState {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObj(doc)) throw new Error('the document is not a JSON object');
  if (doc.format !== 1) throw new Error(`format is ${JSON.stringify(doc.format)}, expected 1`);
  if (!isObj(doc.instance) || typeof doc.instance.id !== 'string') throw new Error('instance.id is missing');
  for (const k of ['clusters', 'nodes', 'datasets', 'tokens', 'certificates'] as const) {
    if (!isObj(doc[k])) throw new Error(`${k} is not an object`);
  }
  if (typeof doc.crl_number !== 'number') throw new Error('crl_number is not a number');
  if (doc.policy !== null && !isObj(doc.policy)) throw new Error('policy is neither null nor an object');
  return doc as unknown as DmsState;
}
