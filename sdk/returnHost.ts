/**
 * The return address the query client advertises: the local address of a connection toward the SCC
 * (or the Proxy, which dispatches to the SCCs) is the one on the path the Storage Nodes share with it.
 */
import net from 'node:net';

/** The local address of a TCP connection to `host:port`; 127.0.0.1 when it cannot be made. */
export function localAddressToward(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (addr: string | undefined): void => {
      s.destroy();
      resolve(addr ?? '127.0.0.1');
    };
    s.once('connect', () => done(s.localAddress));
    s.once('error', () => done(undefined));
  });
}

/** Host and port of a URL (the scheme's default port when none is given). */
export function urlHostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port) };
}
