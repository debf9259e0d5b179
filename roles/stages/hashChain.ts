import type { HashAlgorithmName } from '../../engine-rs/hashChain';
import { hashChain } from '../../operators/hashChain';
import { defineOperator } from '../../pipelines/registry';
import { usesSccNode } from '../services/sccNode';
import { applyHashThreads, hashThreadsSetting } from './hashThreadsSetting';
import { optionalSccSetting, sccSetting } from './sccSetting';

const settings = {
  hash_algorithm: optionalSccSetting<HashAlgorithmName>('HASH_ALGORITHM', "sha512, sha256 or blake3; empty: the DMS's election, else sha512 — HASH_ALGORITHM"),
  hash_chain_block_size: optionalSccSetting<number>('HASH_CHAIN_BLOCK_SIZE', "record hashes per chain block; empty: the DMS's election, else 64 — HASH_CHAIN_BLOCK_SIZE"),
  max_hash_queue_bytes: sccSetting<number>('MAX_HASH_QUEUE_BYTES'),
  hash_threads: hashThreadsSetting(),
};

/**
 * `hashChain`: the SCC's background hash chain per batch; the closing hash goes out with the eob
 * (docs/scc.md). Each dataset is hashed with its own record size (the `sccNode` service's record
 * sizes: its schema's on the DMS, else RECORD_SIZE); the algorithm and block size are the
 * variables' where set, else the DMS's hash election, else sha512 and 64, settled once at start
 * (nodes/scc/hashElection.ts: a changed election on the DMS waits for a restart, visibly).
 */
export const hashChainStage = defineOperator({
  name: 'hashChain',
  kind: 'operator',
  doc: "Hash-chains every batch natively (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE) with its dataset's record size on HASH_THREADS threads and at most MAX_HASH_QUEUE_BYTES queued; puts the closing hash into the eob.",
  unit: 'records',
  input: 'batched-records',
  output: 'batched-records',
  settings,
  uses: { scc: usesSccNode },
  create: (c, ctx) => {
    const scc = ctx.services.scc;
    const e = scc.election.settle({ algorithm: c.hash_algorithm, chainBlockSize: c.hash_chain_block_size });
    applyHashThreads(c.hash_threads, scc.node.observability);
    return hashChain({
      algorithm: e.algorithm,
      recordSize: scc.recordSize,
      recordSizes: scc.recordSizes,
      blockSize: e.chainBlockSize,
      maxQueueBytes: c.max_hash_queue_bytes,
      flow: ctx.flow,
      counters: ctx.counters,
      onProblem: (m) => ctx.report(m),
    });
  },
});
