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
 */
import type { FieldInfo, Schema } from '../../engine-rs/schema';
import type { StorageNodeAddress } from './dmsLink';
import type { BatchFilter, BatchFilterSource } from './verdict';

/** Ids per request (the Storage Node takes at most 64: they travel in the URL). */
export const FILTER_IDS_PER_CALL = 64;
/** Default deadline of one verdict's filter reads, over all nodes. */
export const DEFAULT_FILTER_TIMEOUT_MS = 1000;
/** Requests in flight per node. */
const PER_NODE_CONCURRENCY = 4;

/** Options of {@link StorageNodeFilters}. */
export interface StorageNodeFiltersOptions {
  /** The Storage Nodes to ask (read on every call: the topology changes). */
  readonly nodes: () => readonly StorageNodeAddress[];
  /** The schema of a dataset, to name the fields (none: no filter is known). */
  readonly schema: (dataset: string) => Schema | undefined;
  /** Deadline of one `filters` call (default {@link DEFAULT_FILTER_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  /** Where a failing node is reported (at most once per node until it answers again). */
  readonly log?: (message: string) => void;
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

/** Names ranges with the schema's fields of the same layout and kind; undefined when none match. */
function toBatchFilter(schema: Schema, ranges: readonly WireRange[]): BatchFilter | undefined {
  const big = schema.byteOrder === 'big';
  const out: Record<string, { min: string; max: string }> = {};
  for (const f of schema.fields) {
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

  /** @param opts the nodes, the schemas, the deadline */
  constructor(private readonly opts: StorageNodeFiltersOptions) {}

  /** Filters of the batches some node answered for, named by the dataset's schema. */
  async filters(dataset: string, batchIds: readonly string[]): Promise<ReadonlyMap<string, BatchFilter>> {
    const schema = this.opts.schema(dataset);
    const nodes = this.opts.nodes();
    const out = new Map<string, BatchFilter>();
    if (!schema || nodes.length === 0 || batchIds.length === 0) return out;
    const ids = [...new Set(batchIds.map((b) => b.toLowerCase()))];
    const signal = AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_FILTER_TIMEOUT_MS);
    const answers = await Promise.all(nodes.map((n) => this.askNode(n, dataset, ids, signal)));
    const joined = new Map<string, WireRange[]>();
    for (const a of answers) {
      for (const [id, ranges] of a) joined.set(id, join(joined.get(id) ?? [], ranges));
    }
    // The caller's spelling of each id is kept (ids are compared in lower case).
    for (const b of batchIds) {
      const ranges = joined.get(b.toLowerCase());
      const bf = ranges && toBatchFilter(schema, ranges);
      if (bf) out.set(b, bf);
    }
    return out;
  }

  /** One node's ranges by batch id; empty when the node fails (its batches stay unknown). */
  private async askNode(node: StorageNodeAddress, dataset: string, ids: readonly string[], signal: AbortSignal): Promise<Map<string, WireRange[]>> {
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += FILTER_IDS_PER_CALL) chunks.push(ids.slice(i, i + FILTER_IDS_PER_CALL));
    const got = new Map<string, WireRange[]>();
    let next = 0;
    try {
      const worker = async (): Promise<void> => {
        while (next < chunks.length) {
          const chunk = chunks[next++] as string[];
          for (const [id, r] of await this.call(node, dataset, chunk, signal)) got.set(id, r);
        }
      };
      await Promise.all(Array.from({ length: Math.min(PER_NODE_CONCURRENCY, chunks.length) }, worker));
      this.failing.delete(node.name);
      return got;
    } catch (err) {
      if (!this.failing.has(node.name)) {
        this.failing.add(node.name);
        this.opts.log?.(`batch filters of Storage Node '${node.name}' (${node.host}:${node.port}) could not be read: ${(err as Error).message}; its batches are not excluded`);
      }
      return new Map();
    }
  }

  /** One `GET /v1/batch-filters`; throws on any failure or malformed answer. */
  private async call(node: StorageNodeAddress, dataset: string, ids: readonly string[], signal: AbortSignal): Promise<Map<string, WireRange[]>> {
    const host = node.host.includes(':') ? `[${node.host}]` : node.host;
    const url = `http://${host}:${node.port}/v1/batch-filters?dataset=${encodeURIComponent(dataset)}&batch_ids=${ids.join(',')}`;
    const res = await fetch(url, { signal });
    const text = await res.text();
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
      out.set(id.toLowerCase(), ranges);
    }
    return out;
  }
}
