/**
 * CPU pinning of a node's threads (MASTER_CPUSET, TRANSPORT_CORES, KV_CORES; docs/scc.md, "CPU
 * pinning"): the cpuset text, the plan the three settings make, its checks, and the pinning
 * itself over thread-level operations given by the caller (the engine's `sched_setaffinity`
 * bridge, `engine-rs/affinity.ts`), so this file imports nothing outside lib/.
 *
 * What each setting pins, on the kernel path this build runs (nothing here is a user-space driver):
 * - MASTER_CPUSET: every thread of the process (V8's platform workers, the inspector, the segment
 *   flushers...). Unset: nothing is pinned.
 * - TRANSPORT_CORES (N): the event loop thread, on the first N CPUs of the set. Every socket of
 *   the node (HDWP, gRPC, TLS, the control plane) is read and written on that thread by libuv.
 * - KV_CORES (K): the engine's worker threads, on the last K CPUs of the set: libuv's pool, where
 *   scans, segment writes and every other Neon task run, and the engine's hashing pool (`hd-hash-*`),
 *   whose threads started later start there too.
 * When N + K exceed the set the two groups share CPUs (shown in /health). A thread started later
 * takes the CPUs of the thread that starts it (the event loop's, most often).
 */
import type { HealthPart } from './observability';

/** Thread-level operations, Linux `sched_{get,set}affinity` on kernel thread ids. */
export interface ThreadAffinityOps {
  /** The CPUs thread `tid` may run on, ascending. */
  threadCpus(tid: number): number[];
  /** Restricts thread `tid` to `cpus` (throws with `code` ESRCH when the thread has ended). */
  setThreadCpus(tid: number, cpus: readonly number[]): void;
  /** The process's threads as [tid, name]. */
  processThreads(): [number, string][];
  /** CPUs the engine's worker threads started from now on run on (empty: not pinned). */
  setWorkerCpus(cpus: readonly number[]): void;
  /**
   * Pins `count` pool threads (libuv's, where the engine's tasks run) to `cpus`, one call per
   * thread meeting at a barrier for at most `waitMs`; resolves with the tids reached.
   */
  pinPoolWorkers(cpus: readonly number[], count: number, waitMs: number): Promise<number[]>;
}

/** The outcome of parsing a cpuset. */
export type CpuListParse = { ok: true; value: number[] } | { ok: false; expected: string };

/** Largest CPU number a set may name (glibc's CPU_SETSIZE - 1). */
export const MAX_CPU = 1023;

/** A Linux cpuset list such as `1-3` or `0,2,4-7` (CPUs 0..1023), ascending and without repeats. */
export function parseCpuList(text: string): CpuListParse {
  const expected = "a cpuset list such as '1-3' or '0,2,4-7'";
  const cpus = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^\s*(\d{1,4})(?:-(\d{1,4}))?\s*$/.exec(part);
    if (!m) return { ok: false, expected };
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) return { ok: false, expected: `${expected}; '${part.trim()}' runs backwards` };
    if (hi > MAX_CPU) return { ok: false, expected: `${expected}; CPU numbers go up to ${MAX_CPU}` };
    for (let c = lo; c <= hi; c++) cpus.add(c);
  }
  return { ok: true, value: [...cpus].sort((a, b) => a - b) };
}

/** Writes CPUs as a cpuset list (`[0,1,2,5]` → `0-2,5`), the form of /proc's Cpus_allowed_list. */
export function formatCpuList(cpus: readonly number[]): string {
  const s = [...new Set(cpus)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(i === j ? `${s[i]}` : `${s[i]}-${s[j]}`);
    i = j + 1;
  }
  return out.join(',');
}

/** The three settings, as a node read them. */
export interface CpuPinningSettings {
  /** MASTER_CPUSET's CPUs; undefined: not set (nothing is pinned). */
  readonly masterCpuset: readonly number[] | undefined;
  /** TRANSPORT_CORES. */
  readonly transportCores: number;
  /** KV_CORES. */
  readonly kvCores: number;
}

/** Where each thread group goes. */
export interface CpuPinningPlan {
  /** MASTER_CPUSET: every thread not in another group. */
  readonly all: readonly number[];
  /** TRANSPORT_CORES: the event loop. */
  readonly transport: readonly number[];
  /** KV_CORES: the engine's workers. */
  readonly workers: readonly number[];
}

/** Start-up refused: the settings name CPUs the process may not use, or more cores than the set has. */
export class CpuPinningError extends Error {
  override readonly name = 'CpuPinningError';
}

/**
 * The plan of `s` for a process allowed `allowed` (its sched_getaffinity at start); throws
 * {@link CpuPinningError} naming the setting and what to change.
 */
export function planCpuPinning(s: CpuPinningSettings & { readonly masterCpuset: readonly number[] }, allowed: readonly number[]): CpuPinningPlan {
  const set = [...s.masterCpuset];
  const foreign = set.filter((c) => !allowed.includes(c));
  if (foreign.length > 0) {
    throw new CpuPinningError(
      `MASTER_CPUSET=${formatCpuList(set)} names CPU${foreign.length === 1 ? '' : 's'} ${formatCpuList(foreign)}, which this process may not use (it may use ${formatCpuList(allowed)}: its sched_getaffinity, e.g. the container's cpuset); set MASTER_CPUSET within ${formatCpuList(allowed)}, or leave it unset to pin nothing`,
    );
  }
  for (const [name, n] of [
    ['TRANSPORT_CORES', s.transportCores],
    ['KV_CORES', s.kvCores],
  ] as const) {
    if (n > set.length) throw new CpuPinningError(`${name}=${n} asks for more cores than MASTER_CPUSET=${formatCpuList(set)} has (${set.length}); lower ${name} or widen MASTER_CPUSET`);
  }
  return { all: set, transport: set.slice(0, s.transportCores), workers: set.slice(set.length - s.kvCores) };
}

