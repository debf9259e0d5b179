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
 * never wrong.
 *
 * The nodes serve batch filters only over mutual TLS to the `proxy` role (docs/storage-node.md):
 * the Proxy calls them with its DMS-CA certificate (connections kept between queries, remade when
 * the certificate renews) and checks that each node's certificate names it. The identity's hidden
 * byte ranges go with every request (`hidden=offset:size,...`) so the nodes leave those ranges
 * out, and any range that still shares a hidden byte is dropped here: a hidden field's range never
 * reaches the verdict.
 */
import http from 'node:http';
import https from 'node:https';
import { checkServerIdentity } from 'node:tls';
import type { FieldInfo, Schema } from '../../engine-rs/schema';
import type { MtlsIdentity } from '../../net/mtls';
import type { StorageNodeAddress } from './dmsLink';
import { overlapsAny, type ByteRange } from './rewrite';
import type { BatchFilter, BatchFilterSource } from './verdict';
import type { LogFn } from '../../lib/logging';

/** Ids per request (the Storage Node takes at most 64: they travel in the URL). */
export const FILTER_IDS_PER_CALL = 64;
/** Default deadline of one verdict's filter reads, over all nodes. */
export const DEFAULT_FILTER_TIMEOUT_MS = 1000;
/** Requests in flight per node. */
const PER_NODE_CONCURRENCY = 4;
/** Batch filters kept (per node, dataset, hidden ranges and batch): a durable batch's ranges never change. */
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
    if (r) out[f.name] = { min: String(r.min), max: String(r.max) };
  }
  return Object.keys(out).length > 0 ? out : undefined;
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

  /** @param opts the nodes, the schemas, the deadline, the Proxy's identity */
  constructor(private readonly opts: StorageNodeFiltersOptions) {}

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
    const ids = [...new Set(batchIds.map((b) => b.toLowerCase()))];
    const signal = AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_FILTER_TIMEOUT_MS);
    const answers = await Promise.all(nodes.map((n) => this.askNode(n, dataset, ids, hidden, signal)));
    const joined = new Map<string, WireRange[]>();
    for (const a of answers) {
      for (const [id, ranges] of a) joined.set(id, join(joined.get(id) ?? [], ranges));
    }
    // The caller's spelling of each id is kept (ids are compared in lower case).
    for (const b of batchIds) {
      const ranges = joined.get(b.toLowerCase());
      const bf = ranges && toBatchFilter(schema, ranges, hidden);
      if (bf) out.set(b, bf);
    }
    return out;
  }

  /** One node's ranges by batch id; empty when the node fails (its batches stay unknown). */
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
    try {
      const worker = async (): Promise<void> => {
        while (next < chunks.length) {
          const chunk = chunks[next++] as string[];
          for (const [id, r] of await this.call(node, dataset, chunk, hidden, signal)) {
            got.set(id, r);
            this.remember(keyOf(id), r);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(PER_NODE_CONCURRENCY, chunks.length) }, worker));
      this.failing.delete(node.name);
      return got;
    } catch (err) {
      if (!this.failing.has(node.name)) {
        this.failing.add(node.name);
        this.opts.log?.(`batch filters of Storage Node '${node.name}' (${node.host}:${node.port}) could not be read: ${(err as Error).message}; its batches are not excluded`, 'warn');
      }
      return new Map();
    }
  }

  /** Keeps `ranges` (copied: joins change theirs), dropping the least recently used past the bound. */
  private remember(key: string, ranges: readonly WireRange[]): void {
    this.cache.delete(key);
    this.cache.set(key, ranges.map((r) => ({ ...r })));
    while (this.cache.size > FILTER_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
  }

  /**
   * `GET <pathAndQuery>` on a node's observability port over the same connections (mutual TLS with
   * the Proxy's identity, the node's certificate checked to name it; plain without an identity).
   * Used by the window resolution (storageNodeBatches.ts).
   */
  get(node: StorageNodeAddress, pathAndQuery: string, signal: AbortSignal): Promise<{ status: number; text: string }> {
    const host = node.host.includes(':') ? `[${node.host}]` : node.host;
    const id = this.opts.identity;
    const url = `${id ? 'https' : 'http'}://${host}:${node.port}${pathAndQuery}`;
    return getText(url, signal, id && { agent: this.agentOf(id), servername: node.name, checkServerIdentity: (_h, cert) => checkServerIdentity(node.name, cert) });
  }

  /** The Storage Nodes the filters are read from now (the topology's). */
  nodes(): readonly StorageNodeAddress[] {
    return this.opts.nodes();
  }

  /** One `GET /v1/batch-filters`; throws on any failure or malformed answer. */
  private async call(node: StorageNodeAddress, dataset: string, ids: readonly string[], hidden: readonly ByteRange[], signal: AbortSignal): Promise<Map<string, WireRange[]>> {
    const host = node.host.includes(':') ? `[${node.host}]` : node.host;
    const id = this.opts.identity;
    const query = `dataset=${encodeURIComponent(dataset)}&batch_ids=${ids.join(',')}${hidden.length > 0 ? `&hidden=${hiddenParam(hidden)}` : ''}`;
    const url = `${id ? 'https' : 'http'}://${host}:${node.port}/v1/batch-filters?${query}`;
    const res = await getText(url, signal, id && { agent: this.agentOf(id), servername: node.name, checkServerIdentity: (_h, cert) => checkServerIdentity(node.name, cert) });
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

/** GET `url` (https with `tls`, else plain http) as text, under `signal`. */
function getText(url: string, signal: AbortSignal, tls?: https.RequestOptions): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const done = (res: http.IncomingMessage): void => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    };
    const req = tls ? https.request(url, { ...tls, method: 'GET', signal }, done) : http.request(url, { method: 'GET', signal }, done);
    req.on('error', reject);
    req.end();
  });
}
