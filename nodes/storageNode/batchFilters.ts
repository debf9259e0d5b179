/**
 * The Storage Node's batch filters for the Proxy's filter verdict (docs/storage-node.md, "Batch
 * filters"; docs/proxy.md, "Filter verdict"): per durable batch, the min/max of each integer zone
 * field of its segment, over the whole batch (the segment's batch filter, the union of its block
 * zones, docs/segment.md). The node does not know field names or types (schemas are the query
 * path's), so a field is named by its record layout — offset, size, kind, byte order — exactly as
 * the segment keeps it; the Proxy maps layouts to the fields of its schema.
 *
 * Filters come from each segment's footer once and are cached per batch (bounded, least recently
 * used first out). A cached filter is used only while the index still holds the same entry, so a
 * replaced batch is read again.
 *
 * Who may read them: the ranges are the min/max of every integer field, hidden ones included, so
 * they are served only over mutual TLS (the observability port's TLS side, with the node's DMS-CA
 * certificate) to a client certificate of role `proxy`; plain HTTP, no certificate or another role
 * is refused (401/403), and a node without a DMS identity serves them to nobody. The Proxy sends
 * the asking identity's hidden byte ranges (`hidden=offset:size,...`) and no range sharing one of
 * those bytes is answered.
 */
import { BatchID, BATCH_ID_LEN } from '../../engine-rs/batchId';
import { SegmentReader } from '../../engine-rs/segmentReader';
import type { ZoneKind } from '../../engine-rs/segmentZones';
import type { JsonResponse, RouteCaller } from '../../lib/observability';
import { peerIdentity } from '../../net/mtls';
import type { NodeIdentity } from '../../net/nodeIdentity';
import type { BatchEntry, BatchIndex } from './batchIndex';

/** At most this many batch ids in one `GET /v1/batch-filters` (they travel in the URL: 64 × 129 bytes). */
export const MAX_FILTER_IDS = 64;
/** Batches whose filters are kept in memory by default. */
export const DEFAULT_FILTER_CACHE = 65_536;

/** The range of one zone field over a batch; `min`/`max` are decimal integers. `empty`: no value (min > max). */
export interface FieldRangeJson {
  readonly offset: number;
  readonly size: number;
  readonly kind: Extract<ZoneKind, 'unsigned' | 'signed'>;
  readonly big_endian: boolean;
  readonly min: string;
  readonly max: string;
  readonly empty: boolean;
}

/** The filter of one batch as the route answers it. */
export interface BatchFilterJson {
  readonly records: number;
  readonly fields: readonly FieldRangeJson[];
}

/** The body of a `GET /v1/batch-filters` answer. */
export interface BatchFiltersAnswer {
  readonly dataset: string;
  /** By batch id hex; batches not durable here (or whose segment cannot be read) are absent. */
  readonly filters: Record<string, BatchFilterJson>;
}

/** The filter of a segment: its integer zone fields (floats and byte strings are left out). */
export async function readBatchFilter(path: string): Promise<BatchFilterJson> {
  // A footer in the footer cache (recovery put every one there) is read on this thread: the
  // Proxy's first filters for a dataset ask for every batch at once.
  const r = SegmentReader.openCached(path) ?? (await SegmentReader.open(path));
  const zones = r.batchFilter();
  const fields: FieldRangeJson[] = [];
  r.fields.forEach((f, i) => {
    const z = zones[i];
    if (!z || (f.kind !== 'unsigned' && f.kind !== 'signed')) return;
    fields.push({ offset: f.offset, size: f.size, kind: f.kind, big_endian: f.bigEndian === true, min: String(z.min), max: String(z.max), empty: z.empty });
  });
  return { records: r.records, fields };
}

/** Batch filters of the batches in `index`, read once per batch entry and cached. */
export class BatchFilterCache {
  private readonly cache = new Map<string, { entry: BatchEntry; filter: Promise<BatchFilterJson | undefined> }>();

  /** @param maxEntries batches kept (least recently used dropped first) */
  constructor(
    private readonly index: BatchIndex,
    private readonly maxEntries = DEFAULT_FILTER_CACHE,
  ) {}

  /** Batches cached now. */
  get size(): number {
    return this.cache.size;
  }

