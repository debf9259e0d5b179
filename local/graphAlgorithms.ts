/**
 * Graph algorithms over CSR typed arrays (graphCsr.ts): degree, connected components (BFS over the
 * undirected graph), PageRank (power iteration), shortest paths (BFS unweighted, Dijkstra weighted).
 * Each is O(nodes + edges) per pass; no per-node objects.
 */
import type { Csr, EdgeList } from './graphCsr';

/** In-, out- and total degree of every node (a self-loop counts once each way). */
export function degrees(edges: EdgeList): { inDegree: Int32Array; outDegree: Int32Array } {
  const inDegree = new Int32Array(edges.nodes);
  const outDegree = new Int32Array(edges.nodes);
  for (let i = 0; i < edges.src.length; i++) {
    outDegree[edges.src[i]!]!++;
    inDegree[edges.dst[i]!]!++;
  }
  return { inDegree, outDegree };
}

/**
 * Weakly connected components of the undirected graph `both`: components numbered 0, 1, ... in order
 * of their first node (nodes are numbered by first appearance), with each component's size.
 */
export function connectedComponents(both: Csr, nodes: number): { component: Int32Array; size: Int32Array } {
  const component = new Int32Array(nodes).fill(-1);
  const queue = new Int32Array(nodes);
  const sizes: number[] = [];
  for (let s = 0; s < nodes; s++) {
    if (component[s] !== -1) continue;
    const c = sizes.length;
    let head = 0;
    let tail = 0;
    queue[tail++] = s;
    component[s] = c;
    while (head < tail) {
      const v = queue[head++]!;
      for (let k = both.start[v]!; k < both.start[v + 1]!; k++) {
        const u = both.adj[k]!;
        if (component[u] === -1) {
          component[u] = c;
          queue[tail++] = u;
        }
      }
    }
    sizes.push(tail);
  }
  const size = new Int32Array(nodes);
  for (let v = 0; v < nodes; v++) size[v] = sizes[component[v]!]!;
  return { component, size };
}

/** PageRank settings (validated by graphArgs.ts). */
export interface PageRankOptions {
  readonly damping: number;
  readonly maxIterations: number;
  readonly tolerance: number;
}

/**
 * PageRank by power iteration over `reverse` (in-edges) with out-degrees `outDegree`:
 * r' = (1 − d)/N + d·(Σ r_u/out_u over in-edges + dangling mass/N). Stops when the L1 change is below
 * `tolerance` or after `maxIterations`. Ranks sum to 1.
 */
export function pageRank(reverse: Csr, outDegree: Int32Array, nodes: number, o: PageRankOptions): { rank: Float64Array; iterations: number; converged: boolean } {
  let rank = new Float64Array(nodes).fill(nodes > 0 ? 1 / nodes : 0);
  let next = new Float64Array(nodes);
  const share = new Float64Array(nodes);
  let iterations = 0;
  let converged = nodes === 0;
  while (!converged && iterations < o.maxIterations) {
    let dangling = 0;
    for (let v = 0; v < nodes; v++) {
      if (outDegree[v] === 0) dangling += rank[v]!;
      else share[v] = rank[v]! / outDegree[v]!;
    }
    const base = (1 - o.damping) / nodes + (o.damping * dangling) / nodes;
    let change = 0;
    for (let v = 0; v < nodes; v++) {
      let sum = 0;
      for (let k = reverse.start[v]!; k < reverse.start[v + 1]!; k++) sum += share[reverse.adj[k]!]!;
      const r = base + o.damping * sum;
      next[v] = r;
      change += Math.abs(r - rank[v]!);
    }
    [rank, next] = [next, rank];
    iterations++;
    converged = change < o.tolerance;
  }
  return { rank, iterations, converged };
}

/** Distances from `from` (Infinity when unreachable) and each node's predecessor on a shortest path (−1 none). */
export interface ShortestPaths {
  readonly distance: Float64Array;
  readonly previous: Int32Array;
}

/** Unweighted shortest paths: BFS, distance in hops. Stops early once `to` is reached. */
export function bfs(g: Csr, nodes: number, from: number, to = -1): ShortestPaths {
  const distance = new Float64Array(nodes).fill(Infinity);
  const previous = new Int32Array(nodes).fill(-1);
  const queue = new Int32Array(nodes);
  let head = 0;
  let tail = 0;
  distance[from] = 0;
  queue[tail++] = from;
  while (head < tail) {
    const v = queue[head++]!;
    if (v === to) break;
    for (let k = g.start[v]!; k < g.start[v + 1]!; k++) {
      const u = g.adj[k]!;
      if (distance[u] === Infinity) {
        distance[u] = distance[v]! + 1;
        previous[u] = v;
        queue[tail++] = u;
      }
    }
  }
  return { distance, previous };
}

/** Weighted shortest paths (weights ≥ 0): Dijkstra with a binary heap of (distance, node) in typed arrays. */
export function dijkstra(g: Csr, nodes: number, from: number, to = -1): ShortestPaths {
  const weight = g.weight!;
  const distance = new Float64Array(nodes).fill(Infinity);
  const previous = new Int32Array(nodes).fill(-1);
  const done = new Uint8Array(nodes);
  // Lazy deletion: a node may sit in the heap several times; stale entries are skipped when popped.
  let cap = Math.max(16, nodes);
  let hd = new Float64Array(cap);
  let hn = new Int32Array(cap);
  let size = 0;
  const push = (d: number, v: number): void => {
    if (size === cap) {
      cap *= 2;
      const nd = new Float64Array(cap);
      nd.set(hd);
      const nn = new Int32Array(cap);
      nn.set(hn);
      hd = nd;
      hn = nn;
    }
    let i = size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (hd[p]! <= d) break;
      hd[i] = hd[p]!;
      hn[i] = hn[p]!;
      i = p;
    }
    hd[i] = d;
    hn[i] = v;
  };
  const pop = (): number => {
    const top = hn[0]!;
    const d = hd[--size]!;
    const v = hn[size]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= size) break;
      if (c + 1 < size && hd[c + 1]! < hd[c]!) c++;
      if (hd[c]! >= d) break;
      hd[i] = hd[c]!;
      hn[i] = hn[c]!;
      i = c;
    }
    hd[i] = d;
    hn[i] = v;
    return top;
  };
  distance[from] = 0;
  push(0, from);
  while (size > 0) {
    const v = pop();
    if (done[v]) continue;
    done[v] = 1;
    if (v === to) break;
    for (let k = g.start[v]!; k < g.start[v + 1]!; k++) {
      const u = g.adj[k]!;
      const d = distance[v]! + weight[k]!;
      if (d < distance[u]!) {
        distance[u] = d;
        previous[u] = v;
        push(d, u);
      }
    }
  }
  return { distance, previous };
}

/** The nodes of the path `from` → `to` following `previous`, or empty when `to` is unreachable. */
export function pathTo(p: ShortestPaths, from: number, to: number): number[] {
  if (p.distance[to] === Infinity) return [];
  const path = [to];
  for (let v = to; v !== from; ) {
    v = p.previous[v]!;
    path.push(v);
  }
  return path.reverse();
}
