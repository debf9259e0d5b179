/**
 * Kept-alive connections to the Proxy, per origin and TLS material (sdk/proxyClient.ts). A client in
 * Proxy mode makes one or two Proxy calls a statement; each used to open its own connection
 * (`agent: false`): a TLS context built from the PEM text (key, certificate, CA bundle) and a full
 * handshake every time, about a sixth of hd_sql's CPU over the `hd up` demo's statements. An agent
 * per origin, material and local address keeps a few idle connections for the next call; Node's agent
 * unrefs idle sockets, so they never keep a process alive, and the Proxy closes them after its own
 * keep-alive time. New material (a renewed certificate) is another agent; the least recently made go
 * first past {@link MAX_AGENTS}.
 */
import http from 'node:http';
import https from 'node:https';

/** Agents kept at most (distinct Proxies and identities a process talks to). */
export const MAX_AGENTS = 16;
/** Idle connections an agent keeps for the next calls. */
const FREE_SOCKETS = 4;

const agents = new Map<string, http.Agent>();

/**
 * The agent for calls to `origin` with this TLS material and local address (`secure`: https).
 * The key holds the material itself: a renewed certificate never rides an older connection.
 */
export function proxyAgent(secure: boolean, origin: string, material: readonly (string | undefined)[], localAddress = ''): http.Agent {
  const key = [secure ? 's' : 'p', origin, localAddress, ...material.map((m) => m ?? '')].join('\u0000');
  let agent = agents.get(key);
  if (agent) return agent;
  agent = secure ? new https.Agent({ keepAlive: true, maxFreeSockets: FREE_SOCKETS }) : new http.Agent({ keepAlive: true, maxFreeSockets: FREE_SOCKETS });
  agents.set(key, agent);
  for (const [k, a] of agents) {
    if (agents.size <= MAX_AGENTS) break;
    agents.delete(k);
    a.destroy();
  }
  return agent;
}

/** Closes every kept connection and forgets the agents (tests; a process that stops talking to Proxies). */
export function closeProxyAgents(): void {
  for (const a of agents.values()) a.destroy();
  agents.clear();
}

/** Agents kept now (tests). */
export function proxyAgentCount(): number {
  return agents.size;
}
