/**
 * The cluster the fault trials and the soak run against: one SCC and two Storage Nodes as real
 * `hd run` processes (test/support/cluster.ts), with every process of it killable (SIGKILL),
 * stoppable (SIGSTOP / SIGCONT) and restartable on its own ports and data. The SCC's /health says
 * when every replica is healthy again, and each process's RSS comes from /proc/<pid>/status.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startCluster, type Cluster } from '../support/cluster';
import { startHd, waitForPort, type HdProcess } from '../support/hdProcess';

/** The flows example schema (64-byte records): the dataset of every trial. */
export const SCHEMA_JSON = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
export const DATASET = 'flows';
export const RECORD_SIZE = 64;

/** A process of the cluster, by name: `scc`, `sn1`, `sn2`. */
export type Target = 'scc' | 'sn1' | 'sn2';
export const TARGETS: readonly Target[] = ['scc', 'sn1', 'sn2'];

/** A running process's pid and resident set size (kB), or undefined when it is not running. */
export function rssKb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One SCC, two Storage Nodes, each process killable, stoppable and restartable. */
export class ChaosCluster {
  /** The SCC process now running (the first, or a restarted one). */
  private sccProc: HdProcess;
  /** Processes stopped with SIGSTOP and not yet continued. */
  private readonly stopped = new Set<Target>();
  /** How often each process was started again (after a kill). */
  readonly restarts: Record<Target, number> = { scc: 0, sn1: 0, sn2: 0 };

  private constructor(readonly cluster: Cluster) {
    this.sccProc = cluster.scc.proc;
  }

  static async start(sccEnv: Record<string, string> = {}): Promise<ChaosCluster> {
    return new ChaosCluster(await startCluster({ storageNodes: 2, recordSize: RECORD_SIZE, schemas: [SCHEMA_JSON], sccEnv }));
  }

  get host(): string {
    return this.cluster.host;
  }
  /** `host:port` of the SCC's ingest port. */
  get ingestTarget(): string {
    return `${this.cluster.host}:${this.cluster.scc.productionPort}`;
  }
  /** `host:port` of the SCC's gRPC QueryDispatch. */
  get dispatchAddress(): string {
    return `${this.cluster.host}:${this.cluster.scc.queryGrpcPort}`;
  }

  private proc(t: Target): HdProcess {
    return t === 'scc' ? this.sccProc : (this.cluster.sns[t === 'sn1' ? 0 : 1] as { proc: HdProcess }).proc;
  }

  /** Each process's pid (undefined while it is down). */
  pids(): Record<Target, number | undefined> {
    const pid = (t: Target): number | undefined => {
      const p = this.proc(t).proc;
      return p.exitCode === null && p.signalCode === null ? p.pid : undefined;
    };
    return { scc: pid('scc'), sn1: pid('sn1'), sn2: pid('sn2') };
  }

  /** SIGKILL (a crash); resolves once it has exited. */
  async kill(t: Target): Promise<void> {
    this.stopped.delete(t);
    await this.proc(t).kill9();
  }

  /** Starts a killed process again on its ports and data; resolves once its ingest port accepts. */
  async restart(t: Target): Promise<void> {
    this.restarts[t]++;
    if (t !== 'scc') {
      await this.cluster.restartSn(t === 'sn1' ? 0 : 1);
      return;
    }
    await this.sccProc.stop();
    const s = this.cluster.scc;
    this.sccProc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
      PRODUCTION_IP: this.cluster.host,
      PRODUCTION_PORT: String(s.productionPort),
      COMMAND_PORT: String(s.commandPort),
      OBSERVABILITY_PORT: String(s.observabilityPort),
      QUERY_GRPC_PORT: String(s.queryGrpcPort),
      RECORD_SIZE: String(RECORD_SIZE),
      NODE_NAME: 'scc-test',
      SN_TARGETS: this.cluster.sns.map((sn) => `${sn.name}:${this.cluster.host}:${sn.commandPort}:${sn.productionPort}`).join(','),
    });
    await waitForPort(this.cluster.host, s.productionPort, this.sccProc, 60_000);
  }

  /** SIGSTOP: the process freezes, its sockets stay open. */
  pause(t: Target): void {
    const p = this.proc(t).proc;
    if (p.exitCode === null && p.signalCode === null) {
      p.kill('SIGSTOP');
      this.stopped.add(t);
    }
  }

  /** SIGCONT after {@link pause}. */
  resume(t: Target): void {
    const p = this.proc(t).proc;
    if (this.stopped.delete(t) && p.exitCode === null && p.signalCode === null) p.kill('SIGCONT');
  }

  /** The SCC's /health: `ok` once every replica is healthy; the replicas' states. */
  async health(): Promise<{ status: string; replicas: string[] } | undefined> {
    try {
      const res = await fetch(`http://${this.cluster.host}:${this.cluster.scc.observabilityPort}/health`, { signal: AbortSignal.timeout(2000) });
      const h = (await res.json()) as { status: string; replicas?: { replicas?: { name: string; state: string }[] } };
      return { status: h.status, replicas: (h.replicas?.replicas ?? []).map((r) => `${r.name} ${r.state}`) };
    } catch {
      return undefined;
    }
  }

  /** Resolves true once the SCC reports every replica healthy, false after `timeoutMs`. */
  async untilHealthy(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if ((await this.health())?.status === 'ok') return true;
      if (Date.now() > deadline) return false;
      await sleep(100);
    }
  }

  /** The last `chars` characters a process printed (for failure reports). */
  output(t: Target, chars = 2000): string {
    return this.proc(t).output().slice(-chars);
  }

  /** Continues what is stopped, then stops every process and removes the data. */
  async stop(): Promise<void> {
    for (const t of [...this.stopped]) this.resume(t);
    if (this.sccProc !== this.cluster.scc.proc) await this.sccProc.stop();
    await this.cluster.stop();
  }
}
