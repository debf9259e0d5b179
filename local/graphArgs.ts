/**
 * The args JSON of `runGraph` / executeGraph (the reference's native_args): which algorithm, and its
 * settings. Validated at the edge; every error names the key. docs/sdk-local.md has the table.
 */
import { argsError } from './localSqlError';

/** The algorithms `runGraph` runs. */
export type GraphAlgorithm = 'degree' | 'connected_components' | 'pagerank' | 'shortest_path';

/** Validated graph args. */
export interface GraphArgs {
  readonly algorithm: GraphAlgorithm;
  /** pagerank, shortest_path: follow edges source → destination only (default), or both ways. */
  readonly directed: boolean;
  /** pagerank: damping factor in (0, 1); default 0.85. */
  readonly damping: number;
  /** pagerank: most iterations; default 100. */
  readonly maxIterations: number;
  /** pagerank: stop once the L1 change of the ranks is below this; default 1e-6. */
  readonly tolerance: number;
  /** shortest_path: the start node's value (as in the source/destination columns). */
  readonly from?: string | number;
  /** shortest_path: the end node; without it, distances to every reachable node. */
  readonly to?: string | number;
  /** shortest_path: a numeric column of edge weights (≥ 0): Dijkstra instead of BFS. */
  readonly weight?: string;
}

/** The args JSON as written by callers (snake_case keys). */
export interface GraphArgsJson {
  algorithm?: GraphAlgorithm;
  directed?: boolean;
  damping?: number;
  max_iterations?: number;
  tolerance?: number;
  from?: string | number;
  to?: string | number;
  weight?: string;
}

const ALGORITHMS: readonly GraphAlgorithm[] = ['degree', 'connected_components', 'pagerank', 'shortest_path'];

/** Which keys each algorithm takes (beyond `algorithm`). */
const KEYS: Record<GraphAlgorithm, readonly string[]> = {
  degree: [],
  connected_components: [],
  pagerank: ['directed', 'damping', 'max_iterations', 'tolerance'],
  shortest_path: ['directed', 'from', 'to', 'weight'],
};

function nodeValue(key: string, v: unknown): string | number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return v;
  throw argsError(key, `must be a node value (a string or a number), got ${JSON.stringify(v)}`);
}

/**
 * Parses and checks graph args (a JSON string or an object; empty means `{"algorithm":"degree"}`).
 * @throws LocalSqlError `ERR_LOCAL_ARGS` naming the key: malformed JSON, an unknown key or one the
 * algorithm does not take, a value of the wrong type or out of range, shortest_path without `from`.
 */
export function parseGraphArgs(args: string | GraphArgsJson | undefined): GraphArgs {
  let o: unknown = args ?? {};
  if (typeof o === 'string') {
    try {
      o = o.trim() === '' ? {} : JSON.parse(o);
    } catch (err) {
      throw argsError('args', `not valid JSON: ${(err as Error).message}`);
    }
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw argsError('args', 'must be a JSON object');
  const j = o as Record<string, unknown>;
  const algorithm = (j['algorithm'] ?? 'degree') as GraphAlgorithm;
  if (!ALGORITHMS.includes(algorithm)) throw argsError('algorithm', `must be one of ${ALGORITHMS.join(', ')}, got ${JSON.stringify(j['algorithm'])}`);
  for (const k of Object.keys(j)) {
    if (k === 'algorithm') continue;
    const all = Object.values(KEYS).flat();
    if (!all.includes(k)) throw argsError(k, `unknown key (graph args take algorithm, ${[...new Set(all)].join(', ')})`);
    if (!KEYS[algorithm].includes(k)) throw argsError(k, `${algorithm} does not take this key`);
  }
  const directed = j['directed'] ?? true;
  if (typeof directed !== 'boolean') throw argsError('directed', `must be true or false, got ${JSON.stringify(directed)}`);
  const damping = j['damping'] ?? 0.85;
  if (typeof damping !== 'number' || !(damping > 0 && damping < 1)) throw argsError('damping', `must be a number between 0 and 1 (exclusive), got ${JSON.stringify(damping)}`);
  const maxIterations = j['max_iterations'] ?? 100;
  if (typeof maxIterations !== 'number' || !Number.isInteger(maxIterations) || maxIterations < 1 || maxIterations > 1_000_000) {
    throw argsError('max_iterations', `must be an integer from 1 to 1000000, got ${JSON.stringify(maxIterations)}`);
  }
  const tolerance = j['tolerance'] ?? 1e-6;
  if (typeof tolerance !== 'number' || !(tolerance > 0 && Number.isFinite(tolerance))) throw argsError('tolerance', `must be a number > 0, got ${JSON.stringify(tolerance)}`);
  const weight = j['weight'];
  if (weight !== undefined && (typeof weight !== 'string' || weight === '')) throw argsError('weight', `must be a column name, got ${JSON.stringify(weight)}`);
  const from = nodeValue('from', j['from']);
  const to = nodeValue('to', j['to']);
  if (algorithm === 'shortest_path' && from === undefined) throw argsError('from', 'shortest_path needs the start node');
  return { algorithm, directed, damping, maxIterations, tolerance, from, to, weight: weight as string | undefined };
}