/** The thread groups of /health, in its order. */
export const THREAD_GROUPS = ['event_loop', 'engine_workers', 'hash_pool', 'other'] as const;
/** One of {@link THREAD_GROUPS}. */
export type ThreadGroup = (typeof THREAD_GROUPS)[number];

/** One group in /health: what was asked and what the kernel reports now. */
export interface ThreadGroupHealth {
  /** The cpuset asked for; null when nothing was pinned. */
  readonly requested: string | null;
  /** The distinct Cpus_allowed_list of the group's threads now. */
  readonly actual: string[];
  readonly threads: number;
}

/** Options of {@link applyCpuPinning}. */
export interface ApplyCpuPinningOptions {
  /** libuv's pool size (UV_THREADPOOL_SIZE, default 4). */
  readonly poolSize?: number;
  /** How long the pool threads wait for each other (default 2 s). */
  readonly poolWaitMs?: number;
  /** The process id (default this process's): the event loop thread's tid. */
  readonly pid?: number;
}

/** libuv's pool size as it reads it: UV_THREADPOOL_SIZE, 1..1024, default 4. */
export function uvPoolSize(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const n = Number(env.UV_THREADPOOL_SIZE);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1024) : 4;
}

const isHashThread = (name: string): boolean => name.startsWith('hd-hash-');

/** The pinning in force: the plan (or none) and the pool threads reached, for /health. */
export class CpuPinning {
  /** @internal use {@link applyCpuPinning} */
  constructor(
    private readonly ops: ThreadAffinityOps,
    readonly settings: CpuPinningSettings,
    readonly plan: CpuPinningPlan | undefined,
    private readonly pid: number,
    private readonly poolTids: ReadonlySet<number>,
    /** libuv pool threads that could not be reached (0 when all were). */
    readonly poolMissed: number,
  ) {}

  /** The group of thread `tid` named `name`. */
  groupOf(tid: number, name: string): ThreadGroup {
    if (tid === this.pid) return 'event_loop';
    if (this.poolTids.has(tid)) return 'engine_workers';
    if (isHashThread(name)) return 'hash_pool';
    return 'other';
  }

  /** What each group asked for. */
  requested(group: ThreadGroup): readonly number[] | undefined {
    const p = this.plan;
    if (!p) return undefined;
    return group === 'event_loop' ? p.transport : group === 'engine_workers' || group === 'hash_pool' ? p.workers : p.all;
  }

  /** The `cpu_affinity` part of /health: the settings, and per group what was asked and what is in force now. */
  health(): HealthPart {
    const groups = new Map<ThreadGroup, { actual: Set<string>; threads: number }>();
    for (const [tid, name] of this.ops.processThreads()) {
      let cpus: number[];
      try {
        cpus = this.ops.threadCpus(tid);
      } catch {
        continue; // ended meanwhile
      }
      const g = this.groupOf(tid, name);
      const e = groups.get(g) ?? { actual: new Set<string>(), threads: 0 };
      e.actual.add(formatCpuList(cpus));
      e.threads++;
      groups.set(g, e);
    }
    const out: Record<string, ThreadGroupHealth> = {};
    for (const g of THREAD_GROUPS) {
      const e = groups.get(g);
      if (!e) continue;
      const r = this.requested(g);
      out[g] = { requested: r ? formatCpuList(r) : null, actual: [...e.actual].sort(), threads: e.threads };
    }
    const s = this.settings;
    const p = this.plan;
    return {
      status: this.poolMissed > 0 ? 'degraded' : 'ok',
      pinned: p !== undefined,
      master_cpuset: s.masterCpuset ? formatCpuList(s.masterCpuset) : null,
      transport_cores: s.transportCores,
      kv_cores: s.kvCores,
      ...(p && { shared: p.transport.some((c) => p.workers.includes(c)) }),
      ...(this.poolMissed > 0 && { pool_threads_missed: this.poolMissed }),
      groups: out,
    };
  }
}

/**
 * Applies MASTER_CPUSET, TRANSPORT_CORES and KV_CORES to this process's threads (see the module
 * doc); nothing when MASTER_CPUSET is unset. Throws {@link CpuPinningError} for a set the process
 * may not use or too many cores, before pinning anything.
 */
export async function applyCpuPinning(s: CpuPinningSettings, ops: ThreadAffinityOps, opts: ApplyCpuPinningOptions = {}): Promise<CpuPinning> {
  const pid = opts.pid ?? process.pid;
  if (s.masterCpuset === undefined) return new CpuPinning(ops, s, undefined, pid, new Set(), 0);
  const plan = planCpuPinning({ ...s, masterCpuset: s.masterCpuset }, ops.threadCpus(pid));
  ops.setWorkerCpus(plan.workers);
  const poolSize = opts.poolSize ?? uvPoolSize();
  const reached = new Set(await ops.pinPoolWorkers(plan.workers, poolSize, opts.poolWaitMs ?? 2000));
  const pinning = new CpuPinning(ops, s, plan, pid, reached, Math.max(0, poolSize - reached.size));
  for (const [tid, name] of ops.processThreads()) {
    const cpus = pinning.requested(pinning.groupOf(tid, name)) ?? plan.all;
    try {
      ops.setThreadCpus(tid, cpus);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ESRCH') throw err; // a thread that ended meanwhile
    }
  }
  return pinning;
}
