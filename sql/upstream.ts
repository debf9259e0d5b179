/**
 * Where hd_sql sends its reads: straight to the SCCs (direct SCC mode, HD_SQL_SCC_TARGETS) or
 * through the HD Proxy (HD_PROXY_ENDPOINT), which applies the policy to the service's identity,
 * names the batches and dispatches. Results reach the same listener either way.
 */
import { checkReachable, hostPort } from '../lib/reachability';
import { DEFAULT_QUERY_GRPC_PORT } from '../query/dispatch/dispatchService';
import { PlatformQueryClient, type ControlTls } from '../sdk/platformQueryClient';
import { urlHostPort } from '../sdk/returnHost';
import type { SccTarget } from '../sdk/sccTargets';

/**
 * The SCCs, or the Proxy with the TLS material and identity the service presents to it. SCCs
 * registered with a DMS serve their gRPC port with mutual TLS: the service then dispatches (direct
 * mode) and cancels (both modes) with its DMS-CA certificate (`tls` of the SCCs, or the Proxy's
 * when it holds a certificate and key); without one, plain gRPC.
 */
export type SqlUpstream =
  | { readonly kind: 'scc'; readonly targets: readonly SccTarget[]; readonly tls?: ControlTls; readonly resultTls?: boolean }
  | {
      readonly kind: 'proxy';
      readonly url: string;
      readonly tls: ControlTls;
      /** Results over mutual TLS with `tls` (HD_SQL_RESULT_TLS): the cluster's nodes are registered. */
      readonly resultTls?: boolean;
      /** Control headers: the identity the policy sees (X-Forwarded-Role/-Email or Authorization). */
      readonly headers: Readonly<Record<string, string>>;
    };

/** One line for start-up and /health. */
export function describeUpstream(u: SqlUpstream): string {
  if (u.kind === 'scc') return `SCC ${u.targets.map((t) => `${t.host}:${t.port} (gRPC ${t.grpcPort})`).join(', ')}${u.tls?.cert ? ' (mutual TLS)' : ''}`;
  const who = u.headers['x-forwarded-role'] ?? (u.headers.authorization ? 'a bearer token' : 'no identity');
  return `Proxy ${u.url} (as ${who}${u.tls.cert ? ', with its client certificate' : ''})`;
}

/** A query client of the service, pointed at its upstream; with `owner`, it receives on the owner's listener. */
export function queryClientFor(u: SqlUpstream, returnHost: string | undefined, returnPort: number, log: (line: string) => void, owner?: PlatformQueryClient): PlatformQueryClient {
  const client = new PlatformQueryClient(u.kind === 'proxy' ? u.url : '', returnHost ?? '', '', {
    listenPort: returnPort,
    ...(returnHost ? { returnHost } : {}),
    log,
    ...(u.kind === 'proxy' ? { controlTls: u.tls } : {}),
    ...(u.tls?.cert && u.tls.key ? { dispatchTls: u.tls } : {}),
    ...(u.resultTls === true && { resultTls: true }),
    ...(owner ? { shareListenerOf: owner } : {}),
  });
  if (u.kind === 'scc') client.setSccTargets(u.targets);
  else for (const [name, value] of Object.entries(u.headers)) client.addControlHeader(name, value);
  return client;
}

/** Whether each address of the upstream accepts a TCP connection (for /health). */
export async function upstreamReachable(u: SqlUpstream): Promise<{ address: string; reachable: boolean }[]> {
  const addresses = u.kind === 'scc' ? u.targets.map((t) => ({ host: t.host, port: t.grpcPort ?? DEFAULT_QUERY_GRPC_PORT })) : [urlHostPort(u.url)];
  return Promise.all(addresses.map(async (a) => ({ address: hostPort(a.host, a.port), reachable: (await checkReachable(a.host, a.port)) === undefined })));
}
