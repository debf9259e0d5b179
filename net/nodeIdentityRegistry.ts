/**
 * Node identities of this process, by node name. The pipeline's `nodeIdentity` stage publishes its
 * node's identity (lazily: registration starts when the first stage asks); the stages that open
 * node-to-node links (the Storage Node's listeners, the SCC's replication and query legs) look it
 * up by the same node name. Every stage is created before any runs, so a name without an entry
 * when a stage starts means the node runs without a DMS (plain TCP).
 */
import type { NodeIdentity } from './nodeIdentity';

const identities = new Map<string, () => Promise<NodeIdentity>>();

/** Makes node `name`'s identity findable until the returned function is called. */
export function publishNodeIdentity(name: string, get: () => Promise<NodeIdentity>): () => void {
  identities.set(name, get);
  return () => {
    if (identities.get(name) === get) identities.delete(name);
  };
}

/** Node `name`'s identity (registering it now if no stage asked before), or undefined without one. */
export function nodeIdentityOf(name: string): Promise<NodeIdentity> | undefined {
  return identities.get(name)?.();
}
