import { replicate } from '../../nodes/scc/replicate';
import { defineSink } from '../../pipelines/registry';
import { int } from '../../pipelines/settings';
import { usesSccNode } from '../services/sccNode';

const settings = {
  max_pending_closes: int({ doc: 'end-of-batch answers awaited at once before the stream waits', default: 64, min: 1, max: 4096 }),
};

/** `replicate`: the SCC's sink — replicates through the replica set of the `sccNode` service it uses, answers eobs once durable. */
export const replicateStage = defineSink({
  name: 'replicate',
  kind: 'sink',
  doc: 'Sends every batch to every healthy replica of SN_TARGETS; acknowledges an eob once every healthy replica has it durable; catches up replicas that were down.',
  unit: 'records',
  input: 'batched-records',
  settings,
  uses: { scc: usesSccNode },
  create: (c, ctx) => {
    const { replicas, node, recordSizes } = ctx.services.scc;
    return replicate({
      replicas,
      recordSizeOf: (dataset) => recordSizes.sizeOf(dataset),
      flow: ctx.flow,
      counters: ctx.counters,
      maxPendingCloses: c.max_pending_closes,
      onProblem: (m) => ctx.report(m),
      onDurable: (records) => {
        node.metrics.recordsIngested.inc(records);
        node.metrics.batchesClosed.inc();
        ctx.progress.addRecords(records);
      },
    });
  },
});
