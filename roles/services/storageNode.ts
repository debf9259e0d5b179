/**
 * `storageNode`: the Storage Node of a storage-node pipeline, a service (docs/storage-node.md). It
 * recovers the node's devices and builds the batch index before any stage starts; `segmentStore`
 * writes batches into its store, `scan` reads them, and the listeners take their addresses from its
 * config.json. Stopped after every stage: open batches aborted, /health and /metrics closed.
 */
import path from 'node:path';
import { HASH_ALGORITHMS, zoneFieldsOf, type HashAlgorithmName } from '../../engine-rs/index';
import type { DmsNodeConfig } from '../../net/dmsConfigFeed';
import { StartTimeSettings, type StartTimeSetting } from '../../net/startTimeSettings';
import { defaultDevices, type StorageNodeConfig } from '../../nodes/storageNode/config';
import { resolveDevices } from '../../nodes/storageNode/deviceSource';
import { StorageNode } from '../../nodes/storageNode/node';
import { syncPeersOf, type SyncPeer } from '../../nodes/storageNode/peerLink';
import { QuerySchemas } from '../../nodes/storageNode/querySchemas';
import { needs, type ServiceType } from '../../pipelines/registry';
import { bool, int, oneOf, str, type Setting } from '../../pipelines/settings';
import { schemaDirSetting } from '../stages/schemaDirSetting';
import { storageNodeConfigFile } from '../stages/storageNodeConfig';
import { syncPeersSetting } from '../stages/syncPeersSetting';
import { followDmsSchemas } from '../../nodes/storageNode/dmsSchemas';
import { dmsConfigOf, usesIdentity } from './nodeIdentity';
import { MTU_MODES } from '../../net/mtuMode';
import { addNodeHostHealth, closeNodeHost, cpusetSetting, prepareNodeHost, setNodeHost } from './nodeHost';

/** `inner`, but empty (the operator set nothing) gives undefined: a registered node then takes the DMS's value. */
function unlessEmpty<T>(inner: Setting<T>): Setting<T | undefined> {
  return {
    ...inner,
    expects: `${inner.expects}, or empty`,
    fallback: undefined,
    parse: (v, ctx) => (v.value === '' || v.value === undefined || v.value === null ? { ok: true, value: undefined } : inner.parse(v, ctx)),
  };
}

/** Defaults where neither the operator nor the DMS gives a value (the reference's). */
export const STORAGE_NODE_DEFAULTS = { algorithm: 'sha512', blockSize: 64, recordSize: 150 } as const;

const settings = {
  config: storageNodeConfigFile("the node's config.json: node name, devices, drive strategy, OCF, ports (hd run --config <file> passes it as ${CONFIG_FILE})"),
  hash_algorithm: unlessEmpty(oneOf(HASH_ALGORITHMS, { doc: "hash chain algorithm — HASH_ALGORITHM; must be the SCC's; empty: the DMS's hash election when registered, else sha512", default: 'sha512' })),
  hash_chain_block_size: unlessEmpty(int({ doc: "record hashes per chain block — HASH_CHAIN_BLOCK_SIZE; must be the SCC's; empty: the DMS's hash election when registered, else 64", default: 64, min: 1, max: 1 << 20 })),
  record_size: unlessEmpty(int({ doc: "record size of an empty batch's segment when no record of its dataset arrived — RECORD_SIZE; empty: the DMS's elected RECORD_SIZE when registered, else 150", default: 150, min: 1, max: 65535 })),
  schema_dir: schemaDirSetting('dataset schemas (*.json, by schema id): new segments of a dataset with one keep zone maps of its fields, so queries skip blocks; empty: none'),
  sync_peers: syncPeersSetting("peer replicas to copy missing batches from at a cold boot (node_name:host:observability_port, comma-separated) — SYNC_PEERS; empty: the other Storage Nodes of the node's cluster on the DMS when registered, else none"),
  sync_max_bytes_per_s: int({ doc: 'segment bytes a cold-boot sync copies per second at most — SYNC_MAX_BYTES_PER_S; 0: no cap', default: 0, min: 0, max: Number.MAX_SAFE_INTEGER }),
  verify_on_start: bool({ doc: "recompute every stored segment's hash chain at start-up (false: header, footer and layout only)", default: true }),
  master_cpuset: cpusetSetting('cpuset every thread of the process is pinned to; CPUs the process may not use are refused at start; empty: nothing pinned (docs/storage-node.md, "CPU pinning and MTU mode") — MASTER_CPUSET'),
  transport_cores: int({ doc: "with master_cpuset: the event loop (every socket's I/O on the kernel path) on the set's first N CPUs — TRANSPORT_CORES", default: 1, min: 1, max: 1024 }),
  kv_cores: int({ doc: "with master_cpuset: the engine's workers (libuv's pool: scans, segment I/O; the hashing pool) on the set's last N CPUs — KV_CORES", default: 1, min: 1, max: 1024 }),
  mtu_mode: oneOf(MTU_MODES, { doc: "the data plane's MTU mode, instance-wide (the DMS's): standard or jumbo (config.json's production_interface, or the interface of production_ip, must have an MTU ≥ 8550) — MTU_MODE", default: 'standard' }),
  data_plane_subnet: str({ doc: "the data-plane subnet (CIDR): with a user-space NIC as production_interface, production_ip must be an address of it, and its hosts are reached through the NIC — PLATFORM_DATA_PLANE_SUBNET", default: '10.150.0.0/24' }),
};

