/**
 * The Proxy's batch filters from the Storage Nodes of the primary cluster (docs/proxy.md, "Filter
 * verdict"): every node is asked for every named batch (`GET /v1/batch-filters` on its
 * observability port, docs/storage-node.md) in parallel, under one short deadline. Nodes answer by
 * record layout (offset, size, kind, byte order); the ranges are mapped here to the fields of the
 * dataset's schema whose layout and integer kind match exactly, and ranges of replicas of the same
 * batch are joined (min of mins, max of maxes).
 *
 * A node that fails, times out or answers something malformed only leaves its batches unknown:
 * an unknown batch is never excluded, so a failure can make the verdict `partial` or `off` but
 * never wrong. What a node answered before still counts when it fails later (a durable batch's
 * ranges do not change): a failure never narrows a joined range.
 *
 * Two caches keep the work of a statement over many durable batches to a lookup per batch: each
 * node's answer per batch (so a node is asked only for batches it has not answered), and, once
 * every node of the topology has answered for a batch, its joined, named filter
 * (namedFilterCache.ts), kept per dataset, schema layout, hidden ranges and topology, so a changed
 * schema, other hidden ranges or another set of nodes never reads an entry made for another.
 *
 * The nodes serve batch filters only over mutual TLS to the `proxy` role (docs/storage-node.md):
 * the Proxy calls them with its DMS-CA certificate (connections kept between queries, remade when
 * the certificate renews) and checks that each node's certificate names it. The identity's hidden
 * byte ranges go with every request (`hidden=offset:size,...`) so the nodes leave those ranges
 * out, and any range that still shares a hidden byte is dropped here: a hidden field's range never
 * reaches the verdict.
 */
import https from 'node:https';
import { checkServerIdentity } from 'node:tls';
import type { FieldInfo, Schema } from '../../engine-rs/schema';
import { getText } from '../../net/getText';
import type { MtlsIdentity } from '../../net/mtls';
import type { StorageNodeAddress } from './dmsLink';
import { overlapsAny, type ByteRange } from './rewrite';
import type { BatchFilter, BatchFilterSource } from './verdict';
import { NamedFilterCache, viewKey, type FilterView, type NamedFilter } from './namedFilterCache';
import type { LogFn } from '../../lib/logging';

/** Ids per request (the Storage Node takes at most 64: they travel in the URL). */
export const FILTER_IDS_PER_CALL = 64;
/** Default deadline of one verdict's filter reads, over all nodes. */
export const DEFAULT_FILTER_TIMEOUT_MS = 1000;
/** Requests in flight per node. */
const PER_NODE_CONCURRENCY = 4;
/**
 * Batch filters kept, in each of two caches: the ranges each node answered (per node, dataset,
 * hidden ranges and batch) and the joined, named filters (namedFilterCache.ts). A durable batch's
 * ranges never change.
 */
export const FILTER_CACHE_ENTRIES = 200_000;

/** Options of {@link StorageNodeFilters}. */
export interface StorageNodeFiltersOptions {
  /** The Storage Nodes to ask (read on every call: the topology changes). */
  readonly nodes: () => readonly StorageNodeAddress[];
  /** The schema of a dataset, to name the fields (none: no filter is known). */
  readonly schema: (dataset: string) => Schema | undefined;
  /** Deadline of one `filters` call (default {@link DEFAULT_FILTER_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  /** Where a failing node is reported (at most once per node until it answers again). */
  readonly log?: LogFn;
  /**
   * The Proxy's DMS-CA identity: nodes are called over mutual TLS with it, each node's certificate
   * checked to name the node. Absent: plain HTTP (stand-in nodes in tests; a real Storage Node
   * refuses it).
   */
  readonly identity?: MtlsIdentity;
  /** Batch filters kept, per cache (default {@link FILTER_CACHE_ENTRIES}; tests make it small). */
  readonly cacheEntries?: number;
}

/** `hidden=` of a request: the hidden byte ranges as `offset:size`, comma-separated. */
export function hiddenParam(hidden: readonly ByteRange[]): string {
  return hidden.map((r) => `${r.offset}:${r.size}`).join(',');
}

/** One field range as a node sends it. */
interface WireRange {
  offset: number;
  size: number;
  kind: 'unsigned' | 'signed';
  big_endian: boolean;
  min: bigint;
  max: bigint;
}

