/**
 * Runs the nodes of `hd up` as child processes: logs to files, restarts a node that crashes (with
 * backoff), stops them all cleanly (SIGTERM, then SIGKILL after a grace period).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';

/** How to start one node. */
export interface NodeSpec {
  /** Unique name (`scc`, `sn1`, ...). */
  readonly name: string;
  readonly role: string;
  /** Arguments of the `hd` command (`run pipelines/scc.yaml ...`). */
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Address and port that accept connections once the node is up. */
  readonly host: string;
  readonly readyPort: number;
  /** Its /health URL. */
  readonly healthUrl: string;
  /**
   * Run before every launch (the first and each restart); its answer is added to `env`. For what
   * must be fresh per process, such as a single-use bootstrap token. A failure counts as an exit.
   */
  readonly prepare?: () => Promise<Readonly<Record<string, string>>>;
}

/** What the supervisor reports. */
export type SupervisorEvent =
  | { readonly kind: 'started'; readonly node: string; readonly pid: number }
  | { readonly kind: 'crashed'; readonly node: string; readonly code: number | string; readonly restartInMs: number }
  | { readonly kind: 'stopped'; readonly node: string };

interface Running {
  readonly spec: NodeSpec;
  proc: ChildProcess | undefined;
  restarts: number;
  exits: number;
  timer: NodeJS.Timeout | undefined;
  log: WriteStream;
}

const MAX_BACKOFF_MS = 30_000;

/** Starts nodes and keeps them running until {@link Supervisor.stopAll}. */
export class Supervisor {
  private readonly nodes = new Map<string, Running>();
  private stopping = false;

  /**
   * @param hdCommand how to run `hd` (program and leading arguments)
   * @param cwd where it runs (the package root: pipeline paths are relative to it)
   * @param logDir one `<node>.log` per node, appended to across restarts
   */
  constructor(
    private readonly hdCommand: readonly string[],
    private readonly cwd: string,
    private readonly logDir: string,
    private readonly onEvent: (e: SupervisorEvent) => void = () => undefined,
  ) {
    mkdirSync(logDir, { recursive: true });
  }

  /** Process ids of the running nodes. */
  pids(): Record<string, number | undefined> {
    return Object.fromEntries([...this.nodes].map(([n, r]) => [n, r.proc?.pid]));
  }

  /** How often a node has exited since it was started (restarts included). */
  exits(name: string): number {
    return this.nodes.get(name)?.exits ?? 0;
  }

  /** The log file of a node. */
  logFile(name: string): string {
    return path.join(this.logDir, `${name}.log`);
  }

  /** Starts a node (and restarts it whenever it exits until stopAll). */
  start(spec: NodeSpec): void {
    if (this.nodes.has(spec.name)) throw new Error(`node ${spec.name} is already supervised`);
    const r: Running = { spec, proc: undefined, restarts: 0, exits: 0, timer: undefined, log: createWriteStream(this.logFile(spec.name), { flags: 'a' }) };
    this.nodes.set(spec.name, r);
    this.launch(r);
  }

  /** SIGTERM to every node, SIGKILL to those still running after `graceMs`; resolves once all exited. */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.nodes.values()].map(async (r) => {
        if (r.timer) clearTimeout(r.timer);
        const p = r.proc;
        if (p && p.exitCode === null && p.signalCode === null) {
          const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
          p.kill('SIGTERM');
          const t = setTimeout(() => p.kill('SIGKILL'), graceMs);
          await exited;
          clearTimeout(t);
        }
        this.onEvent({ kind: 'stopped', node: r.spec.name });
        await new Promise<void>((resolve) => r.log.end(resolve));
      }),
    );
  }

  private launch(r: Running): void {
    if (!r.spec.prepare) return this.spawn(r, {});
    const started = Date.now();
    r.spec.prepare().then(
      (extra) => {
        if (!this.stopping) this.spawn(r, extra);
      },
      (err: unknown) => {
        if (this.stopping) return;
        r.log.write(`--- ${new Date().toISOString()} could not prepare the start: ${err instanceof Error ? err.message : String(err)}\n`);
        this.exited(r, 'prepare failed', started);
      },
    );
  }

  private spawn(r: Running, extra: Readonly<Record<string, string>>): void {
    const [cmd, ...lead] = this.hdCommand;
    const proc = spawn(cmd as string, [...lead, ...r.spec.args], { cwd: this.cwd, env: { ...process.env, ...r.spec.env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    r.proc = proc;
    // The pid in the log: how an operator (or a test) finds the process of a node.
    r.log.write(`--- ${new Date().toISOString()} start: hd ${r.spec.args.join(' ')} (pid ${proc.pid ?? '?'})\n`);
    proc.stdout?.pipe(r.log, { end: false });
    proc.stderr?.pipe(r.log, { end: false });
    const started = Date.now();
    proc.once('spawn', () => this.onEvent({ kind: 'started', node: r.spec.name, pid: proc.pid ?? -1 }));
    proc.once('exit', (code, signal) => {
      r.log.write(`--- ${new Date().toISOString()} exit: ${code ?? signal}\n`);
      this.exited(r, code ?? signal ?? 'unknown', started);
    });
  }

  /** Counts an exit and, unless stopping, schedules the restart. */
  private exited(r: Running, code: number | string, started: number): void {
    r.exits++;
    if (this.stopping) return;
    // A node that ran a while before dying starts over at the shortest backoff.
    if (Date.now() - started > 60_000) r.restarts = 0;
    const wait = Math.min(MAX_BACKOFF_MS, 500 * 2 ** r.restarts++);
    this.onEvent({ kind: 'crashed', node: r.spec.name, code, restartInMs: wait });
    r.timer = setTimeout(() => this.launch(r), wait);
  }
}
