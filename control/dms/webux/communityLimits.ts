/**
 * Enforcing the license limits (docs/webux.md, "License"): clusters, Storage Nodes and Proxies.
 * Without a license the community limits apply (1 cluster, 4 Storage Nodes, 1 Proxy); a license
 * raises the ones it names. Only something **new** is refused: a cluster not yet declared, the first
 * registration of a Storage Node or Proxy. A node that registered once re-registers and renews
 * whatever the license says now, so a license that expires (or is removed) never stops a running
 * platform, and `hd up` (one cluster, two Storage Nodes, one Proxy) is never blocked.
 *
 * What counts is what registered (a node record with `registered_at`): a node an administrator only
 * declared takes no seat until it registers (`hd up` declares its nodes before they start), and
 * `DELETE /v1/nodes/{name}` frees the seat.
 */
import { HttpError } from '../../http/errors';
import type { DmsState, NodeRole } from '../state';
import type { LicenseLimits, LicenseUsage } from './license';

/** The limits in effect and where they come from (the refusal names it). */
export interface LimitsInEffect {
  readonly limits: LicenseLimits;
  readonly mode: 'enterprise' | 'community';
  /** The license's id and licensee, in enterprise mode. */
  readonly license?: { readonly id: string; readonly licensee: string };
  /** Why a stored license does not count (expired since it was imported). */
  readonly problem?: string;
}

/** The roles the license limits, and the limit each counts against. */
const LIMITED: Partial<Record<NodeRole, { key: 'storage_nodes' | 'proxies'; what: string }>> = {
  storageNode: { key: 'storage_nodes', what: 'Storage Node' },
  proxy: { key: 'proxies', what: 'Proxy' },
};

/** Names of the nodes of `role` that registered (they hold the seats), sorted. */
export function seatHolders(state: Readonly<DmsState>, role: NodeRole): string[] {
  return Object.values(state.nodes)
    .filter((n) => n.role === role && n.registered_at !== undefined)
    .map((n) => n.name)
    .sort();
}

/** How many clusters, registered Storage Nodes and registered Proxies the instance has. */
export function usageOf(state: Readonly<DmsState>): LicenseUsage {
  return { clusters: Object.keys(state.clusters).length, storage_nodes: seatHolders(state, 'storageNode').length, proxies: seatHolders(state, 'proxy').length };
}

/** "community mode (no Enterprise License)" or "the Enterprise License L-1 (Example Corp)". */
function source(e: LimitsInEffect): string {
  if (e.license) return `the Enterprise License ${e.license.id} (${e.license.licensee})`;
  return `community mode (no Enterprise License${e.problem ? `: ${e.problem}` : ''})`;
}

const HOW = 'import a license that allows more (WebUX License page, or PUT /v1/license; docs/webux.md, "License")';

/**
 * Refuses (403 `license_limit`) the first registration of Storage Node or Proxy `name` when the
 * seats of its role are all taken. A node that registered before always passes, and so does every
 * other role.
 */
export function checkNodeSeat(state: Readonly<DmsState>, name: string, role: NodeRole, e: LimitsInEffect): void {
  const limited = LIMITED[role];
  if (!limited || state.nodes[name]?.registered_at !== undefined) return;
  const holders = seatHolders(state, role);
  const allowed = e.limits[limited.key];
  if (holders.length < allowed) return;
  throw new HttpError(
    'license_limit',
    `${limited.what} '${name}' is refused: ${source(e)} allows ${allowed} ${limited.what}${allowed === 1 ? '' : 's'} and ${holders.join(', ')} ${holders.length === 1 ? 'holds' : 'hold'} ${allowed === 1 ? 'it' : 'them'}; ${HOW}, or remove one (DELETE /v1/nodes/{name})`,
  );
}

/** Refuses (403 `license_limit`) declaring cluster `id` when it is new and the clusters allowed are all declared. */
export function checkClusterSeat(state: Readonly<DmsState>, id: string, e: LimitsInEffect): void {
  if (state.clusters[id]) return;
  const have = Object.keys(state.clusters).sort();
  if (have.length < e.limits.clusters) return;
  throw new HttpError('license_limit', `cluster '${id}' is refused: ${source(e)} allows ${e.limits.clusters} cluster${e.limits.clusters === 1 ? '' : 's'} and ${have.join(', ')} ${have.length === 1 ? 'is' : 'are'} declared; ${HOW}`);
}