const INT = /^-?\d+$/;

/** The ranges of one batch from a node's answer; undefined when malformed. */
function readRanges(v: unknown): WireRange[] | undefined {
  if (typeof v !== 'object' || v === null || !Array.isArray((v as { fields?: unknown }).fields)) return undefined;
  const out: WireRange[] = [];
  for (const f of (v as { fields: unknown[] }).fields) {
    if (typeof f !== 'object' || f === null) return undefined;
    const r = f as Record<string, unknown>;
    if (!Number.isInteger(r.offset) || !Number.isInteger(r.size) || (r.kind !== 'unsigned' && r.kind !== 'signed') || typeof r.big_endian !== 'boolean') return undefined;
    if (typeof r.min !== 'string' || typeof r.max !== 'string' || !INT.test(r.min) || !INT.test(r.max)) return undefined;
    out.push({ offset: r.offset as number, size: r.size as number, kind: r.kind, big_endian: r.big_endian, min: BigInt(r.min), max: BigInt(r.max) });
  }
  return out;
}

/** The zone kind a field's values compare as, for the integer-like types the verdict uses. */
function kindOf(f: FieldInfo): 'unsigned' | 'signed' | undefined {
  if (f.enum !== undefined || f.timeReference !== undefined || f.array !== undefined || f.size > 8) return undefined;
  if (f.type === 'timestamp') return f.size === 4 ? 'unsigned' : f.size === 8 ? 'signed' : undefined;
  if (/^uint(8|16|32|64)$/.test(f.type)) return 'unsigned';
  if (/^int(8|16|32|64)$/.test(f.type)) return 'signed';
  return undefined;
}

/** Names ranges with the schema's fields of the same layout and kind; undefined when none match. Fields sharing a hidden byte get none. */
function toBatchFilter(schema: Schema, ranges: readonly WireRange[], hidden: readonly ByteRange[]): BatchFilter | undefined {
  const big = schema.byteOrder === 'big';
  const out: Record<string, { min: string; max: string }> = {};
  for (const f of schema.fields) {
    if (overlapsAny(f.offset, f.size, hidden)) continue;
    const kind = kindOf(f);
    // Multi-byte values are read in the schema's byte order; a range kept in another one is not this field's.
    const r = kind && ranges.find((x) => x.offset === f.offset && x.size === f.size && x.kind === kind && (f.size === 1 || x.big_endian === big));
    if (r) out[f.name] = Object.freeze({ min: String(r.min), max: String(r.max) });
  }
  // Frozen: kept filters are shared by every later query.
  return Object.keys(out).length > 0 ? Object.freeze(out) : undefined;
}

/** Joins the ranges two replicas gave for one batch: the union of each layout's range. */
function join(a: WireRange[], b: readonly WireRange[]): WireRange[] {
  for (const r of b) {
    const have = a.find((x) => x.offset === r.offset && x.size === r.size && x.kind === r.kind && x.big_endian === r.big_endian);
    if (!have) a.push({ ...r });
    else {
      have.min = r.min < have.min ? r.min : have.min;
      have.max = r.max > have.max ? r.max : have.max;
    }
  }
  return a;
}

/** A {@link BatchFilterSource} reading the Storage Nodes' batch filters over HTTP. */
export class StorageNodeFilters implements BatchFilterSource {
  private readonly failing = new Set<string>();
  /**
   * The ranges each node gave per batch, in least-recently-used order. A durable batch is never
   * rewritten, so its ranges hold for every later query: without this every query read every
   * named batch's filter again (46 HTTPS calls for the demo's 1 441 batches, most of a count(*)'s
   * time). Only answers are kept: a batch a node did not hold yet is asked again.
   */
  private readonly cache = new Map<string, WireRange[]>();
  /** Kept-alive mutual-TLS connections to the nodes, and the material they were made with. */
  private agent: { agent: https.Agent; certPem: string; crlPem: string | undefined } | undefined;

  /** Entries kept by each of the two caches. */
  private readonly capacity: number;
  /** The joined, named filters per view and batch: a query's hits cost one lookup each. */
  private readonly named: NamedFilterCache;

