/**
 * What the WebUX keeps beside the DMS store, in `webux.json` of the DMS data directory: the policy
 * versions published (for history and roll-back), why each quarantined node was quarantined, and
 * the imported license file.
 */
import path from 'node:path';
import { JsonFileStore, type Store } from '../../store/jsonFileStore';
import type { PolicyRecord } from '../state';

/** Why and when a node was quarantined. */
export interface QuarantineRecord {
  readonly at: string;
  readonly by: string;
  readonly reason: string;
  /** The bad batch notices (or other evidence) that led to it, as the administrator gave them. */
  readonly notices: readonly string[];
  /** The state the node had before (restored as `registered` or `declared` on release). */
  readonly previous_state: string;
}

/** Bad batch notices of one Storage Node, as the SCCs reported them (badBatchRoutes.ts), one per batch and code. */
export interface BadBatchRecord {
  /** 128 hex digits. */
  readonly batch_id: string;
  readonly dataset: string;
  /** The bbn's code (HDWP error frame codes, docs/query.md). */
  readonly code: number;
  readonly reason: string;
  /** Times this batch was reported with this code. */
  count: number;
  readonly first_at: string;
  last_at: string;
  /** The SCC that reported it last. */
  reported_by: string;
}

/** The WebUX document. */
export interface WebuxState {
  readonly format: 1;
  /** Policy versions seen, oldest first (at most {@link MAX_POLICY_HISTORY}). */
  policy_history: PolicyRecord[];
  quarantine: Record<string, QuarantineRecord>;
  /** The imported license file as it was sent (verified again whenever it is read). */
  license: unknown;
  /** Bad batch notices by Storage Node name, newest last (absent in documents written before it existed). */
  bad_batch_notices?: Record<string, BadBatchRecord[]>;
}

/** Policy versions kept for history and roll-back. */
export const MAX_POLICY_HISTORY = 50;

function check(doc: unknown): WebuxState {
  const d = doc as Partial<WebuxState> | null;
  if (!d || typeof d !== 'object' || d.format !== 1 || !Array.isArray(d.policy_history) || typeof d.quarantine !== 'object' || d.quarantine === null) {
    throw new Error('webux.json is not a WebUX document (format 1 with policy_history and quarantine); move it aside and restart the DMS');
  }
  return d as WebuxState;
}

/** Opens (or creates) the WebUX document in `dataDir`. */
export function openWebuxState(dataDir: string): Promise<Store<WebuxState>> {
  return JsonFileStore.open(path.join(dataDir, 'webux.json'), (): WebuxState => ({ format: 1, policy_history: [], quarantine: {}, license: null }), check);
}

/** Adds `policy` to the history unless its version is there already. */
export async function rememberPolicy(store: Store<WebuxState>, policy: PolicyRecord | null): Promise<void> {
  if (!policy || store.get().policy_history.some((p) => p.version === policy.version)) return;
  await store.update((s) => {
    s.policy_history.push(policy);
    s.policy_history.sort((a, b) => a.version - b.version);
    if (s.policy_history.length > MAX_POLICY_HISTORY) s.policy_history.splice(0, s.policy_history.length - MAX_POLICY_HISTORY);
  });
}
