/**
 * Runs `hd` as a real child process for integration tests (straight from the TypeScript sources
 * through tsx, so no build is needed), and waits for its ports to accept connections.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

/** A running `hd` child process. */
export interface HdProcess {
  readonly proc: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (or signal name) once it has exited. */
  readonly exited: Promise<number | string>;
  /**
   * SIGTERM, then SIGKILL after `graceMs` (default 15 s: `hd run` may take its whole 10 s stop
   * bound to drain and close); resolves once it has exited.
   */
  stop(graceMs?: number): Promise<number | string>;
  /** SIGKILL at once (a crash). */
  kill9(): Promise<number | string>;
}

/** Starts `hd <args>` with `env` added to this process's environment. */
export function startHd(args: readonly string[], env: Record<string, string> = {}): HdProcess {
  const proc = spawn(
    process.execPath,
    // HD_PROFILE_DIR (benches): each process writes a V8 CPU profile there when it exits.
    [...(process.env.HD_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.HD_PROFILE_DIR}`] : []), '-r', 'tsx/cjs', '-e', "require('./bin/cli').main(process.argv.slice(1)).then((c) => process.exit(c ?? 0), (e) => { console.error(e); process.exit(1); })", ...args],
    { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const stop = async (graceMs = 15_000): Promise<number | string> => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(t);
      return r;
    }
    return exited;
  };
  const kill9 = async (): Promise<number | string> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    return exited;
  };
  return { proc, output: () => out, exited, stop, kill9 };
}

/**
 * Resolves once `p`'s output matches `pattern`: a start-up line follows the bind it describes, and may
 * reach this process's pipe a moment after the port opened. Resolves anyway after `timeoutMs` (the
 * caller's assertion then shows the output).
 */
export async function waitForOutput(p: HdProcess, pattern: RegExp | string, timeoutMs = 10_000): Promise<void> {
  const hit = (): boolean => (typeof pattern === 'string' ? p.output().includes(pattern) : pattern.test(p.output()));
  for (const end = Date.now() + timeoutMs; !hit() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
}

/** Resolves once `host:port` accepts a TCP connection; rejects after `timeoutMs` or if `p` exits. */
export async function waitForPort(host: string, port: number, p?: HdProcess, timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  void p?.exited.then(() => (dead = true));
  for (;;) {
    if (dead) throw new Error(`process exited before ${host}:${port} opened:\n${p?.output() ?? ''}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host, port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${host}:${port} did not open within ${timeoutMs} ms:\n${p?.output() ?? ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The kernel's ephemeral port range: outgoing connections take their local port from it. */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi)) return [lo as number, hi as number];
  } catch {
    // not Linux: the usual range
  }
  return [32768, 60999];
}

/** Ports this process handed out already (a released port could be picked twice). */
const handedOut = new Set<number>();

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/**
 * A free TCP port on `host` outside the kernel's ephemeral range (reliability issue #15): a node
 * restarted on a port of that range can find it taken by an outgoing connection meanwhile.
 * Random below the range (from 10000), or above it when the range starts too low.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [lo, hi] = ephemeralRange();
  const [min, max] = lo - 1 >= 12000 ? [10000, lo - 1] : [hi + 1, 65535];
  for (let i = 0; i < 200 && max > min; i++) {
    const port = min + Math.floor(Math.random() * (max - min + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(host, port)) {
      handedOut.add(port);
      return port;
    }
  }
  return kernelPort(host);
}

/** A port the kernel picks (from the ephemeral range): the fallback of {@link freePort}. */
function kernelPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const a = srv.address();
      srv.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}
