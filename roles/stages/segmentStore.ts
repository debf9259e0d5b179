import { segmentStore } from '../../nodes/storageNode/segmentStore';
import { defineSink } from '../../pipelines/registry';
import { int } from '../../pipelines/settings';
import { runSettingsOfNode, STORAGE_NODE_DEFAULTS, usesStorageNode } from '../services/storageNode';
import { applyHashThreads, hashThreadsSetting } from './hashThreadsSetting';

const settings = {
  record_size: int({ doc: "record size of an empty batch's segment when no record of its dataset arrived (RECORD_SIZE); 0: the storageNode service's (RECORD_SIZE, else the DMS's)", default: 0, min: 0, max: 65535 }),
  hash_threads: hashThreadsSetting(),
};

/** `segmentStore`: the Storage Node's persist sink, writing into the node of the `storageNode` service it uses. */
export const segmentStoreStage = defineSink({
  name: 'segmentStore',
  kind: 'sink',
  doc: 'Persists batched records as one segment per batch on the Storage Node\'s devices; commits and acknowledges on eob, discards on bbn.',
  unit: 'records',
  input: 'batched-records',
  settings,
  uses: { node: usesStorageNode },
  create: (c, ctx) => {
    const node = ctx.services.node;
    applyHashThreads(c.hash_threads, node.observability);
    return segmentStore({
      // The storageNode service recovered the node before any stage started.
      open: () => Promise.resolve(node.store),
      // Open batches of this sink are aborted (never acknowledged); the service stops the node after the run.
      close: async () => void (await node.store.abortAll()),
      defaultRecordSize: c.record_size > 0 ? c.record_size : (runSettingsOfNode(node)?.recordSize ?? STORAGE_NODE_DEFAULTS.recordSize),
      counters: ctx.counters,
      flow: ctx.flow,
      progress: ctx.progress,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w),
    });
  },
});
