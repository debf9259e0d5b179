import type { HashAlgorithmName } from '../../engine-rs/hashChain';
import { hashChain } from '../../operators/hashChain';
import { defineOperator } from '../../pipelines/registry';
import { sccSetting } from './sccSetting';

const settings = {
  hash_algorithm: sccSetting<HashAlgorithmName>('HASH_ALGORITHM'),
  record_size: sccSetting<number>('RECORD_SIZE'),
  hash_chain_block_size: sccSetting<number>('HASH_CHAIN_BLOCK_SIZE'),
  max_hash_queue_bytes: sccSetting<number>('MAX_HASH_QUEUE_BYTES'),
};

/** `hashChain`: the SCC's background hash chain per batch; the closing hash goes out with the eob (docs/scc.md). */
export const hashChainStage = defineOperator({
  name: 'hashChain',
  kind: 'operator',
  doc: 'Hash-chains every batch natively (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE) with at most MAX_HASH_QUEUE_BYTES queued; puts the closing hash into the eob.',
  unit: 'records',
  input: 'batched-records',
  output: 'batched-records',
  settings,
  create: (c, ctx) =>
    hashChain({
      algorithm: c.hash_algorithm,
      recordSize: c.record_size,
      blockSize: c.hash_chain_block_size,
      maxQueueBytes: c.max_hash_queue_bytes,
      flow: ctx.flow,
      counters: ctx.counters,
      onProblem: (m) => ctx.report(m),
    }),
});
