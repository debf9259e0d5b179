import { RecordCodec } from '../../engine-rs/index';
import { timeBatch } from '../../operators/timeBatch';
import { defineOperator } from '../../pipelines/registry';
import { int, oneOf } from '../../pipelines/settings';
import { mayUseWindowRewind } from '../services/windowRewind';
import { schemaFile } from './schemaSetting';

const settings = {
  schema: schemaFile("dataset schema whose time field and time index interval define the batches"),
  interval: int({ doc: 'batch width in seconds; 0 takes the schema time_index_interval (HD_TIME_INDEX_INTERVAL must match it)', default: 0, min: 0, max: 366 * 86400 }),
  max_open_batches: int({ doc: 'batches open at once; opening one more closes the oldest (1 suits time-sorted input)', default: 2, min: 1, max: 1024 }),
  batch_timeout_ms: int({ doc: 'close a batch after this long without records (0: never) — BATCH_TIMEOUT_MS', default: 0, min: 0, max: 86_400_000 }),
  timeout_action: oneOf(['EOB', 'BBN'] as const, { doc: 'control frame applied to a batch that timed out — TIMEOUT_ACTION', default: 'EOB' }),
};

/** `timeBatch`: assigns records to time-form batches by the schema's time field and closes each batch. */
export const timeBatchStage = defineOperator({
  name: 'timeBatch',
  kind: 'operator',
  doc: "Groups records into time-form batches by the schema's time field and interval; closes each with an eob (or bbn on timeout).",
  unit: 'records',
  input: 'records',
  output: 'batched-records',
  settings,
  uses: { windows: mayUseWindowRewind },
  create: (c, ctx) => {
    const windows = ctx.services.windows;
    const codec = new RecordCodec(c.schema);
    const interval = c.interval || c.schema.timeIndexInterval;
    return timeBatch({
      split: (chunk) => codec.timeWindows(chunk.buf, interval).map((w) => ({ windowStart: w.start, count: w.count, buf: w.records })),
      interval,
      maxOpenBatches: c.max_open_batches,
      batchTimeoutMs: c.batch_timeout_ms,
      timeoutAction: c.timeout_action === 'BBN' ? 'bbn' : 'eob',
      counters: ctx.counters,
      onProblem: (m) => ctx.report(m),
      // A Kafka source using the same windowRewind holds the timeout and rebuilds open windows across rebalances.
      ...(windows && { attach: (keeper) => windows.attach(keeper) }),
    });
  },
});
