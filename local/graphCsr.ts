/**
 * The graph of a result's edges: node ids mapped once to dense integers, then compressed sparse rows
 * (CSR) over typed arrays. Every algorithm in graphAlgorithms.ts works on these arrays only.
 */
import * as arrow from 'apache-arrow';
import { argsError } from './localSqlError';

/** Where a node was first seen: which column (0 source, 1 destination), batch and row. */
export interface NodeOrigin {
  readonly column: Int32Array;
  readonly batch: Int32Array;
  readonly row: Int32Array;
}

/** Edges as dense node ids, nodes numbered in order of first appearance (source before destination). */
export interface EdgeList {
  /** Number of nodes. */
  readonly nodes: number;
  readonly src: Int32Array;
  readonly dst: Int32Array;
  /** Per edge weight, when a weight column was named. */
  readonly weight?: Float64Array;
  /** Node key (number, bigint or string) → dense id. */
  readonly ids: ReadonlyMap<NodeKey, number>;
  /** Where each node's value can be copied from, to present it in its own column type. */
  readonly origin: NodeOrigin;
  /** Edges skipped because the source or destination was null. */
  readonly skipped: number;
}

/** A node's identity: numbers (safe integers and floats), bigints beyond 2^53, text otherwise. */
export type NodeKey = number | bigint | string;

/** Adjacency in CSR form: the neighbours of node v are `adj[start[v] .. start[v + 1])`. */
export interface Csr {
  readonly start: Int32Array;
  readonly adj: Int32Array;
  /** Weights parallel to `adj`, when the edge list has them. */
  readonly weight?: Float64Array;
}

