/**
 * The last configuration a node got from the DMS, kept in its state directory (docs/control-plane.md,
 * "Configuration cache"): a registered SCC or Storage Node that restarts while the DMS cannot be
 * reached starts from it instead of the defaults, so a non-default hash election, its devices, its
 * replica set and the schemas survive a DMS outage. The node's certificate is already kept there for
 * the same reason (net/nodeIdentity.ts).
 *
 * Only the configuration part of the DMS's answer is stored (never the key or certificate the
 * registration answer also carries), written atomically (temp file, fsync, rename: a crash leaves
 * the old file or the new one) with the time it was fetched.
 */
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../lib/atomicFile';

/** The file name inside the node's state directory. */
export const DMS_CONFIG_CACHE_FILE = 'dms-config.json';

/** The value of `format`: a file of another format is not read (a newer build's, say). */
export const DMS_CONFIG_CACHE_FORMAT = 'hd-dms-config/1';

/**
 * Keys of the DMS's answer that are configuration (control/dms/nodeConfig.ts, `NodeConfig`); the
 * registration answer's key, certificate, CA and CRL are left out on purpose.
 */
const CONFIG_KEYS = ['cluster', 'schema_json', 'datasets', 'scc_targets', 'replicas', 'quarantined', 'record_size', 'devices', 'hash_election', 'health_interval_ms', 'config_poll_ms'] as const;

/** What the cache file holds. */
export interface CachedDmsConfig {
  /** The node the configuration is for: a state directory moved to another node is not trusted. */
  readonly node: string;
  /** When the DMS gave this configuration (ISO 8601). */
  readonly fetchedAt: string;
  /** The configuration part of the DMS's answer, as the DMS wrote it. */
  readonly config: Record<string, unknown>;
}

/** The configuration part of a registration answer or config document. */
export function configPart(body: unknown): Record<string, unknown> {
  const o = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of CONFIG_KEYS) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** Writes the cache file atomically (mode 0600: schemas and topology are not for every local user). */
export async function writeDmsConfigCache(file: string, c: CachedDmsConfig): Promise<void> {
  const doc = { format: DMS_CONFIG_CACHE_FORMAT, node: c.node, fetched_at: c.fetchedAt, config: configPart(c.config) };
  await writeFileAtomic(file, `${JSON.stringify(doc, null, 1)}\n`, 0o600);
}

/**
 * Reads the cache file of node `node`: undefined when there is none; throws with a message naming
 * the file and what is wrong when it cannot be used (not JSON, another format, another node's).
 */
export async function readDmsConfigCache(file: string, node: string): Promise<CachedDmsConfig | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file} cannot be read: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not JSON: ${(err as Error).message}`);
  }
  const o = (typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? doc : {}) as Record<string, unknown>;
  if (o.format !== DMS_CONFIG_CACHE_FORMAT) throw new Error(`${file} has format ${JSON.stringify(o.format)}, not '${DMS_CONFIG_CACHE_FORMAT}'`);
  if (o.node !== node) throw new Error(`${file} holds the configuration of node ${JSON.stringify(o.node)}, not '${node}'`);
  if (typeof o.fetched_at !== 'string' || Number.isNaN(Date.parse(o.fetched_at))) throw new Error(`${file}: 'fetched_at' must be an ISO 8601 time, got ${JSON.stringify(o.fetched_at)}`);
  if (typeof o.config !== 'object' || o.config === null || Array.isArray(o.config)) throw new Error(`${file}: 'config' must be an object`);
  return { node, fetchedAt: o.fetched_at, config: o.config as Record<string, unknown> };
}
