/**
 * The HTTP door's Host header check against DNS rebinding: a web page on an attacker's name that
 * resolves to this machine makes the browser send that name as Host, so only names this door is
 * meant to be reached by are served — loopback names and addresses, the listen address (and the
 * machine's addresses when it listens on every interface), and HD_SQL_HTTP_ALLOWED_HOSTS.
 */
import net from 'node:net';
import os from 'node:os';
import { isLoopback } from './doorSecurity';

/** Parses HD_SQL_HTTP_ALLOWED_HOSTS: names or addresses, comma-separated; `.example.com` allows its subdomains; `*` any. */
export function parseAllowedHosts(text: string, variable: string): string[] {
  const entries = text.split(',').map((e) => e.trim().toLowerCase()).filter((e) => e !== '');
  for (const e of entries) {
    if (e !== '*' && !/^\.?[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/.test(e) && !net.isIP(e.replace(/^\[|\]$/g, ''))) throw new RangeError(`${variable}: "${e}" is not a host name or address (without a port)`);
  }
  return entries;
}

/** The host of a Host header without its port, lower case, IPv6 without brackets; undefined when malformed. */
function hostOf(header: string): string | undefined {
  const h = header.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h);
  if (v6) return v6[1];
  const m = /^([a-z0-9_.-]+)(?::\d{1,5})?$/.exec(h);
  return m ? (m[1] as string).replace(/\.$/, '') : undefined;
}

/** Decides whether a Host header may be served. */
export class HostAllowList {
  private readonly exact = new Set<string>();
  private readonly suffixes: string[] = [];
  private readonly any: boolean;

  /** @param listenHost the door's bound address; @param extra HD_SQL_HTTP_ALLOWED_HOSTS */
  constructor(listenHost: string, extra: readonly string[] = []) {
    this.any = extra.includes('*');
    const bound = listenHost.replace(/^\[|\]$/g, '').toLowerCase();
    if (bound === '0.0.0.0' || bound === '::' || bound === '') {
      // Every interface: the machine's own addresses are how it is reached (an address is no rebinding target).
      for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) this.exact.add(a.address.toLowerCase());
    } else {
      this.exact.add(bound);
    }
    for (const e of extra) {
      if (e.startsWith('.')) this.suffixes.push(e);
      else this.exact.add(e.replace(/^\[|\]$/g, ''));
    }
  }

  /** Whether `header` (the request's Host) names this door. */
  allows(header: string | undefined): boolean {
    if (this.any) return true;
    if (header === undefined) return false;
    const h = hostOf(header);
    if (h === undefined) return false;
    return isLoopback(h) || this.exact.has(h) || this.suffixes.some((s) => h.endsWith(s));
  }
}
