/**
 * How a stage of an SCC or Storage Node pipeline waits for its node's DMS identity (the
 * `nodeIdentity` stage, net/nodeIdentityRegistry.ts) before it listens or connects.
 */
import { defer, from, switchMap, type Observable } from 'rxjs';
import type { NodeIdentity } from '../../net/nodeIdentity';
import { nodeIdentityOf } from '../../net/nodeIdentityRegistry';

/**
 * Subscribes to `build(identity)` once node `nodeName`'s identity is registered, or at once with
 * undefined when the node has none (no DMS: plain TCP). A failed registration is the stream's error.
 */
export function withNodeIdentity<T>(nodeName: string, build: (id: NodeIdentity | undefined) => Observable<T>): Observable<T> {
  return defer(() => {
    const pending = nodeIdentityOf(nodeName);
    return pending ? from(pending).pipe(switchMap((id) => build(id))) : build(undefined);
  });
}
