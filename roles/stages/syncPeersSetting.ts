/**
 * The `sync_peers` setting of the `storageNode` service (SYNC_PEERS): the peer replicas a Storage
 * Node copies missing batches from at a cold boot, `node_name:host:observability_port`
 * comma-separated (docs/storage-node.md, "Cold-boot synchronisation"); empty: none, the node is
 * ready at once.
 */
import { parseSyncPeers, type SyncPeer } from '../../nodes/storageNode/peerLink';
import type { Setting } from '../../pipelines/settings';

const EXPECTS = 'comma-separated node_name:host:observability_port, or empty';

/** The setting, with `doc` as its meaning. */
export function syncPeersSetting(doc: string): Setting<SyncPeer[]> {
  return {
    expects: EXPECTS,
    doc,
    required: false,
    fallback: [],
    parse: (v) => {
      if (typeof v.value !== 'string') return { ok: false, expected: EXPECTS };
      try {
        return { ok: true, value: parseSyncPeers(v.value) };
      } catch (err) {
        return { ok: false, expected: `${EXPECTS}; ${(err as Error).message}` };
      }
    },
  };
}
