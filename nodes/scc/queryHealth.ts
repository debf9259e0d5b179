/**
 * What the SCC's query dispatch needs of replica health (docs/query.md, "What the SCC does"): the
 * `sccNode` service owns the {@link ReplicaSet}; the `queryDispatch` service uses it and reads each
 * replica's state when a query arrives and while it runs.
 */
import type { ReplicaState } from './replicas';

/** What dispatch needs of the replica set: each replica's state by name. */
export interface ReplicaHealth {
  states(): Readonly<Record<string, ReplicaState>>;
}

/** Replica states a query may be sent to (or stay on): only `healthy` takes new work. */
export function takesQueries(state: ReplicaState | undefined): boolean {
  return state === 'healthy';
}

/**
 * Replica states a running leg is moved away from: the replica failed, is out of sync, reports
 * cold-boot synchronisation (`syncing`: it may lack batches its peers hold), or an administrator
 * quarantined it on the DMS (`quarantined`, the reference's "administrator quarantines it" → "SCC
 * re-routes queries to healthy replicas"; docs/scc.md, "Quarantine"). This and
 * {@link takesQueries} are the SCC's one "do not route to this node" decision.
 */
export function abandonsQueries(state: ReplicaState | undefined): boolean {
  return state === 'down' || state === 'out-of-sync' || state === 'syncing' || state === 'quarantined';
}
