/**
 * Storage Nodes running in this process, by node name. The `segmentStore` stage starts a node; the
 * query stages of the same pipeline (`scan`, `resultStream`) find it here by the `node_name` of
 * their config.json, so queries read the batches that node indexed and count on its /metrics.
 */
import type { StorageNode } from './node';

const nodes = new Map<string, StorageNode>();

/**
 * Makes `node` findable by its name until the returned function is called. A later node of the
 * same name (the pipeline run again in one process) replaces it; withdrawing the earlier one then
 * leaves the later one in place.
 */
export function publishStorageNode(node: StorageNode): () => void {
  const name = node.config.nodeName;
  nodes.set(name, node);
  return () => {
    if (nodes.get(name) === node) nodes.delete(name);
  };
}

/** The node called `name` running in this process, if any. */
export function storageNodeNamed(name: string): StorageNode | undefined {
  return nodes.get(name);
}
