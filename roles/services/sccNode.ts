/**
 * `sccNode`: the SCC of an scc pipeline, a service (docs/scc.md): its replica set of SN_TARGETS (lag,
 * down/up, catch-up log), /health and /metrics and the command API, and the role's settings. The
 * `replicate` sink sends batches through its replica set; the `queryDispatch` service reads replica
 * health from it. Started before them, stopped after them: the replica set closes, then the servers.
 */
import { DatasetRecordSizes } from '../../nodes/scc/datasetRecordSizes';
import { SccNode } from '../../nodes/scc/node';
import { ReplicaSet } from '../../nodes/scc/replicas';
import type { SnTarget } from '../../nodes/scc/settings';
import { tlsReplicaConnector } from '../../nodes/scc/linkTls';
import { observabilityLookup, parseObservabilityPorts, syncStateProbe, type ObservabilityLookup } from '../../nodes/scc/syncProbe';
import { needs, type ServiceType } from '../../pipelines/registry';
import { byteSize, int, oneOf, str } from '../../pipelines/settings';
import { isIP } from 'node:net';
import { NormReplication } from '../../nodes/scc/normReplication';
import { datagramPayloadBytes } from '../../net/mtuMode';
import { optionalSccSetting, sccSetting } from '../stages/sccSetting';
import { dmsConfigOf, dmsEndpointOf, usesIdentity } from './nodeIdentity';
import { BadBatchReporter } from '../../nodes/scc/badBatchReporter';
import { followDms, targetsOf } from '../../nodes/scc/dmsConfig';
import { SccHashElection } from '../../nodes/scc/hashElection';
import { logLine } from '../../lib/logging';
import type { MtuMode } from '../../net/mtuMode';
import { addNodeHostHealth, closeNodeHost, prepareNodeHost } from './nodeHost';
import { parseProductionInterface } from '../../transport/productionInterface';

const settings = {
  sn_targets: optionalSccSetting<SnTarget[]>('SN_TARGETS', 'the replicas, node_name:ip:control_port:prod_port, comma-separated; empty: the Storage Nodes of the cluster on the DMS (required without DMS_URL) — SN_TARGETS'),
  record_size: optionalSccSetting<number>('RECORD_SIZE', "record size of datasets no schema names; empty: the DMS's elected RECORD_SIZE, else 150 — RECORD_SIZE"),
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
  master_cpuset: sccSetting<number[] | undefined>('MASTER_CPUSET'),
  transport_cores: sccSetting<number>('TRANSPORT_CORES'),
  kv_cores: sccSetting<number>('KV_CORES'),
  mtu_mode: sccSetting<MtuMode>('MTU_MODE'),
  platform_opt_in: sccSetting<string>('PLATFORM_OPT_IN'),
  data_plane_subnet: str({ doc: "the data-plane subnet (CIDR): with a user-space NIC as PRODUCTION_INTERFACE, PRODUCTION_IP must be an address of it, and its hosts (the Storage Nodes, query clients) are reached through the NIC — PLATFORM_DATA_PLANE_SUBNET", default: '10.150.0.0/24' }),
  max_lag_bytes: byteSize({ doc: 'record bytes a replica may have unsent before records wait for it', default: 64 * 1024 * 1024, min: 1024 * 1024, max: 16 * 1024 ** 3 }),
  ack_timeout_ms: int({ doc: 'a replica past the lag bound, or not acknowledging an eob, this long is marked down', default: 30_000, min: 100, max: 3_600_000 }),
  sn_observability_ports: {
    expects: 'comma-separated node_name:observability_port of SN_TARGETS nodes, or empty',
    doc: "each Storage Node's observability port (node_name:port, comma-separated; its host is SN_TARGETS'): the SCC asks /v1/sync-state there and keeps a node that reports cold-boot synchronisation out of queries and acknowledgements — SN_OBSERVABILITY_PORTS; wins over the port a node registered with the DMS; empty: the DMS's, else never asked",
    required: false,
    fallback: new Map<string, number>(),
    parse: (v: { value: unknown }) => {
      if (typeof v.value !== 'string') return { ok: false as const, expected: 'a string node_name:port,...' };
      try {
        return { ok: true as const, value: parseObservabilityPorts(v.value) };
      } catch (err) {
        return { ok: false as const, expected: `comma-separated node_name:observability_port; ${(err as Error).message}` };
      }
    },
  },
  replication: oneOf(['tcp', 'norm'] as const, { doc: 'tcp: every batch on one HDWP stream per replica; norm: once on the NORM multicast group, eob and acknowledgements per replica over TCP (docs/replication-norm.md) — REPLICATION', default: 'tcp' }),
  norm_group: str({ doc: 'NORM multicast group the Storage Nodes join — NORM_GROUP', default: '239.192.0.88' }),
  norm_port: int({ doc: "NORM UDP port — NORM_PORT (the reference's 6988)", default: 6988, min: 1, max: 65535 }),
  norm_interface: str({ doc: "interface NORM sends on — NORM_INTERFACE; empty: the default route's", default: '', allowEmpty: true }),
  norm_tx_rate: int({ doc: "NORM send rate in bits/s — NORM_TX_RATE; 0: NORM's congestion control", default: 100_000_000, min: 0, max: 100_000_000_000 }),
  catch_up_log_bytes: byteSize({ doc: 'record bytes kept to catch up replicas that were down', default: 256 * 1024 * 1024, min: 0, max: 64 * 1024 ** 3 }),
};

