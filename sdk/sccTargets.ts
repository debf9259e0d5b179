/**
 * SCC target lists for the SDK clients: what `setSccTargets` takes and how it is checked.
 */

import type { SccTarget } from '../control/api';

/** One SCC: `port` its data plane (PRODUCTION_PORT), `grpcPort` its query dispatch (QUERY_GRPC_PORT, default 6990); control/api's {@link SccTarget}. */
export type { SccTarget };

/** The default data-plane port of an SCC (the reference's 6987). */
export const DEFAULT_SCC_DATA_PORT = 6987;

function checkPort(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 65535) {
    throw new RangeError(`${what} must be a TCP port 1..65535, got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Normalises a target list: each entry an {@link SccTarget} or a `host[:port]` string
 * (`[v6addr]:port` for IPv6). Throws a RangeError naming the entry that is not a target.
 */
export function parseSccTargets(targets: ReadonlyArray<SccTarget | string>): SccTarget[] {
  return targets.map((t, i) => {
    if (typeof t === 'string') {
      const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(t) ?? /^([^:]+)(?::(\d+))?$/.exec(t);
      if (!m || !m[1]) throw new RangeError(`SCC target ${i} "${t}" is not host[:port]`);
      return { host: m[1], port: m[2] === undefined ? DEFAULT_SCC_DATA_PORT : checkPort(Number(m[2]), `SCC target ${i} port`) };
    }
    if (typeof t !== 'object' || t === null || typeof t.host !== 'string' || t.host === '') {
      throw new RangeError(`SCC target ${i} must be { host, port } or "host:port"`);
    }
    const port = checkPort(t.port, `SCC target ${i} port`);
    return t.grpcPort === undefined ? { host: t.host, port } : { host: t.host, port, grpcPort: checkPort(t.grpcPort, `SCC target ${i} grpcPort`) };
  });
}

/** `host:port` for messages. */
export function targetName(t: SccTarget): string {
  return t.host.includes(':') ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`;
}
