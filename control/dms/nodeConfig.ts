/**
 * What a registered node runs with, as the DMS hands it out (docs/control-plane.md, "Node
 * configuration"): in the registration answer, and again on `GET /v1/nodes/{name}/config`, which
 * registered SCCs and Storage Nodes poll every `config_poll_ms` so a dataset registered or a replica
 * set changed on the DMS reaches them without a restart.
 */
import type { MtuMode } from '../../net/mtuMode';
import type { ReplicaAddress, SccAddress } from '../api';
import { HttpError } from '../http/errors';
import type { DmsContext } from './context';
import type { DmsState, NodeRecord } from './state';
import { datasetsFor, primaryCluster, sccTargets } from './topology';

/** The configuration part of the registration answer (and the whole of the config route's answer). */
export interface NodeConfig {
  readonly cluster: string | null;
  /** The schema of `dataset` when asked, else of the only dataset; empty when neither applies. */
  readonly schema_json: string;
  /** Every dataset schema distributed to the node's cluster; each carries its own `record_size`. */
  readonly datasets: Record<string, unknown>[];
  readonly scc_targets: SccAddress[];
  /** SCCs and Storage Nodes: the Storage Nodes of the node's cluster (an SCC's replica set). */
  readonly replicas: ReplicaAddress[];
  /** SCCs and Storage Nodes: the quarantined Storage Nodes of the cluster (the SCC keeps them out of queries and replication, docs/scc.md "Quarantine"). */
  readonly quarantined: ReplicaAddress[];
  /** The record size of `schema_json`'s dataset, else the elected RECORD_SIZE. */
  readonly record_size: number;
  readonly devices: { name: string; address: string; type: string }[];
  readonly hash_election: { algorithm: string; chain_block_size: number; record_size: number; computed_by: 'scc'; offload: string };
  /** The instance's MTU mode (MTU_MODE on the DMS): the mode every SCC and Storage Node must run. */
  readonly mtu_mode: MtuMode;
  /** How often the node reports its health (`POST /v1/nodes/{name}/health`); DMS_HEALTH_INTERVAL_MS. */
  readonly health_interval_ms: number;
  /** How often the node re-reads this document (`GET /v1/nodes/{name}/config`); DMS_CONFIG_POLL_MS. */
  readonly config_poll_ms: number;
  /** Proxies only: the policy to enforce from the start. */
  readonly policy?: { version: number; rego: string; data?: Record<string, unknown> };
}

/**
 * The replica set of `cluster`: its Storage Nodes with a data-plane and a control address, in name
 * order. Health does not decide membership (the SCC tracks its replicas' health itself and catches
 * them up); only a quarantined node is left out. `quarantined`: the quarantined ones instead.
 */
export function replicaSetOf(s: Readonly<DmsState>, cluster: string | undefined, quarantined = false): ReplicaAddress[] {
  if (cluster === undefined) return [];
  return Object.values(s.nodes)
    .filter((n) => n.role === 'storageNode' && n.cluster === cluster && (n.state === 'quarantined') === quarantined && n.addresses.production && n.addresses.control)
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((n) => {
      const obs = n.addresses.observability;
      return { name: n.name, host: n.addresses.production?.host ?? '', control_port: n.addresses.control?.port ?? 0, prod_port: n.addresses.production?.port ?? 0, ...(obs && obs.port > 0 && { observability: { host: obs.host, port: obs.port } }) };
    });
}

/** Builds the configuration of `node` from the store (`dataset`: the one whose schema `schema_json` holds). */
export function nodeConfig(s: Readonly<DmsState>, node: NodeRecord, dataset: string | undefined, ctx: DmsContext): NodeConfig {
  const cluster = node.cluster ?? null;
  const member = node.role === 'scc' || node.role === 'storageNode';
  const datasets = datasetsFor(s, member ? node.cluster : undefined);
  let schema: Record<string, unknown> | undefined;
  if (dataset !== undefined) {
    schema = datasets.find((d) => d.id === dataset || d.name === dataset);
    if (!schema) throw new HttpError('unknown_dataset', `dataset '${dataset}' is not known to the DMS (or not distributed to cluster ${cluster ?? '-'})`);
  } else if (datasets.length === 1) schema = datasets[0];
  const e = ctx.settings.hashElection;
  const recordSize = typeof schema?.record_size === 'number' ? schema.record_size : e.recordSize;
  const targets = member ? sccTargets(s, node.cluster) : sccTargets(s, primaryCluster(s));
  return {
    cluster,
    schema_json: schema ? JSON.stringify(schema) : '',
    datasets,
    scc_targets: targets,
    replicas: member ? replicaSetOf(s, node.cluster) : [],
    quarantined: member ? replicaSetOf(s, node.cluster, true) : [],
    record_size: recordSize,
    devices: node.devices ?? [],
    hash_election: { algorithm: e.algorithm, chain_block_size: e.chainBlockSize, record_size: e.recordSize, computed_by: 'scc', offload: node.hash_offload_platform ?? 'cpu' },
    mtu_mode: ctx.settings.mtuMode,
    health_interval_ms: ctx.settings.healthIntervalMs,
    config_poll_ms: ctx.settings.configPollMs,
    ...(node.role === 'proxy' && s.policy && { policy: { version: s.policy.version, rego: s.policy.rego, ...(s.policy.data && { data: s.policy.data }) } }),
  };
}
