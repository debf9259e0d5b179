import { batchTimeout } from '../../operators/batchTimeout';
import { defineOperator } from '../../pipelines/registry';
import { int } from '../../pipelines/settings';
import { sccSetting } from './sccSetting';

const settings = {
  batch_timeout_ms: sccSetting<number>('BATCH_TIMEOUT_MS'),
  timeout_action: sccSetting<'EOB' | 'BBN'>('TIMEOUT_ACTION'),
  max_open_batches: int({ doc: 'batches open at once; records opening one more are refused', default: 10_000, min: 1, max: 1_000_000 }),
};

/** `batchTimeout`: the reference's ingest batch state table for batches from the network (docs/scc.md). */
export const batchTimeoutStage = defineOperator({
  name: 'batchTimeout',
  kind: 'operator',
  doc: 'Tracks each batch open → closed (eob) / discarded (bbn); applies TIMEOUT_ACTION after BATCH_TIMEOUT_MS idle; refuses records of closed batches.',
  unit: 'records',
  input: 'batched-records',
  output: 'batched-records',
  settings,
  create: (c, ctx) =>
    batchTimeout({
      timeoutMs: c.batch_timeout_ms,
      action: c.timeout_action === 'BBN' ? 'bbn' : 'eob',
      maxOpenBatches: c.max_open_batches,
      counters: ctx.counters,
      onProblem: (m) => ctx.report(m),
    }),
});
