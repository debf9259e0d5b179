/**
 * A registered Storage Node following the dataset schemas on the DMS (docs/storage-node.md,
 * "Configuration from the DMS"): every schema distributed to its cluster, as the registration
 * answer gave them and as later reads of `GET /v1/nodes/{name}/config` change them, goes to its
 * {@link QuerySchemas} (filters, columns, aggregates, zone maps of new segments) without a restart
 * or a schema file.
 */
import { Schema, SchemaError } from '../../engine-rs/index';
import type { DmsConfigFeed, DmsNodeConfig } from '../../net/dmsConfigFeed';
import type { LogFn } from '../../lib/logging';
import type { QuerySchemas } from './querySchemas';

/** Parses the DMS's schemas; a schema that does not parse is reported and left out. */
export function schemasOf(cfg: DmsNodeConfig, report: LogFn): Map<string, Schema> {
  const out = new Map<string, Schema>();
  for (const [id, json] of cfg.datasets) {
    try {
      out.set(id, Schema.parse(JSON.stringify(json)));
    } catch (err) {
      const why = err instanceof SchemaError ? err.issues.map((i) => `${i.path}: ${i.message}`).join('; ') : (err as Error).message;
      report(`the DMS's schema of dataset '${id}' is not usable here: ${why}`, 'warn');
    }
  }
  return out;
}

/** Keeps `schemas` on the DMS's datasets; returns the function that stops following. */
export function followDmsSchemas(feed: DmsConfigFeed, schemas: QuerySchemas, report: LogFn): () => void {
  const apply = (cfg: DmsNodeConfig): void => schemas.setDms(schemasOf(cfg, report), () => feed.refreshNow());
  if (feed.config) apply(feed.config);
  else schemas.setDms(new Map(), () => feed.refreshNow());
  feed.on('update', apply);
  return () => feed.off('update', apply);
}
