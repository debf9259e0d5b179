/**
 * The live catalog: hd_sql re-reads its schema source (the DMS, the Proxy's copy or the schema
 * directory) every HD_SQL_CATALOG_REFRESH_MS and, when a dataset was added, changed or removed,
 * serves the new Catalog from the next statement on (SqlEngine.setCatalog). Statements already
 * running keep the catalog they started with. A failed read, or a set of schemas that cannot form a
 * catalog (two datasets with one name), keeps the catalog served and is logged once until it changes.
 */
import type { Schema } from '../engine-rs/schema';
import { Catalog } from './catalog';

/** What a refresh changed (dataset ids). */
export interface CatalogChange {
  readonly added: readonly string[];
  readonly changed: readonly string[];
  readonly removed: readonly string[];
}

/** How the refresh reads and applies the schemas. */
export interface CatalogRefreshOptions {
  /** HD_SQL_CATALOG_REFRESH_MS: time between the end of one read and the start of the next. */
  readonly intervalMs: number;
  /** Reads every schema of the source (throws when it cannot). */
  readonly load: () => Promise<Schema[]>;
  /** The catalog served now. */
  readonly current: () => Catalog;
  /** Serves `next` from the next statement on. */
  readonly apply: (next: Catalog) => void;
  readonly log: (line: string) => void;
}

/** A running refresh. */
export interface CatalogRefresh {
  /** Reads the source now and applies a change; undefined when nothing changed or the read failed. */
  refreshNow(): Promise<CatalogChange | undefined>;
  stop(): void;
}

/** Each schema's canonical JSON (descriptions included), by id. */
function fingerprints(schemas: readonly Schema[]): Map<string, string> {
  return new Map(schemas.map((s) => [s.id, JSON.stringify(s.toJSON())]));
}

/** What changed from `before` to `after`; undefined when nothing did. */
export function catalogChange(before: readonly Schema[], after: readonly Schema[]): CatalogChange | undefined {
  const a = fingerprints(before);
  const b = fingerprints(after);
  const added = [...b.keys()].filter((id) => !a.has(id)).sort();
  const removed = [...a.keys()].filter((id) => !b.has(id)).sort();
  const changed = [...b.keys()].filter((id) => a.has(id) && a.get(id) !== b.get(id)).sort();
  return added.length + removed.length + changed.length === 0 ? undefined : { added, changed, removed };
}

/** Starts refreshing every `intervalMs` (the timer does not keep the process alive). */
export function startCatalogRefresh(o: CatalogRefreshOptions): CatalogRefresh {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let lastError: string | undefined;
  let running: Promise<CatalogChange | undefined> | undefined;

  const once = async (): Promise<CatalogChange | undefined> => {
    let next: Catalog;
    let change: CatalogChange | undefined;
    try {
      const schemas = await o.load();
      change = catalogChange(o.current().schemas, schemas);
      if (!change) {
        if (lastError !== undefined) o.log(`catalog refresh: the schema source answers again (${o.current().schemas.length} dataset(s), unchanged)`);
        lastError = undefined;
        return undefined;
      }
      next = new Catalog(schemas);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (message !== lastError) o.log(`catalog refresh failed, still serving the ${o.current().schemas.length} dataset(s) read before: ${message}`);
      lastError = message;
      return undefined;
    }
    lastError = undefined;
    if (stopped) return undefined;
    o.apply(next);
    const parts = [['added', change.added], ['changed', change.changed], ['removed', change.removed]].filter(([, ids]) => ids.length > 0).map(([what, ids]) => `${what as string} ${(ids as string[]).join(', ')}`);
    o.log(`catalog refreshed: ${parts.join('; ')} (${next.schemas.length} dataset(s) now)`);
    return change;
  };
  // One read at a time: a refreshNow() during a timed read waits for it and reads again.
  const serial = (): Promise<CatalogChange | undefined> => {
    const before = running ?? Promise.resolve(undefined);
    const mine = before.catch(() => undefined).then(once);
    running = mine;
    return mine;
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void serial().finally(schedule), o.intervalMs);
    timer.unref();
  };
  schedule();
  return {
    refreshNow: serial,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
