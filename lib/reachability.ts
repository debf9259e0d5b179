/**
 * Whether an address accepts TCP connections: the SCC's check before dispatch that the client's
 * return address is reachable (docs/query.md, "What the SCC does", step 1 — the reference's wrong
 * return address fails silently, ours fails Dispatch at once naming it), hd_sql's upstream health
 * and `hd up`'s readiness probe.
 */
import { BoundedMap } from './boundedMap';
import net from 'node:net';

/** Default time a connect to the return address may take. */
export const REACHABILITY_TIMEOUT_MS = 2000;

/** Resolves with undefined when `host:port` accepts a TCP connection within `timeoutMs`, else with why not. */
export function checkReachable(host: string, port: number, timeoutMs = REACHABILITY_TIMEOUT_MS): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (why: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) => done(`connect ${err.code ?? err.message}`));
  });
}

/** `host:port`, with brackets around an IPv6 host. */
export function hostPort(host: string, port: number): string {
  return net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * {@link checkReachable} that remembers successes for `ttlMs`: a client sends query after query
 * from one listener, and probing it each time costs a connection on both ends (about half a
 * millisecond of a small query's latency). Failures are never remembered, so an address that
 * stops answering is refused once its last success is older than `ttlMs`; within that time a
 * vanished listener is found by the result streams instead, which fail their queries naming it.
 */
export class ReachabilityCache {
  private readonly ok: BoundedMap<string, number>;

  /** @param ttlMs how long a success is trusted; 0 probes every time. @param maxEntries addresses remembered at most (oldest dropped). */
  constructor(
    private readonly ttlMs: number,
    maxEntries = 1024,
  ) {
    this.ok = new BoundedMap(maxEntries);
  }

  /** Like {@link checkReachable}; answers from memory when `host:port` answered within the last `ttlMs`. */
  async check(host: string, port: number, timeoutMs = REACHABILITY_TIMEOUT_MS): Promise<string | undefined> {
    const key = hostPort(host, port);
    const at = this.ok.get(key);
    const now = Date.now();
    if (at !== undefined && now - at < this.ttlMs) return undefined;
    const why = await checkReachable(host, port, timeoutMs);
    this.ok.delete(key);
    if (why === undefined && this.ttlMs > 0) this.ok.set(key, Date.now());
    return why;
  }
}