  /** The filter of a batch, if it is durable here and its segment reads. */
  async get(dataset: string, id: BatchID): Promise<BatchFilterJson | undefined> {
    const entry = this.index.get(dataset, id);
    if (!entry) return undefined;
    const key = `${dataset}\u0000${id.toHex()}`;
    let hit = this.cache.get(key);
    if (hit && hit.entry !== entry) hit = undefined;
    this.cache.delete(key);
    if (!hit) {
      // A segment that does not read (removed or damaged since recovery) gives no filter: the Proxy
      // then never excludes the batch. It is not cached, so a later call tries again.
      hit = { entry, filter: readBatchFilter(entry.path).catch(() => undefined) };
      void hit.filter.then((f) => {
        if (f === undefined && this.cache.get(key)?.entry === entry) this.cache.delete(key);
      });
    }
    this.cache.set(key, hit);
    while (this.cache.size > this.maxEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
    return hit.filter;
  }
}

const HEX_ID = new RegExp(`^[0-9a-fA-F]{${BATCH_ID_LEN * 2}}$`);
const PARAMS = new Set(['dataset', 'batch_ids', 'hidden']);
/** The certificate role batch filters are served to. */
export const BATCH_FILTER_ROLE = 'proxy';
/** At most this many hidden ranges in one request. */
export const MAX_HIDDEN_RANGES = 1024;

function bad(message: string): JsonResponse {
  return { status: 400, body: { error: message } };
}

/**
 * Whether `caller` may read batch filters: only over mutual TLS with a DMS-CA certificate of role
 * `proxy` (`identity`: the node's, absent when it is not registered). Undefined when it may, else
 * the refusal (401 without a certificate, 403 otherwise), recorded with the node's identity.
 */
export function batchFilterRefusal(caller: RouteCaller, identity: NodeIdentity | undefined): JsonResponse | undefined {
  const refuse = (status: number, why: string): JsonResponse => {
    identity?.peerRefused(`batch filters: ${why}`);
    return { status, body: { error: why } };
  };
  if (!identity) return refuse(403, `batch filters are served only over mutual TLS to the Proxy (a DMS-CA certificate of role ${BATCH_FILTER_ROLE}); this node has no DMS identity, so it serves them to nobody`);
  if (!caller.tls) return refuse(403, `batch filters are served only over mutual TLS (https on this port) to a DMS-CA certificate of role ${BATCH_FILTER_ROLE}; this request came over plain HTTP`);
  const peer = peerIdentity(caller.socket);
  if (!peer) return refuse(401, `batch filters need a client certificate of DMS-CA of role ${BATCH_FILTER_ROLE}; none (or none this node verifies) was presented`);
  if (peer.role !== BATCH_FILTER_ROLE) return refuse(403, `batch filters are served only to role ${BATCH_FILTER_ROLE}; '${peer.name}' holds a ${peer.role} certificate`);
  identity.peerAccepted(peer, 'batch-filters');
  return undefined;
}

/** `hidden=offset:size,...`: the byte ranges whose ranges are left out; undefined when malformed. */
function readHidden(raw: string | null): { offset: number; size: number }[] | undefined {
  if (raw === null || raw === '') return [];
  const parts = raw.split(',');
  if (parts.length > MAX_HIDDEN_RANGES) return undefined;
  const out: { offset: number; size: number }[] = [];
  for (const p of parts) {
    const m = /^(\d{1,5}):(\d{1,5})$/.exec(p);
    if (!m) return undefined;
    out.push({ offset: Number(m[1]), size: Number(m[2]) });
  }
  return out;
}

/** The filter without the ranges that share a byte with `hidden`. */
function withoutHidden(f: BatchFilterJson, hidden: readonly { offset: number; size: number }[]): BatchFilterJson {
  if (hidden.length === 0) return f;
  return { records: f.records, fields: f.fields.filter((r) => !hidden.some((h) => r.offset < h.offset + h.size && h.offset < r.offset + r.size)) };
}

/**
 * `GET /v1/batch-filters?dataset=<id>&batch_ids=<hex>,<hex>,...[&hidden=<offset>:<size>,...]`: the
 * filters of the named batches this node holds, without the ranges sharing a hidden byte. The
 * caller must have passed {@link batchFilterRefusal}. 400 for a malformed request (the message
 * says what to send).
 */
export async function batchFiltersRoute(cache: BatchFilterCache, q: URLSearchParams): Promise<JsonResponse> {
  for (const k of new Set(q.keys())) {
    if (!PARAMS.has(k)) return bad(`unknown parameter '${k}': send dataset=<id>&batch_ids=<hex>,<hex>,...[&hidden=<offset>:<size>,...]`);
    if (q.getAll(k).length > 1) return bad(`parameter '${k}' is given more than once`);
  }
  const dataset = q.get('dataset');
  if (dataset === null || dataset === '') return bad('dataset is missing: send dataset=<id>&batch_ids=<hex>,<hex>,...');
  const raw = q.get('batch_ids');
  if (raw === null || raw === '') return bad(`batch_ids is missing: send 1 to ${MAX_FILTER_IDS} batch ids (hex, comma-separated)`);
  const hexes = raw.split(',');
  if (hexes.length > MAX_FILTER_IDS) return bad(`${hexes.length} batch ids in one call; at most ${MAX_FILTER_IDS}: split the list over several calls`);
  const ids: BatchID[] = [];
  for (const [i, h] of hexes.entries()) {
    if (!HEX_ID.test(h)) return bad(`batch_ids[${i}] '${h.length > 40 ? `${h.slice(0, 40)}…` : h}' is not a batch id: ${BATCH_ID_LEN * 2} hex digits`);
    ids.push(BatchID.fromHex(h));
  }
  const hidden = readHidden(q.get('hidden'));
  if (!hidden) return bad(`hidden must be up to ${MAX_HIDDEN_RANGES} byte ranges <offset>:<size>, comma-separated`);
  const filters: Record<string, BatchFilterJson> = {};
  const found = await Promise.all(ids.map((id) => cache.get(dataset, id)));
  ids.forEach((id, i) => {
    const f = found[i];
    if (f) filters[id.toHex()] = withoutHidden(f, hidden);
  });
  const body: BatchFiltersAnswer = { dataset, filters };
  return { status: 200, body };
}
