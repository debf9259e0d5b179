/**
 * `sccNode`: the SCC of an scc pipeline, a service (docs/scc.md): its replica set of SN_TARGETS (lag,
 * down/up, catch-up log), /health and /metrics and the command API, and the role's settings. The
 * `replicate` sink sends batches through its replica set; the `queryDispatch` service reads replica
 * health from it. Started before them, stopped after them: the replica set closes, then the servers.
 */
import { SccNode } from '../../nodes/scc/node';
import { ReplicaSet } from '../../nodes/scc/replicas';
import type { SnTarget } from '../../nodes/scc/settings';
import { tlsReplicaConnector } from '../../nodes/scc/linkTls';
import { needs, type ServiceType } from '../../pipelines/registry';
import { byteSize, int } from '../../pipelines/settings';
import { sccSetting } from '../stages/sccSetting';
import { usesIdentity } from './nodeIdentity';

const settings = {
  sn_targets: { ...sccSetting<SnTarget[]>('SN_TARGETS'), required: true, fallback: undefined },
  record_size: sccSetting<number>('RECORD_SIZE'),
  node_name: sccSetting<string>('NODE_NAME'),
  production_ip: sccSetting<string>('PRODUCTION_IP', 'address the ingest listener binds (shown in the start-up line and /health) — PRODUCTION_IP'),
  production_port: sccSetting<number>('PRODUCTION_PORT', 'ingest port (shown in the start-up line and /health) — PRODUCTION_PORT'),
  production_interface: sccSetting<string>('PRODUCTION_INTERFACE'),
  observability_interface: sccSetting<string>('OBSERVABILITY_INTERFACE'),
  observability_port: sccSetting<number>('OBSERVABILITY_PORT'),
  command_interface: sccSetting<string>('COMMAND_INTERFACE'),
  command_port: sccSetting<number>('COMMAND_PORT'),
  log_level: sccSetting<string>('LOG_LEVEL'),
  dms_url: sccSetting<string>('DMS_URL'),
  otel_grpc_url: sccSetting<string>('OTEL_GRPC_URL'),
  master_cpuset: sccSetting<number[]>('MASTER_CPUSET'),
  transport_cores: sccSetting<number>('TRANSPORT_CORES'),
  kv_cores: sccSetting<number>('KV_CORES'),
  platform_opt_in: sccSetting<string>('PLATFORM_OPT_IN'),
  max_lag_bytes: byteSize({ doc: 'record bytes a replica may have unsent before records wait for it', default: 64 * 1024 * 1024, min: 1024 * 1024, max: 16 * 1024 ** 3 }),
  ack_timeout_ms: int({ doc: 'a replica past the lag bound, or not acknowledging an eob, this long is marked down', default: 30_000, min: 100, max: 3_600_000 }),
  catch_up_log_bytes: byteSize({ doc: 'record bytes kept to catch up replicas that were down', default: 256 * 1024 * 1024, min: 0, max: 64 * 1024 ** 3 }),
};

/** What the `sccNode` service gives its users. */
export interface SccNodeService {
  /** NODE_NAME, as written (may be empty). */
  readonly nodeName: string;
  /** SN_TARGETS. */
  readonly targets: readonly SnTarget[];
  /** RECORD_SIZE. */
  readonly recordSize: number;
  /** COMMAND_INTERFACE. */
  readonly commandInterface: string;
  readonly replicas: ReplicaSet;
  readonly node: SccNode;
}

/** How a stage or service uses the SCC node. */
export const usesSccNode = needs<SccNodeService>('sccNode', 'the SCC node: its replica set of SN_TARGETS, /health, /metrics and command API');

/** `sccNode`: the SCC's replica set, servers and role settings. */
export const sccNodeType: ServiceType<typeof settings, { identity: typeof usesIdentity }, SccNodeService> = {
  name: 'sccNode',
  kind: 'service',
  doc: "The SCC node: its replica set of SN_TARGETS (lag bound, down/up, catch-up log), /health and /metrics on OBSERVABILITY_PORT and the command API on COMMAND_PORT; replicate sends through it, queryDispatch reads replica health from it.",
  settings,
  uses: { identity: usesIdentity },
  start: async (c, ctx) => {
    const id = ctx.services.identity;
    const replicas: ReplicaSet = new ReplicaSet({
      // Registered with the DMS: replication streams are mutual TLS (docs/control-plane.md).
      ...(id && { connect: tlsReplicaConnector(id) }),
      targets: c.sn_targets,
      recordSize: c.record_size,
      maxLagBytes: c.max_lag_bytes,
      ackTimeoutMs: c.ack_timeout_ms,
      logBytes: c.catch_up_log_bytes,
      onEvent: (m) => ctx.report(m),
      onLag: (name, batches) => node.metrics.replicaLag.set({ replica: name }, batches),
    });
    const node: SccNode = new SccNode({
      nodeName: c.node_name,
      replicas,
      targets: c.sn_targets,
      production: { ip: c.production_ip, port: c.production_port, interface: c.production_interface },
      observability: { interface: c.observability_interface, port: c.observability_port },
      command: { interface: c.command_interface, port: c.command_port },
      facts: { record_size: c.record_size, log_level: c.log_level, dms_url: c.dms_url },
    });
    if (id) node.observability.addHealthPart('identity', () => id.health());
    try {
      await node.start();
    } catch (err) {
      await replicas.close();
      throw err;
    }
    return {
      value: { nodeName: c.node_name, targets: c.sn_targets, recordSize: c.record_size, commandInterface: c.command_interface, replicas, node },
      stop: () => replicas.close().then(() => node.stop()),
    };
  },
};
