/**
 * When a node of `hd up` is up: its port accepts connections (a Storage Node: its /health answers),
 * and what to say when it does not come up.
 */
import { readFileSync } from 'node:fs';
import { checkReachable } from '../lib/reachability';
import { UpError } from './upError';
import type { NodeSpec, Supervisor } from './supervisor';

/** The last lines of a node's log, for an error message. */
export function logTail(file: string, lines = 8): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n');
  } catch {
    return '    (no log)';
  }
}

/** Whether the node's /health answers ok or degraded (its listeners are open once it does). */
async function healthAnswers(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    const status = ((await r.json()) as { status?: string }).status;
    return status === 'ok' || status === 'degraded';
  } catch {
    return false;
  }
}

/**
 * Resolves once node `n` is up; throws an {@link UpError} naming its log when it keeps exiting
 * or does not come up within `timeoutMs`, or as soon as `signal` aborts.
 */
export async function waitReady(n: NodeSpec, sup: Supervisor, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const log = sup.logFile(n.name);
  for (;;) {
    signal?.throwIfAborted();
    if (sup.exits(n.name) >= 3) throw new UpError(`${n.name} keeps exiting while it starts (${sup.exits(n.name)} times)`, log);
    // A Storage Node's ports take only the SCC's certificate: a bare probe there would show up in its
    // refused-handshake count, so it is asked over its /health instead.
    const ok = n.role === 'storage-node' ? await healthAnswers(n.healthUrl) : (await checkReachable(n.host, n.readyPort)) === undefined;
    if (ok) return;
    if (Date.now() > deadline) throw new UpError(`${n.name} did not open ${n.host}:${n.readyPort} within ${timeoutMs / 1000} s`, log);
    await new Promise((r) => setTimeout(r, 100));
  }
}
