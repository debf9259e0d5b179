/**
 * Thread CPU affinity through the engine (`sched_setaffinity` on kernel thread ids; Linux): the
 * operations `lib/cpuAffinity.ts` pins a node's threads with (MASTER_CPUSET, TRANSPORT_CORES,
 * KV_CORES; docs/scc.md, "CPU pinning").
 */
import type { ThreadAffinityOps } from '../lib/cpuAffinity';
import { native } from './native';

/** Rounds of pool-thread pinning: each round's calls meet at their own barrier. */
let round = 0;

/** The engine's thread affinity operations (see {@link ThreadAffinityOps}). */
export const threadAffinity: ThreadAffinityOps = {
  threadCpus: (tid) => native.affinityThreadCpus(tid),
  setThreadCpus: (tid, cpus) => native.affinitySetThreadCpus(tid, Float64Array.from(cpus)),
  processThreads: () => native.affinityProcessThreads(),
  setWorkerCpus: (cpus) => native.affinitySetWorkerCpus(Float64Array.from(cpus)),
  pinPoolWorkers: async (cpus, count, waitMs) => {
    const r = ++round;
    const tids = await Promise.all(Array.from({ length: count }, () => native.affinityPinPoolWorkerAsync(r, count, Float64Array.from(cpus), waitMs)));
    return [...new Set(tids)];
  },
};

/** The calling thread's kernel thread id (the event loop's is the process id). */
export function currentThreadId(): number {
  return native.affinityCurrentTid();
}
