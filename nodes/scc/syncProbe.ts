/**
 * How the SCC learns that a Storage Node is in cold-boot synchronisation (docs/scc.md, "Replica
 * states"): `GET /v1/sync-state` on the node's observability port, over mutual TLS with the SCC's
 * identity when it has one (the node must present a `storageNode` certificate), plain otherwise.
 * The replica set asks every replica it counts as healthy, or knows as syncing, each poll. The
 * port is SN_OBSERVABILITY_PORTS' where the operator set one, else the one the node registered with
 * the DMS (docs/scc.md, "Replica states").
 */
import http from 'node:http';
import https from 'node:https';
import type { ReplicaAddress } from '../../control/api';
import { clientTlsOptions, type MtlsIdentity } from '../../net/mtls';
import type { SnTarget } from './settings';

/** What a probe found: the node's state, or undefined when it could not tell (no answer, no port known). */
export type SyncProbe = (target: SnTarget) => Promise<'syncing' | 'ready' | undefined>;

/**
 * Parses `node_name:observability_port,...` (the `sn_observability_ports` setting): where each
 * replica's /v1/sync-state is, on the host of its SN_TARGETS entry. Throws naming the bad entry.
 */
export function parseObservabilityPorts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  if (text.trim() === '') return out;
  for (const entry of text.split(',')) {
    const m = /^([A-Za-z0-9][A-Za-z0-9_.-]{0,63}):(\d{1,5})$/.exec(entry.trim());
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new Error(`'${entry}' must be node_name:observability_port (port 1..65535)`);
    if (out.has(m[1] as string)) throw new Error(`node '${m[1]}' is named twice`);
    out.set(m[1] as string, port);
  }
  return out;
}

/** Where a replica's observability port is, asked at every probe (so a replica set that changes is followed); undefined: not known. */
export type ObservabilityLookup = (target: SnTarget) => { readonly host: string; readonly port: number } | undefined;

/**
 * Where each replica's observability port is: the operator's SN_OBSERVABILITY_PORTS entry (on the
 * host of its SN_TARGETS entry) first, else the address the node registered with the DMS
 * (`dmsReplicas()`: the replica set of the SCC's configuration from the DMS, read at each call).
 */
export function observabilityLookup(explicit: ReadonlyMap<string, number>, dmsReplicas?: () => readonly ReplicaAddress[] | undefined): ObservabilityLookup {
  return (target) => {
    const port = explicit.get(target.name);
    if (port !== undefined) return { host: target.host, port };
    return dmsReplicas?.()?.find((r) => r.name === target.name)?.observability;
  };
}

/** A probe over the given observability ports (a map: on each target's host) or lookup; `identity`: mutual TLS. */
export function syncStateProbe(ports: ReadonlyMap<string, number> | ObservabilityLookup, identity?: MtlsIdentity, timeoutMs = 2000): SyncProbe {
  const where: ObservabilityLookup = typeof ports === 'function' ? ports : observabilityLookup(ports);
  return (target) => {
    const at = where(target);
    if (at === undefined) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const common = { host: at.host, port: at.port, path: '/v1/sync-state', method: 'GET', agent: false as const, timeout: timeoutMs };
      const onRes = (res: http.IncomingMessage): void => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('error', () => resolve(undefined));
        res.on('end', () => {
          try {
            const state = (JSON.parse(Buffer.concat(parts).toString('utf8')) as { state?: unknown }).state;
            resolve(res.statusCode === 200 && (state === 'syncing' || state === 'ready') ? state : undefined);
          } catch {
            resolve(undefined);
          }
        });
      };
      const req = identity ? https.request({ ...common, ...clientTlsOptions(identity, target.name, ['storageNode']) }, onRes) : http.request(common, onRes);
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(undefined));
      req.end();
    });
  };
}
