/**
 * Runs the nodes of `hd up` as child processes: logs to files, restarts a node that crashes (with
 * backoff), stops them all cleanly (SIGTERM, then SIGKILL after a grace period), last started
 * first.
 *
 * Each node runs in its own process group (and session): a Ctrl-C at the terminal reaches `hd up`
 * only, which then stops the nodes in order, instead of every node at once (which the supervisor
 * would take for crashes). Signals go to the whole group, so whatever a node started goes too.
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

/** Sends `signal` to the process group of `pid` (the node and whatever it started); false when it is gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

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

  /** Starts a node (and restarts it whenever it exits until stopAll); does nothing once stopAll was called. */
  start(spec: NodeSpec): void {
    if (this.stopping) return;
    if (this.nodes.has(spec.name)) throw new Error(`node ${spec.name} is already supervised`);
    const r: Running = { spec, proc: undefined, restarts: 0, exits: 0, timer: undefined, log: createWriteStream(this.logFile(spec.name), { flags: 'a' }) };
    this.nodes.set(spec.name, r);
    this.launch(r);
  }

  /**
   * Stops every node, the last started first (nodes of the same role side by side): SIGTERM to its
   * process group, SIGKILL after `graceMs`; resolves once all exited. Nothing restarts after it.
   */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    const order = [...this.nodes.values()].reverse();
    for (let i = 0; i < order.length; ) {
      const role = order[i]?.spec.role;
      const tier: Running[] = [];
      while (i < order.length && order[i]?.spec.role === role) tier.push(order[i++] as Running);
      await Promise.all(tier.map((r) => this.stopOne(r, graceMs)));
    }
  }

  private async stopOne(r: Running, graceMs: number): Promise<void> {
    if (r.timer) clearTimeout(r.timer);
    const p = r.proc;
    if (p?.pid !== undefined && p.exitCode === null && p.signalCode === null) {
      const pid = p.pid;
      const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
      signalGroup(pid, 'SIGTERM');
      const t = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(t);
    }
    this.onEvent({ kind: 'stopped', node: r.spec.name });
    await new Promise<void>((resolve) => r.log.end(resolve));
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
    // detached: a process group (and session) of its own, so the terminal's Ctrl-C does not reach it.
    const proc = spawn(cmd as string, [...lead, ...r.spec.args], { cwd: this.cwd, env: { ...process.env, ...r.spec.env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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
