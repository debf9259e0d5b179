/**
 * `storageNode`: the Storage Node of a storage-node pipeline, a service (docs/storage-node.md). It
 * recovers the node's devices and builds the batch index before any stage starts; `segmentStore`
 * writes batches into its store, `scan` reads them, and the listeners take their addresses from its
 * config.json. Stopped after every stage: open batches aborted, /health and /metrics closed.
 */
import { HASH_ALGORITHMS, zoneFieldsOf } from '../../engine-rs/index';
import { StorageNode } from '../../nodes/storageNode/node';
import { QuerySchemas } from '../../nodes/storageNode/querySchemas';
import { needs, type ServiceType } from '../../pipelines/registry';
import { bool, int, oneOf } from '../../pipelines/settings';
import { schemaDirSetting } from '../stages/schemaDirSetting';
import { storageNodeConfigFile } from '../stages/storageNodeConfig';
import { syncPeersSetting } from '../stages/syncPeersSetting';
import { followDmsSchemas } from '../../nodes/storageNode/dmsSchemas';
import { dmsConfigOf, usesIdentity } from './nodeIdentity';

const settings = {
  config: storageNodeConfigFile("the node's config.json: node name, devices, drive strategy, OCF, ports (hd run --config <file> passes it as ${CONFIG_FILE})"),
  hash_algorithm: oneOf(HASH_ALGORITHMS, { doc: "hash chain algorithm — HASH_ALGORITHM; must be the SCC's", default: 'sha512' }),
  hash_chain_block_size: int({ doc: "record hashes per chain block — HASH_CHAIN_BLOCK_SIZE; must be the SCC's", default: 64, min: 1, max: 1 << 20 }),
  schema_dir: schemaDirSetting('dataset schemas (*.json, by schema id): new segments of a dataset with one keep zone maps of its fields, so queries skip blocks; empty: none'),
  sync_peers: syncPeersSetting('peer replicas to copy missing batches from at a cold boot (node_name:host:observability_port, comma-separated) — SYNC_PEERS; empty: none'),
  sync_max_bytes_per_s: int({ doc: 'segment bytes a cold-boot sync copies per second at most — SYNC_MAX_BYTES_PER_S; 0: no cap', default: 0, min: 0, max: Number.MAX_SAFE_INTEGER }),
  verify_on_start: bool({ doc: "recompute every stored segment's hash chain at start-up (false: header, footer and layout only)", default: true }),
};

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
    const schemas = new QuerySchemas(c.schema_dir);
    const id = ctx.services.identity;
    const feed = id ? dmsConfigOf(id) : undefined;
    // Registered: the DMS's schemas too (a file of schema_dir wins), so new segments keep zone maps.
    const unfollow = feed ? followDmsSchemas(feed, schemas, (m) => ctx.report(m)) : () => undefined;
    const zoneFields = (dataset: string, recordSize: number): ReturnType<typeof zoneFieldsOf> => {
      const s = schemas.get(dataset);
      return s && s.recordSize === recordSize ? zoneFieldsOf(s) : [];
    };
    const node = new StorageNode({ config: c.config, algorithm: c.hash_algorithm, blockSize: c.hash_chain_block_size, verifyOnStart: c.verify_on_start, zoneFields });
    try {
      await node.start();
    } catch (err) {
      unfollow();
      throw err;
    }
    if (id) {
      // Registered with the DMS: /health shows the certificate and the peers seen.
      node.observability.addHealthPart('identity', () => id.health());
      // Batch filters: over mutual TLS with the node's certificate, to the Proxy only.
      node.useIdentity(id);
    }
    // Cold-boot synchronisation in the background: `syncing` until the peers' batches are copied (docs/storage-node.md).
    void node.startSync(c.sync_peers, { maxBytesPerSecond: c.sync_max_bytes_per_s }).catch((err: unknown) => ctx.report(`cold-boot sync stopped: ${(err as Error).message}`));
    return {
      value: node,
      stop: async () => {
        unfollow();
        await node.stop();
      },
    };
  },
};