/** What a node runs with beyond its config.json, after the precedence: the operator's setting, then the DMS, then the default. */
export interface StorageNodeRunSettings {
  readonly algorithm: HashAlgorithmName;
  readonly blockSize: number;
  /** RECORD_SIZE: the record size of an empty batch's segment. */
  readonly recordSize: number;
  readonly syncPeers: readonly SyncPeer[];
  /** Where each value came from, for the start-up line and /health (`dms-cache`: the DMS's, from the node's cache of it while the DMS did not answer). */
  readonly from: { readonly hash: SettingFrom; readonly recordSize: SettingFrom; readonly syncPeers: 'settings' | 'dms' | 'dms-cache' | 'none' };
}

/** Where a setting's value came from. */
export type SettingFrom = 'settings' | 'dms' | 'dms-cache' | 'default';

/**
 * The precedence of docs/storage-node.md, "Configuration from the DMS": a value the operator set
 * (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE, RECORD_SIZE, SYNC_PEERS) wins; else, registered, the DMS's
 * (its hash election; the other Storage Nodes of the node's cluster with their registered
 * observability address); else the default. An election naming an algorithm this build lacks is refused.
 * `dmsOrigin`: whether `dms` is the DMS's answer or the node's cache of it (the DMS did not answer).
 */
export function runSettingsOf(
  c: { readonly hash_algorithm: HashAlgorithmName | undefined; readonly hash_chain_block_size: number | undefined; readonly record_size: number | undefined; readonly sync_peers: readonly SyncPeer[] },
  nodeName: string,
  dms: DmsNodeConfig | undefined,
  dmsOrigin: 'dms' | 'dms-cache' = 'dms',
): StorageNodeRunSettings {
  const e = dms?.hashElection;
  if (e && c.hash_algorithm === undefined && !(HASH_ALGORITHMS as readonly string[]).includes(e.algorithm)) {
    throw new Error(`the DMS elected hash algorithm '${e.algorithm}', which this build lacks (${HASH_ALGORITHMS.join(', ')}); set HASH_ALGORITHM only if every SCC uses it too`);
  }
  const dmsPeers = dms ? syncPeersOf(dms.replicas, nodeName) : [];
  return {
    algorithm: c.hash_algorithm ?? (e?.algorithm as HashAlgorithmName | undefined) ?? STORAGE_NODE_DEFAULTS.algorithm,
    blockSize: c.hash_chain_block_size ?? e?.chainBlockSize ?? STORAGE_NODE_DEFAULTS.blockSize,
    recordSize: c.record_size ?? e?.recordSize ?? STORAGE_NODE_DEFAULTS.recordSize,
    syncPeers: c.sync_peers.length > 0 ? c.sync_peers : dmsPeers,
    from: {
      hash: c.hash_algorithm !== undefined && c.hash_chain_block_size !== undefined ? 'settings' : e ? dmsOrigin : c.hash_algorithm !== undefined || c.hash_chain_block_size !== undefined ? 'settings' : 'default',
      recordSize: c.record_size !== undefined ? 'settings' : e ? dmsOrigin : 'default',
      syncPeers: c.sync_peers.length > 0 ? 'settings' : dmsPeers.length > 0 ? dmsOrigin : 'none',
    },
  };
}

