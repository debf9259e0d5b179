import { availableParallelism } from 'node:os';
import { queryMetrics } from '../../nodes/storageNode/queryMetrics';
import { DEFAULT_STEP_BYTES, nodeScanSource } from '../../nodes/storageNode/queryScan';
import { QuerySchemas } from '../../nodes/storageNode/querySchemas';
import { ReadScheduler } from '../../operators/readScheduler';
import { scan } from '../../operators/scan';
import { defineOperator } from '../../pipelines/registry';
import { byteSize, int } from '../../pipelines/settings';
import { followDmsSchemas } from '../../nodes/storageNode/dmsSchemas';
import { dmsConfigOf, usesIdentity } from '../services/nodeIdentity';
import { runSettingsOfNode, STORAGE_NODE_DEFAULTS, usesStorageNode } from '../services/storageNode';
import { recordCacheSetting, applyRecordCache } from './recordCacheSetting';
import { schemaDirSetting } from './schemaDirSetting';
import { processLogger } from '../../lib/logging';
import { chooseFilterDevice, filterDeviceLine, showFilterDevice, type FilterDevice } from './filterDevice';

const settings = {
  schema_dir: schemaDirSetting('dataset schemas (*.json, by schema id) that query filters compile against; empty: queries without filters only'),
  hash_chain_block_size: int({ doc: "records per segment block — HASH_CHAIN_BLOCK_SIZE; sizes read steps; 0 (default): the storageNode service's (HASH_CHAIN_BLOCK_SIZE, else the DMS's election)", default: 0, min: 0, max: 1 << 20 }),
  read_slots: int({ doc: 'block reads in flight at once over all queries; weighted fair queues by query_qos share them', default: 2, min: 1, max: 64 }),
  step_bytes: byteSize({ doc: 'record bytes one read step covers (at least one block); a cancel stops reading within one step', default: DEFAULT_STEP_BYTES, min: 4096, max: 16 * 1024 * 1024 }),
  query_threads: int({ doc: "batches of one query scanned at once, each on its own libuv pool thread (QUERY_THREADS); 0: every core this process is given (os.availableParallelism); read_slots is raised to at least this", default: 0, min: 0, max: 1024 }),
  max_pending_chunks: int({ doc: "result chunks of one query waiting for its client before that query's reads pause", default: 4, min: 1, max: 64 }),
  record_cache_bytes: recordCacheSetting(),
};

/** `scan`: reads each query's batches with the pushed-down filters (docs/query.md, docs/storage-node.md "Queries"). */
export const scanStage = defineOperator({
  name: 'scan',
  kind: 'operator',
  doc: "Scans each query's batches on the Storage Node with its filters (zone maps, engine-rs kernel, verify_hash), in weighted fair read queues by query_qos; emits chunks of matching records and one eob or bbn per batch.",
  unit: 'records',
  input: 'queries',
  output: 'query-results',
  settings,
  uses: { node: usesStorageNode, identity: usesIdentity },
  create: (c, ctx) => {
    const n = ctx.services.node;
    const schemas = new QuerySchemas(c.schema_dir);
    // Registered: the schemas the DMS distributes to the node's cluster too, followed while it runs.
    const id = ctx.services.identity;
    const feed = id ? dmsConfigOf(id) : undefined;
    if (feed) followDmsSchemas(feed, schemas, (m) => ctx.report(m));
    for (const p of schemas.problems) ctx.report(`schema file ${p.file} not loaded: ${p.message}`);
    // The GPU opens off the event loop; scans started before it is on filter on the CPU kernel.
    let device: FilterDevice | undefined;
    showFilterDevice(n.observability, () => device);
    void chooseFilterDevice(n.config).then((d) => {
      device = d;
      const line = filterDeviceLine(n.config.nodeName, d);
      if (line) processLogger()[d.runsOn === 'gpu' ? 'info' : 'warn'](line);
    });
    applyRecordCache(c.record_cache_bytes, n.observability);
    const queryThreads = c.query_threads > 0 ? c.query_threads : availableParallelism();
    const scheduler = new ReadScheduler(Math.max(c.read_slots, queryThreads));
    return scan({
      source: nodeScanSource({ node: n, schemas, blockSize: c.hash_chain_block_size > 0 ? c.hash_chain_block_size : (runSettingsOfNode(n)?.blockSize ?? STORAGE_NODE_DEFAULTS.blockSize), stepBytes: c.step_bytes }),
      scheduler,
      maxPendingChunks: c.max_pending_chunks,
      queryThreads,
      counters: ctx.counters,
      meter: queryMetrics(n.observability.registry),
      report: (m) => ctx.report(m),
    });
  },
});