/** What the `sccNode` service gives its users. */
export interface SccNodeService {
  /** NODE_NAME, as written (may be empty). */
  readonly nodeName: string;
  /** The replicas now: SN_TARGETS, or the cluster's Storage Nodes on the DMS (they may change while it runs). */
  readonly targets: readonly SnTarget[];
  /** RECORD_SIZE: the record size of datasets no schema names. */
  readonly recordSize: number;
  /** Each dataset's record size (its schema's on the DMS, else RECORD_SIZE). */
  readonly recordSizes: DatasetRecordSizes;
  /** The hash election in force: the `hashChain` stage settles it with HASH_ALGORITHM / HASH_CHAIN_BLOCK_SIZE (docs/scc.md, "Hash election"). */
  readonly election: SccHashElection;
  /** COMMAND_INTERFACE. */
  readonly commandInterface: string;
  /** MTU_MODE, instance-wide: datagram senders size datagrams with `datagramPayloadBytes(mtuMode)` (net/mtuMode.ts). */
  readonly mtuMode: MtuMode;
  readonly replicas: ReplicaSet;
  readonly node: SccNode;
  /** Registered with the DMS: reports the bbns of the Storage Nodes to it (docs/scc.md, "Bad batch notices to the DMS"). */
  readonly badBatches: BadBatchReporter | undefined;
  /** Where each replica's observability port is: SN_OBSERVABILITY_PORTS, else the DMS's (the sync probe and query windows ask there). */
  readonly observabilityOf: ObservabilityLookup;
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
    const iface = parseProductionInterface(c.production_interface);
    if (c.replication === 'norm' && 'kind' in iface && iface.kind === 'userSpace') {
      throw new Error(`REPLICATION=norm sends on the kernel's UDP sockets, which cannot reach the user-space NIC PRODUCTION_INTERFACE=${c.production_interface}: use REPLICATION=tcp (its streams run through the NIC), or a kernel interface (docs/kernel-bypass.md)`);
    }
    // MTU mode against the production interface, and CPU pinning (docs/scc.md, "CPU pinning"): refused before anything starts.
    const host = await prepareNodeHost({
      mtuMode: c.mtu_mode,
      productionInterface: { value: c.production_interface, setting: 'PRODUCTION_INTERFACE' },
      productionIp: { value: c.production_ip, setting: 'PRODUCTION_IP' },
      dataPlaneSubnet: { value: c.data_plane_subnet, setting: 'PLATFORM_DATA_PLANE_SUBNET' },
      masterCpuset: c.master_cpuset,
      transportCores: c.transport_cores,
      kvCores: c.kv_cores,
      report: (m, level) => ctx.report(m, level),
    });
    try {
      const id = ctx.services.identity;
      const feed = id ? dmsConfigOf(id) : undefined;
      // Started on a stored certificate (no registration answer): the DMS's configuration is read once
      // first; if the DMS does not answer, the SCC's cache of it (its state directory; the feed says so).
      const dms = feed ? await feed.ready(1) : undefined;
      const origin = feed?.source === 'dms-cache' ? 'dms-cache' : 'dms';
      // Precedence (docs/scc.md, "Configuration from the DMS"): a variable the operator set, then the DMS, then the default.
      const targets = c.sn_targets ?? (dms ? targetsOf(dms.replicas) : undefined);
      if (!targets) {
        const cache = feed?.cacheFile;
        throw new Error(id ? `SN_TARGETS is empty and the DMS has not answered with the replica set yet${cache ? ` (nor is a configuration of it cached in ${cache})` : ''}; set SN_TARGETS or start the SCC when the DMS answers` : 'SN_TARGETS is required without DMS_URL (with DMS_URL, empty SN_TARGETS takes the Storage Nodes of the cluster from the DMS)');
      }
      const election = new SccHashElection(feed, origin, c.record_size, logLine(`scc '${c.node_name}': `));
      const recordSize = election.current.recordSize;
      const recordSizes = new DatasetRecordSizes(recordSize);
      if (c.replication === 'norm' && isIP(c.norm_group) === 0) throw new Error(`NORM_GROUP must be an IP address, got '${c.norm_group}'`);
      // NORM segments are the MTU mode's datagram payload (Standard 1200, Jumbo 8500).
      const norm = c.replication === 'norm' ? new NormReplication({ group: c.norm_group, port: c.norm_port, interface: c.norm_interface, segmentSize: datagramPayloadBytes(c.mtu_mode), txRateBps: c.norm_tx_rate }) : undefined;
      const observabilityOf = observabilityLookup(c.sn_observability_ports, () => feed?.config?.replicas);
      const replicas: ReplicaSet = new ReplicaSet({
        ...(norm && { norm }),
        // Registered with the DMS: replication streams are mutual TLS (docs/control-plane.md).
        ...(id && { connect: tlsReplicaConnector(id) }),
        targets,
        recordSize,
        maxLagBytes: c.max_lag_bytes,
        ackTimeoutMs: c.ack_timeout_ms,
        logBytes: c.catch_up_log_bytes,
        onEvent: (m, level) => ctx.report(m, level),
        onLag: (name, batches) => node.metrics.replicaLag.set({ replica: name }, batches),
        // Observability ports: SN_OBSERVABILITY_PORTS' entries, else those the nodes registered with the DMS (read at each probe).
        ...((c.sn_observability_ports.size > 0 || feed) && { syncProbe: syncStateProbe(observabilityOf, id?.identity) }),
      });
      const node: SccNode = new SccNode({
        nodeName: c.node_name,
        replicas,
        targets,
        production: { ip: c.production_ip, port: c.production_port, interface: c.production_interface },
        observability: { interface: c.observability_interface, port: c.observability_port },
        command: { interface: c.command_interface, port: c.command_port, ...(id && { tls: id }) },
        facts: { record_size: recordSize, log_level: c.log_level, dms_url: c.dms_url, from: { replicas: c.sn_targets !== undefined ? 'settings' : origin, record_size: election.current.from.recordSize } },
      });
      // The election in force, where it came from, and a changed one the SCC refuses until it restarts.
      node.observability.addHealthPart('hash_election', () => election.health());
      addNodeHostHealth(node.observability, host);
      if (feed) node.observability.addHealthPart('dms_config', () => ({ status: 'ok', ...feed.health() }));
      if (id) node.observability.addHealthPart('identity', () => id.health());
      const endpoint = id && dmsEndpointOf(id);
      const badBatches = id && endpoint ? new BadBatchReporter({ ...endpoint, identity: id.identity, log: logLine(`scc '${c.node_name}': `) }) : undefined;
      // nodes/scc/dmsConfig.ts logs bare lines: logLine guesses their levels (the documented fallback).
      const unfollow = feed ? followDms(feed, { recordSizes, replicas, fixedTargets: c.sn_targets !== undefined, log: logLine(`scc '${c.node_name}': `) }) : () => undefined;
      if (feed) node.observability.addHealthPart('datasets', () => ({ status: 'ok', record_size: recordSize, datasets: Object.fromEntries(feed.config?.recordSizes ?? []) }));
      try {
        await node.start();
      } catch (err) {
        unfollow();
        await badBatches?.stop();
        await replicas.close();
        throw err;
      }
      return {
        value: {
          nodeName: c.node_name,
          get targets() {
            return replicas.targets;
          },
          recordSize,
          recordSizes,
          election,
          commandInterface: c.command_interface,
          mtuMode: c.mtu_mode,
          replicas,
          node,
          badBatches,
          observabilityOf,
        },
        stop: async () => {
          election.stop();
          unfollow();
          await badBatches?.stop();
          await replicas.close();
          await node.stop();
          closeNodeHost(host);
        },
      };
    } catch (err) {
      // The user-space NIC (if any) goes with the node that failed to start.
      closeNodeHost(host);
      throw err;
    }
  },
};
