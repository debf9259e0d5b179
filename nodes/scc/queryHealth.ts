/**
 * Where the SCC's query dispatch learns replica health (docs/query.md, "What the SCC does"): the
 * `replicate` stage owns the {@link ReplicaSet} and registers it here under the SCC's node name; the
 * `queryDispatch` stage looks it up when a query arrives. Both stages run in one process, started
 * from one pipeline file, so a process-wide registry keyed by NODE_NAME joins them without either
 * stage creating the other's objects.
 */
import type { ReplicaState } from './replicas';

/** What dispatch needs of the replica set: each replica's state by name. */
export interface ReplicaHealth {
  states(): Readonly<Record<string, ReplicaState>>;
}

const registry = new Map<string, ReplicaHealth>();

/** Registers the replica health of SCC `nodeName`; returns the function that removes it again. */
export function registerReplicaHealth(nodeName: string, health: ReplicaHealth): () => void {
  registry.set(nodeName, health);
  return () => {
    if (registry.get(nodeName) === health) registry.delete(nodeName);
  };
}

/** The replica health registered for `nodeName`, if any. */
export function replicaHealthOf(nodeName: string): ReplicaHealth | undefined {
  return registry.get(nodeName);
}

/** Replica states a query may be sent to (or stay on): only `healthy` takes new work. */
export function takesQueries(state: ReplicaState | undefined): boolean {
  return state === 'healthy';
}

/** Replica states a running leg is moved away from: the replica failed or is quarantined. */
export function abandonsQueries(state: ReplicaState | undefined): boolean {
  return state === 'down' || state === 'out-of-sync';
}