const runSettings = new WeakMap<StorageNode, StorageNodeRunSettings>();

/** The settings a running node of this service took (the stages read the block size and RECORD_SIZE from it). */
export function runSettingsOfNode(node: StorageNode): StorageNodeRunSettings | undefined {
  return runSettings.get(node);
}

/** How a stage uses the Storage Node. */
export const usesStorageNode = needs<StorageNode>('storageNode', 'the Storage Node whose batches it writes or reads, and whose config.json gives its addresses');

/** `storageNode`: the Storage Node's devices, batch index and store, /health and /metrics. */
export const storageNodeType: ServiceType<typeof settings, { identity: typeof usesIdentity }, StorageNode> = {
  name: 'storageNode',
  kind: 'service',
  doc: "The Storage Node of config.json: recovers its devices and builds the batch index at start, serves /health and /metrics; segmentStore writes into it and scan reads from it.",
  settings,
  uses: { identity: usesIdentity },
  start: async (c, ctx) => {
    // MTU mode against the production interface, and CPU pinning: refused before the devices are touched.
    const host = await prepareNodeHost({
      mtuMode: c.mtu_mode,
      productionInterface: { value: c.config.productionInterface, setting: 'production_interface' },
      productionIp: { value: c.config.productionIp, setting: 'production_ip' },
      dataPlaneSubnet: { value: c.data_plane_subnet, setting: 'PLATFORM_DATA_PLANE_SUBNET' },
      masterCpuset: c.master_cpuset,
      transportCores: c.transport_cores,
      kvCores: c.kv_cores,
      report: (m, level) => ctx.report(m, level),
    });
    const schemas = new QuerySchemas(c.schema_dir);
    const id = ctx.services.identity;
    const feed = id ? dmsConfigOf(id) : undefined;
    // Started on a stored certificate (no registration answer): the DMS's configuration is read first,
    // a few times, since the hash election decides how new segments are chained and the devices
    // where they are; if the DMS does not answer, the node's cache of it (the feed says so).
    const dms = feed ? await feed.ready(3) : undefined;
    const origin = feed?.source === 'dms-cache' ? 'dms-cache' : 'dms';
    if (feed && !dms) ctx.report('the DMS has not answered with this node\'s configuration: running on the settings and defaults (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE, RECORD_SIZE, SYNC_PEERS)', 'warn');
    const run = runSettingsOf(c, c.config.nodeName, dms, origin);
    const devices = resolveDevices(c.config, { registered: id !== undefined, config: dms, origin, ...(feed?.cacheFile !== undefined && { cacheFile: feed.cacheFile }) });
    // Registered: the DMS's schemas too (a file of schema_dir wins), so new segments keep zone maps.
    const unfollow = feed ? followDmsSchemas(feed, schemas, (m, level) => ctx.report(m, level)) : () => undefined;
    const zoneFields = (dataset: string, recordSize: number): ReturnType<typeof zoneFieldsOf> => {
      const s = schemas.get(dataset);
      return s && s.recordSize === recordSize ? zoneFieldsOf(s) : [];
    };
    const node = new StorageNode({ config: devices.config, algorithm: run.algorithm, blockSize: run.blockSize, verifyOnStart: c.verify_on_start, zoneFields });
    runSettings.set(node, run);
    try {
      await node.start();
    } catch (err) {
      unfollow();
      closeNodeHost(host);
      throw err;
    }
    // The election and the devices are taken once: a later change on the DMS waits for a restart, visibly.
    const startTime = feed ? new StartTimeSettings(feed, startTimeSettingsOf(c, run, devices.config), (m, level) => ctx.report(m, level)) : undefined;
    // What the node took and from where (docs/storage-node.md, "Configuration from the DMS").
    node.observability.addHealthPart('settings', () => {
      const later = startTime?.health();
      return {
        status: later?.status ?? 'ok',
        hash_algorithm: run.algorithm,
        hash_chain_block_size: run.blockSize,
        record_size: run.recordSize,
        sync_peers: run.syncPeers.map((p) => p.name),
        devices: devices.config.storageDevices.map((d) => d.name),
        from: { ...run.from, devices: devices.from },
        ...(later && Object.keys(later.pending).length > 0 && { pending_restart: later.pending }),
        ...(later && Object.keys(later.overridden).length > 0 && { dms_overridden: later.overridden }),
      };
    });
    if (feed) node.observability.addHealthPart('dms_config', () => ({ status: 'ok', ...feed.health() }));
    addNodeHostHealth(node.observability, host);
    setNodeHost(node, host);
    if (id) {
      // Registered with the DMS: /health shows the certificate and the peers seen.
      node.observability.addHealthPart('identity', () => id.health());
      // Batch filters: over mutual TLS with the node's certificate, to the Proxy only.
      node.useIdentity(id);
    }
    if (devices.from !== 'config') ctx.report(`devices from ${devices.from === 'default' ? 'the default (config.json has no storage_devices, the DMS declares none)' : devices.from === 'dms' ? 'the DMS' : "the DMS's cached configuration"}: ${devices.config.storageDevices.map((d) => `${d.name} (${d.type}, ${d.address})`).join(', ')}`, 'info');
    // Cold-boot synchronisation in the background: `syncing` until the peers' batches are copied (docs/storage-node.md).
    if (run.from.syncPeers === 'dms' || run.from.syncPeers === 'dms-cache') ctx.report(`cold-boot sync peers from the ${run.from.syncPeers === 'dms' ? 'DMS' : "DMS's cached configuration"}: ${run.syncPeers.map((p) => `${p.name} (${p.host}:${p.port})`).join(', ')}`, 'info');
    void node.startSync(run.syncPeers, { maxBytesPerSecond: c.sync_max_bytes_per_s }).catch((err: unknown) => ctx.report(`cold-boot sync stopped: ${(err as Error).message}`, 'error'));
    return {
      value: node,
      stop: async () => {
        startTime?.stop();
        unfollow();
        await node.stop();
        closeNodeHost(host);
      },
    };
  },
};

