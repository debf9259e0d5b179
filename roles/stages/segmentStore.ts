import { segmentStore } from '../../nodes/storageNode/segmentStore';
import { defineSink } from '../../pipelines/registry';
import { int } from '../../pipelines/settings';
import { usesStorageNode } from '../services/storageNode';

const settings = {
  record_size: int({ doc: 'record size of an empty batch\'s segment when no record of its dataset arrived (RECORD_SIZE)', default: 150, min: 1, max: 65535 }),
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
    return segmentStore({
      // The storageNode service recovered the node before any stage started.
      open: () => Promise.resolve(node.store),
      // Open batches of this sink are aborted (never acknowledged); the service stops the node after the run.
      close: async () => void (await node.store.abortAll()),
      defaultRecordSize: c.record_size,
      counters: ctx.counters,
      flow: ctx.flow,
      progress: ctx.progress,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w),
    });
  },
});