  /** @param opts the nodes, the schemas, the deadline, the Proxy's identity */
  constructor(private readonly opts: StorageNodeFiltersOptions) {
    this.capacity = Math.max(2, opts.cacheEntries ?? FILTER_CACHE_ENTRIES);
    this.named = new NamedFilterCache(this.capacity);
  }

  /** Closes the kept connections. */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  /** The agent of the current certificate (a renewed one, or a new revocation list, gets a new agent). */
  private agentOf(id: MtlsIdentity): https.Agent {
    const m = id.material;
    if (this.agent && this.agent.certPem === m.certPem && this.agent.crlPem === m.crlPem) return this.agent.agent;
    this.agent?.agent.destroy();
    const agent = new https.Agent({ keepAlive: true, maxSockets: PER_NODE_CONCURRENCY, ca: m.caPem, cert: m.certPem, key: m.keyPem, ...(m.crlPem !== undefined && { crl: m.crlPem }), minVersion: 'TLSv1.2' });
    this.agent = { agent, certPem: m.certPem, crlPem: m.crlPem };
    return agent;
  }

  /**
   * Filters of the batches some node answered for, named by the dataset's schema; no field
   * sharing a byte with `hidden` has a range.
   */
  async filters(dataset: string, batchIds: readonly string[], hidden: readonly ByteRange[] = []): Promise<ReadonlyMap<string, BatchFilter>> {
    const schema = this.opts.schema(dataset);
    const nodes = this.opts.nodes();
    const out = new Map<string, BatchFilter>();
    if (!schema || nodes.length === 0 || batchIds.length === 0) return out;
    // Batches every node of this view answered before come joined and named (namedFilterCache.ts);
    // only the others are joined here, from what each node answered (kept) or answers now.
    const view = this.named.view(viewKey(dataset, schema, hidden, nodes));
    const hits: (NamedFilter | undefined)[] = new Array<NamedFilter | undefined>(batchIds.length);
    const missing = new Set<string>();
    for (let i = 0; i < batchIds.length; i++) {
      const b = batchIds[i] as string;
      let e = view.get(b);
      if (e === undefined) {
        const lower = b.toLowerCase();
        e = lower === b ? undefined : view.get(lower);
        if (e === undefined) missing.add(lower);
      }
      hits[i] = e;
    }
    const made = missing.size > 0 ? await this.joinMissing(dataset, schema, nodes, [...missing], hidden, view) : undefined;
    // The caller's spelling of each id is kept (ids are compared in lower case).
    for (let i = 0; i < batchIds.length; i++) {
      const b = batchIds[i] as string;
      const bf = hits[i] ?? made?.get(b.toLowerCase());
      if (bf) out.set(b, bf);
    }
    return out;
  }

