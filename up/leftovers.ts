/**
 * The nodes an earlier `hd up` left running. Nodes run in process groups of their own (so Ctrl-C
 * reaches `hd up` only), which also means they outlive an `hd up` that was killed (SIGKILL, a
 * crash): they would hold the ports and the data directory. `hd up` keeps their process ids in
 * `<data-dir>/nodes.pids.json`; the next start stops whichever of them are still there.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { signalGroup } from './supervisor';

/** The environment variable every node of `hd up` gets: its data directory, which marks it as ours. */
export const DATA_DIR_ENV = 'HD_UP_DATA_DIR';

const FILE = 'nodes.pids.json';

/** `<dataDir>/nodes.pids.json`: the process id of each node's latest start. */
export function pidsFile(dataDir: string): string {
  return path.join(dataDir, FILE);
}

/** Records the process ids of the running nodes (called at every start and restart). */
export function recordPids(dataDir: string, pids: Readonly<Record<string, number | undefined>>): void {
  writeFileSync(pidsFile(dataDir), `${JSON.stringify(pids)}\n`);
}

/** Forgets them (a clean stop). */
export function forgetPids(dataDir: string): void {
  rmSync(pidsFile(dataDir), { force: true });
}

/**
 * Whether `pid` is still a node of `dataDir`: on Linux its environment names the data directory
 * (a reused pid does not); elsewhere, whether it still leads a process group.
 */
function oursStill(pid: number, dataDir: string): boolean {
  if (existsSync('/proc/self/environ')) {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`${DATA_DIR_ENV}=${dataDir}`);
    } catch {
      return false;
    }
  }
  return signalGroup(pid, 0);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Stops the nodes an earlier `hd up` of `dataDir` left running (SIGTERM to each one's group,
 * SIGKILL after `graceMs`) and returns their names. Call only when that `hd up` is gone.
 */
export async function stopLeftovers(dataDir: string, graceMs = 10_000): Promise<string[]> {
  const file = pidsFile(dataDir);
  if (!existsSync(file)) return [];
  let pids: Record<string, number | undefined>;
  try {
    pids = JSON.parse(readFileSync(file, 'utf8')) as Record<string, number | undefined>;
  } catch {
    pids = {};
  }
  const left = Object.entries(pids).filter((e): e is [string, number] => typeof e[1] === 'number' && oursStill(e[1], dataDir));
  for (const [, pid] of left) signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (left.some(([, pid]) => oursStill(pid, dataDir)) && Date.now() < deadline) await sleep(100);
  for (const [, pid] of left) if (oursStill(pid, dataDir)) signalGroup(pid, 'SIGKILL');
  const killDeadline = Date.now() + 5000;
  while (left.some(([, pid]) => oursStill(pid, dataDir)) && Date.now() < killDeadline) await sleep(50);
  const stuck = left.filter(([, pid]) => oursStill(pid, dataDir));
  if (stuck.length > 0) throw new Error(`nodes of an earlier 'hd up' are still running and do not stop: ${stuck.map(([n, pid]) => `${n} (pid ${pid})`).join(', ')}; stop them (kill -KILL -<pid>) and start again`);
  forgetPids(dataDir);
  return left.map(([name]) => name);
}