/** A key for one value: safe-integer bigints become numbers, so Int32 and Int64 columns meet. */
export function normalizeKey(v: unknown): NodeKey {
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  if (typeof v === 'number' || typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return String(v);
}

/** Keys of every row of one column's data: typed-array values read directly, other types per value. */
function keysOf(data: arrow.Data): ArrayLike<unknown> {
  const t = data.type as arrow.DataType;
  if (t.typeId === arrow.Type.Int || t.typeId === arrow.Type.Float) {
    const v = data.values as ArrayLike<unknown>;
    return (v as Int32Array).length === data.length ? v : (v as Int32Array).subarray(0, data.length);
  }
  if (t.typeId === arrow.Type.Dictionary) {
    const labels = [...data.dictionary!].map((x) => normalizeKey(x));
    const idx = data.values as Int32Array;
    return Array.from({ length: data.length }, (_x, i) => labels[idx[i]!]);
  }
  if (t.typeId === arrow.Type.Utf8 && data.valueOffsets) {
    // Node's UTF-8 slice is several times faster than a TextDecoder per value for short ids.
    const o = data.valueOffsets as Int32Array;
    const v = data.values as Uint8Array;
    const buf = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    return Array.from({ length: data.length }, (_x, i) => buf.toString('utf8', o[i]!, o[i + 1]!));
  }
  const vec = arrow.makeVector(data);
  return Array.from({ length: data.length }, (_x, i) => vec.get(i));
}

function columnIndex(table: arrow.Table, key: string, name: string): number {
  const i = table.schema.fields.findIndex((f) => f.name === name);
  if (i < 0) throw argsError(key, `no column "${name}" in the result (columns: ${table.schema.fields.map((f) => f.name).join(', ')})`);
  return i;
}

/**
 * Reads the edges of `table` from `srcCol` → `dstCol` (and weights from `weightCol`), mapping node
 * values to dense ids once. A row whose source or destination is null is skipped. When the two
 * columns have different types, nodes are identified by their text.
 * @throws LocalSqlError `ERR_LOCAL_ARGS` for an unknown column, or a weight that is not a finite number ≥ 0.
 */
export function readEdges(table: arrow.Table, srcCol: string, dstCol: string, weightCol?: string): EdgeList {
  const si = columnIndex(table, 'srcCol', srcCol);
  const di = columnIndex(table, 'dstCol', dstCol);
  const wi = weightCol === undefined ? -1 : columnIndex(table, 'weight', weightCol);
  const n = table.numRows;
  const src = new Int32Array(n);
  const dst = new Int32Array(n);
  const weight = wi >= 0 ? new Float64Array(n) : undefined;
  const ids = new Map<NodeKey, number>();
  // Columns of different types meet on text: an Int32 2 and a Utf8 '2' are one node.
  const asText = String(table.schema.fields[si]!.type) !== String(table.schema.fields[di]!.type);
  const oc: number[] = [];
  const ob: number[] = [];
  const or: number[] = [];
  let e = 0;
  let skipped = 0;
  table.batches.forEach((batch, b) => {
    const sd = batch.data.children[si]!;
    const dd = batch.data.children[di]!;
    const sk = keysOf(sd);
    const dk = keysOf(dd);
    const wv = wi >= 0 ? arrow.makeVector(batch.data.children[wi]!) : undefined;
    const idOf = (key: unknown, column: number, row: number): number => {
      const k = asText ? String(normalizeKey(key)) : normalizeKey(key);
      let id = ids.get(k);
      if (id === undefined) {
        ids.set(k, (id = ids.size));
        oc.push(column);
        ob.push(b);
        or.push(row);
      }
      return id;
    };
    for (let r = 0; r < batch.numRows; r++) {
      if (!sd.getValid(r) || !dd.getValid(r)) {
        skipped++;
        continue;
      }
      src[e] = idOf(sk[r], 0, r);
      dst[e] = idOf(dk[r], 1, r);
      if (weight) {
        const w = Number(wv!.get(r));
        if (!(w >= 0 && Number.isFinite(w))) throw argsError('weight', `column "${weightCol}" row ${r} of batch ${b} is ${String(wv!.get(r))}; weights must be finite numbers >= 0`);
        weight[e] = w;
      }
      e++;
    }
  });
  return {
    nodes: ids.size,
    src: src.subarray(0, e),
    dst: dst.subarray(0, e),
    weight: weight?.subarray(0, e),
    ids,
    origin: { column: Int32Array.from(oc), batch: Int32Array.from(ob), row: Int32Array.from(or) },
    skipped,
  };
}

/**
 * CSR adjacency of the edges: `out` follows edges forwards, `reverse` backwards, `both` is the
 * undirected graph (each edge in both directions). Built by counting sort, O(nodes + edges).
 */
export function buildCsr(edges: EdgeList, direction: 'out' | 'reverse' | 'both'): Csr {
  const { nodes, src, dst, weight } = edges;
  const m = src.length * (direction === 'both' ? 2 : 1);
  const start = new Int32Array(nodes + 1);
  const from = direction === 'reverse' ? dst : src;
  const to = direction === 'reverse' ? src : dst;
  for (let i = 0; i < from.length; i++) {
    start[from[i]! + 1]!++;
    if (direction === 'both') start[to[i]! + 1]!++;
  }
  for (let v = 0; v < nodes; v++) start[v + 1]! += start[v]!;
  const fill = start.slice(0, nodes);
  const adj = new Int32Array(m);
  const w = weight ? new Float64Array(m) : undefined;
  for (let i = 0; i < from.length; i++) {
    const a = fill[from[i]!]!++;
    adj[a] = to[i]!;
    if (w) w[a] = weight![i]!;
    if (direction === 'both') {
      const b = fill[to[i]!]!++;
      adj[b] = from[i]!;
      if (w) w[b] = weight![i]!;
    }
  }
  return { start, adj, weight: w };
}

/**
 * The dense id of the node given as `value` (from args JSON): tried as given, then as a number,
 * bigint or text, so `"10.0.0.1"`, `42` and `"42"` all find their node.
 * @throws LocalSqlError `ERR_LOCAL_ARGS` naming `key` when no node has that value.
 */
export function resolveNode(edges: EdgeList, key: string, value: unknown): number {
  const candidates: unknown[] = [value];
  if (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))) {
    candidates.push(Number(value));
    if (/^-?\d+$/.test(value.trim())) candidates.push(BigInt(value.trim()));
  }
  if (typeof value === 'number') candidates.push(String(value));
  for (const c of candidates) {
    const id = edges.ids.get(normalizeKey(c));
    if (id !== undefined) return id;
  }
  throw argsError(key, `node ${JSON.stringify(value)} is not in the graph (${edges.nodes} nodes)`);
}