  /**
   * Joins and names the ranges the nodes give for `ids` (lower case); keeps in `view` those every
   * node answered for (a batch some node did not answer is asked again next time).
   */
  private async joinMissing(dataset: string, schema: Schema, nodes: readonly StorageNodeAddress[], ids: readonly string[], hidden: readonly ByteRange[], view: FilterView): Promise<Map<string, NamedFilter>> {
    const signal = AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_FILTER_TIMEOUT_MS);
    const answers = await Promise.all(nodes.map((n) => this.askNode(n, dataset, ids, hidden, signal)));
    const made = new Map<string, NamedFilter>();
    for (const id of ids) {
      let joined: WireRange[] | undefined;
      let all = true;
      for (const a of answers) {
        const ranges = a.get(id);
        if (ranges === undefined) all = false;
        else joined = join(joined ?? [], ranges);
      }
      if (joined === undefined) continue;
      const bf = toBatchFilter(schema, joined, hidden) ?? null;
      made.set(id, bf);
      if (all) view.set(id, bf);
    }
    return made;
  }

  /** One node's ranges by batch id: those it answered before (kept) and those it answers now; a failing node adds none. */
  private async askNode(node: StorageNodeAddress, dataset: string, ids: readonly string[], hidden: readonly ByteRange[], signal: AbortSignal): Promise<Map<string, WireRange[]>> {
    const got = new Map<string, WireRange[]>();
    const prefix = `${node.name}\u0000${node.host}:${node.port}\u0000${dataset}\u0000${hiddenParam(hidden)}\u0000`;
    const keyOf = (id: string): string => prefix + id;
    const missing: string[] = [];
    for (const id of ids) {
      const key = keyOf(id);
      const hit = this.cache.get(key);
      if (hit === undefined) missing.push(id);
      else {
        // Most recently used last.
        this.cache.delete(key);
        this.cache.set(key, hit);
        got.set(id, hit);
      }
    }
    const chunks: string[][] = [];
    for (let i = 0; i < missing.length; i += FILTER_IDS_PER_CALL) chunks.push(missing.slice(i, i + FILTER_IDS_PER_CALL));
    let next = 0;
    const fresh = new Map<string, WireRange[]>();
    try {
      const worker = async (): Promise<void> => {
        while (next < chunks.length) {
          const chunk = chunks[next++] as string[];
          for (const [id, r] of await this.call(node, dataset, chunk, hidden, signal)) {
            fresh.set(id, r);
            this.remember(keyOf(id), r);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(PER_NODE_CONCURRENCY, chunks.length) }, worker));
      this.failing.delete(node.name);
      for (const [id, r] of fresh) got.set(id, r);
    } catch (err) {
      if (!this.failing.has(node.name)) {
        this.failing.add(node.name);
        this.opts.log?.(`batch filters of Storage Node '${node.name}' (${node.host}:${node.port}) could not be read: ${(err as Error).message}; its batches are not excluded`, 'warn');
      }
    }
    // Its earlier answers still count: a durable batch's ranges do not change when the node fails.
    return got;
  }

  /** Keeps `ranges` (copied: joins change theirs), dropping the least recently used past the bound. */
  private remember(key: string, ranges: readonly WireRange[]): void {
    this.cache.delete(key);
    this.cache.set(key, ranges.map((r) => ({ ...r })));
    while (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value as string);
  }

  /**
   * `GET <pathAndQuery>` on a node's observability port over the same connections (mutual TLS with
   * the Proxy's identity, the node's certificate checked to name it; plain without an identity).
   * Used by the window resolution (net/storageNodeBatches.ts).
   */
  get(node: StorageNodeAddress, pathAndQuery: string, signal: AbortSignal): Promise<{ status: number; text: string }> {
    const id = this.opts.identity;
    return getText(node, pathAndQuery, signal, id && { agent: this.agentOf(id), servername: node.name, checkServerIdentity: (_h, cert) => checkServerIdentity(node.name, cert) });
  }

  /** The Storage Nodes the filters are read from now (the topology's). */
  nodes(): readonly StorageNodeAddress[] {
    return this.opts.nodes();
  }

  /** One `GET /v1/batch-filters`; throws on any failure or malformed answer. */
  private async call(node: StorageNodeAddress, dataset: string, ids: readonly string[], hidden: readonly ByteRange[], signal: AbortSignal): Promise<Map<string, WireRange[]>> {
    const id = this.opts.identity;
    const query = `dataset=${encodeURIComponent(dataset)}&batch_ids=${ids.join(',')}${hidden.length > 0 ? `&hidden=${hiddenParam(hidden)}` : ''}`;
    const res = await getText(node, `/v1/batch-filters?${query}`, signal, id && { agent: this.agentOf(id), servername: node.name, checkServerIdentity: (_h, cert) => checkServerIdentity(node.name, cert) });
    const text = res.text;
    if (res.status !== 200) throw new Error(`HTTP ${res.status} ${text.slice(0, 200)}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`the answer is not JSON: ${text.slice(0, 80)}`);
    }
    const b = body as { dataset?: unknown; filters?: unknown };
    if (typeof body !== 'object' || body === null || b.dataset !== dataset || typeof b.filters !== 'object' || b.filters === null || Array.isArray(b.filters)) {
      throw new Error(`the answer is not {dataset: '${dataset}', filters: {...}}`);
    }
    const asked = new Set(ids);
    const out = new Map<string, WireRange[]>();
    for (const [id, v] of Object.entries(b.filters as Record<string, unknown>)) {
      // A batch not asked for is ignored; a malformed filter discards the whole answer (the node is not trusted).
      if (!asked.has(id.toLowerCase())) continue;
      const ranges = readRanges(v);
      if (!ranges) throw new Error(`the filter of batch ${id.slice(0, 16)}… is malformed`);
      // A node that still sends a hidden range (an older node) has it dropped here.
      out.set(id.toLowerCase(), ranges.filter((r) => !overlapsAny(r.offset, r.size, hidden)));
    }
    return out;
  }
}
