/**
 * A registered SCC following its configuration on the DMS (docs/scc.md, "Configuration from the
 * DMS"): each dataset's record size from its schema, and the replica set from the Storage Nodes of
 * the SCC's cluster, both as the registration answer gave them and as later reads of
 * `GET /v1/nodes/{name}/config` change them, without a restart, and the quarantine of its Storage
 * Nodes (`quarantined`). SN_TARGETS set by the operator pins the replica set: the DMS's is then only
 * reported when it differs; a quarantine applies to it by name all the same.
 */
import type { ReplicaAddress } from '../../control/api';
import type { DmsConfigFeed, DmsNodeConfig } from '../../net/dmsConfigFeed';
import type { DatasetRecordSizes } from './datasetRecordSizes';
import type { ReplicaSet } from './replicas';
import type { SnTarget } from './settings';

/** The DMS's replica set as SN_TARGETS entries. */
export function targetsOf(replicas: readonly ReplicaAddress[]): SnTarget[] {
  return replicas.map((r) => ({ name: r.name, host: r.host, controlPort: r.control_port, prodPort: r.prod_port }));
}

/** What {@link followDms} keeps up to date. */
export interface FollowDmsOptions {
  readonly recordSizes: DatasetRecordSizes;
  readonly replicas: ReplicaSet;
  /** SN_TARGETS was set: the DMS's replica set is not applied. */
  readonly fixedTargets: boolean;
  readonly log: (line: string) => void;
}

/** Applies the feed's configuration now and on every change; returns the function that stops following. */
export function followDms(feed: DmsConfigFeed, o: FollowDmsOptions): () => void {
  let warned = '';
  const quarantine = (cfg: DmsNodeConfig): void => {
    const { quarantined, released } = o.replicas.setQuarantined(new Set((cfg.quarantined ?? []).map((r) => r.name)));
    if (quarantined.length + released.length > 0) o.log(`quarantine from the DMS: ${[quarantined.length > 0 ? `quarantined ${quarantined.join(', ')}` : '', released.length > 0 ? `released ${released.join(', ')} (caught up before it takes queries)` : ''].filter((x) => x !== '').join('; ')}`);
  };
  const apply = (cfg: DmsNodeConfig): void => {
    o.recordSizes.replace(cfg.recordSizes);
    // A quarantined node stays in the replica set as a `quarantined` replica, so what it misses is
    // kept for it and a release brings it back level (docs/scc.md, "Quarantine").
    const fromDms = targetsOf([...cfg.replicas, ...(cfg.quarantined ?? [])].sort((a, b) => a.name.localeCompare(b.name)));
    const key = JSON.stringify(fromDms);
    if (o.fixedTargets) {
      if (key !== JSON.stringify(o.replicas.targets) && key !== warned) o.log(`the DMS names the replicas ${fromDms.map((t) => t.name).join(', ') || '(none)'}; SN_TARGETS is set, so it keeps ${o.replicas.targets.map((t) => t.name).join(', ')}`);
      warned = key;
      quarantine(cfg);
      return;
    }
    const { added, removed } = o.replicas.setTargets(fromDms);
    if (added.length + removed.length > 0) o.log(`replica set from the DMS: ${[added.length > 0 ? `added ${added.join(', ')}` : '', removed.length > 0 ? `removed ${removed.join(', ')}` : ''].filter((x) => x !== '').join('; ')} (now ${o.replicas.targets.map((t) => t.name).join(', ') || 'none'})`);
    quarantine(cfg);
  };
  o.recordSizes.useSource({ refresh: () => feed.refreshNow() });
  if (feed.config) apply(feed.config);
  feed.on('update', apply);
  return () => feed.off('update', apply);
}