/**
 * The settings a Storage Node takes from the DMS once (net/startTimeSettings.ts): the hash election,
 * since the SCC's closing hashes are checked against the chain this node computes with it, and the
 * devices, since they hold the segments recovery indexed at start. What a restart would take is the
 * same precedence applied to the DMS's configuration now.
 */
function startTimeSettingsOf(c: Parameters<typeof runSettingsOf>[0], run: StorageNodeRunSettings, config: StorageNodeConfig): StartTimeSetting[] {
  const restart = (cfg: DmsNodeConfig): StorageNodeRunSettings | undefined => {
    try {
      return runSettingsOf(c, config.nodeName, cfg);
    } catch {
      return undefined; // an algorithm this build lacks: the DMS's own value is shown
    }
  };
  const devicesOf = (list: readonly { name: string; type: string; address: string }[]): unknown => list.map((d) => ({ name: d.name, type: d.type, address: path.resolve(config.baseDir, d.address) }));
  return [
    {
      name: 'hash_election',
      inForce: { algorithm: run.algorithm, chain_block_size: run.blockSize },
      atRestart: (cfg) => {
        const r = restart(cfg);
        return r ? { algorithm: r.algorithm, chain_block_size: r.blockSize } : { algorithm: cfg.hashElection?.algorithm, chain_block_size: cfg.hashElection?.chainBlockSize };
      },
      fromDms: (cfg) => cfg.hashElection && { algorithm: cfg.hashElection.algorithm, chain_block_size: cfg.hashElection.chainBlockSize },
      why: "every batch's closing hash from the SCC is checked against the chain this node computes, and the SCC keeps its election until it restarts too (docs/scc.md, \"Hash election\")",
    },
    {
      name: 'record_size',
      inForce: run.recordSize,
      atRestart: (cfg) => restart(cfg)?.recordSize ?? cfg.hashElection?.recordSize,
      fromDms: (cfg) => cfg.hashElection?.recordSize,
      why: "it is the size of an empty batch's segment, and the SCC keeps its own until it restarts",
    },
    {
      name: 'devices',
      inForce: devicesOf(config.storageDevices),
      atRestart: (cfg) => (config.storageDevicesSet ? devicesOf(config.storageDevices) : devicesOf(cfg.devices.length > 0 ? cfg.devices : defaultDevices(config.nodeName))),
      fromDms: (cfg) => (cfg.devices.length > 0 ? devicesOf(cfg.devices) : undefined),
      why: 'the devices hold the segments recovery indexed at start',
    },
  ];
}
