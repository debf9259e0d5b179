import path from 'node:path';
import { nodeIdentityOf } from '../../net/nodeIdentityRegistry';
import { HASH_ALGORITHMS, zoneFieldsOf } from '../../engine-rs/index';
import { ConfigError, loadStorageNodeConfig, type StorageNodeConfig } from '../../nodes/storageNode/config';
import { StorageNode } from '../../nodes/storageNode/node';
import { publishStorageNode } from '../../nodes/storageNode/queryNodeRegistry';
import { QuerySchemas } from '../../nodes/storageNode/querySchemas';
import { segmentStore } from '../../nodes/storageNode/segmentStore';
import type { SinkType } from '../../pipelines/registry';
import { bool, int, oneOf, type Setting } from '../../pipelines/settings';
import { schemaDirSetting } from './schemaDirSetting';

/**
 * A Storage Node `config.json` setting: read and validated when the pipeline loads, so `hd validate`
 * reports every bad key at the line of the setting.
 */
export function storageNodeConfigFile(doc: string): Setting<StorageNodeConfig> {
  return {
    expects: 'a Storage Node config.json (see docs/storage-node.md)',
    doc,
    required: true,
    parse(v, ctx) {
      if (typeof v.value !== 'string' || v.value === '') return { ok: false, expected: 'a Storage Node config.json path' };
      try {
        return { ok: true, value: loadStorageNodeConfig(path.resolve(ctx.baseDir, v.value)) };
      } catch (err) {
        if (err instanceof ConfigError) return { ok: false, expected: `a valid Storage Node config; ${err.message}` };
        throw err;
      }
    },
  };
}

const settings = {
  config: storageNodeConfigFile('the node\'s config.json: devices, drive strategy, OCF, ports (hd run --config <file> passes it as ${CONFIG_FILE})'),
  hash_algorithm: oneOf(HASH_ALGORITHMS, { doc: 'hash chain algorithm — HASH_ALGORITHM; must be the SCC\'s', default: 'sha512' }),
  hash_chain_block_size: int({ doc: 'record hashes per chain block — HASH_CHAIN_BLOCK_SIZE; must be the SCC\'s', default: 64, min: 1, max: 1 << 20 }),
  record_size: int({ doc: 'record size of an empty batch\'s segment when no record of its dataset arrived (RECORD_SIZE)', default: 150, min: 1, max: 65535 }),
  schema_dir: schemaDirSetting('dataset schemas (*.json, by schema id): new segments of a dataset with one keep zone maps of its fields, so queries skip blocks; empty: none'),
  verify_on_start: bool({ doc: 'recompute every stored segment\'s hash chain at start-up (false: header, footer and layout only)', default: true }),
};

/** `segmentStore`: the Storage Node's persist sink; starts the node (recovery, /health, /metrics) when the pipeline runs. */
export const segmentStoreStage: SinkType<typeof settings> = {
  name: 'segmentStore',
  kind: 'sink',
  doc: 'Persists batched records as one segment per batch on the Storage Node\'s devices; commits and acknowledges on eob, discards on bbn.',
  unit: 'records',
  input: 'batched-records',
  settings,
  create: (c, ctx) => {
    const schemas = new QuerySchemas(c.schema_dir);
    const zoneFields = (dataset: string, recordSize: number): ReturnType<typeof zoneFieldsOf> => {
      const s = schemas.get(dataset);
      return s && s.recordSize === recordSize ? zoneFieldsOf(s) : [];
    };
    const node = new StorageNode({ config: c.config, algorithm: c.hash_algorithm, blockSize: c.hash_chain_block_size, verifyOnStart: c.verify_on_start, zoneFields });
    // The query stages of the pipeline (scan, resultStream) read through this node.
    const withdraw = publishStorageNode(node);
    return segmentStore({
      open: async () => {
        const store = await node.start();
        // Registered with the DMS (the nodeIdentity stage): /health shows the certificate and the peers seen.
        const pending = nodeIdentityOf(c.config.nodeName);
        if (pending) {
          const id = await pending;
          node.observability.addHealthPart('identity', () => id.health());
          // Batch filters: over mutual TLS with the node's certificate, to the Proxy only.
          node.useIdentity(id);
        }
        return store;
      },
      close: async () => {
        withdraw();
        await node.stop();
      },
      defaultRecordSize: c.record_size,
      counters: ctx.counters,
      flow: ctx.flow,
      progress: ctx.progress,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w),
    });
  },
};
