/**
 * Whether an address accepts TCP connections: the SCC's check before dispatch that the client's
 * return address is reachable (docs/query.md, "What the SCC does", step 1 — the reference's wrong
 * return address fails silently, ours fails Dispatch at once naming it), hd_sql's upstream health
 * and `hd up`'s readiness probe.
 */
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
