/**
 * runGraph: the reference's execute_graph (a stub there), evaluated in the client. Builds the graph of
 * a result's edges (graphCsr.ts) and runs the algorithm named in the args JSON (graphArgs.ts), returning
 * an Arrow table with one row per node (or per path step). docs/sdk-local.md has the output columns.
 */
import * as arrow from 'apache-arrow';
import { takeFrom } from './arrowTake';
import { parseGraphArgs, type GraphArgsJson } from './graphArgs';
import { bfs, connectedComponents, degrees, dijkstra, pageRank, pathTo } from './graphAlgorithms';
import { buildCsr, readEdges, resolveNode, type EdgeList } from './graphCsr';

/**
 * The `node` column for nodes `order` (dense ids), each copied from the row where it first appeared,
 * so it keeps the source column's type (inet text, enum labels, integers ...). When the source and
 * destination columns have different types the nodes are presented as text.
 */
function nodeColumn(table: arrow.Table, srcCol: string, dstCol: string, edges: EdgeList, order: Int32Array): { field: arrow.Field; data: arrow.Data } {
  const sf = table.schema.fields.find((f) => f.name === srcCol)!;
  const df = table.schema.fields.find((f) => f.name === dstCol)!;
  const si = table.schema.fields.indexOf(sf);
  const di = table.schema.fields.indexOf(df);
  if (String(sf.type) !== String(df.type)) {
    const keys: string[] = new Array<string>(edges.nodes);
    for (const [k, id] of edges.ids) keys[id] = String(k);
    const data = arrow.vectorFromArray(Array.from(order, (id) => keys[id]!), new arrow.Utf8()).data[0]!;
    return { field: new arrow.Field('node', new arrow.Utf8(), false), data };
  }
  const nb = table.batches.length;
  const parts = [...table.batches.map((b) => b.data.children[si]!), ...table.batches.map((b) => b.data.children[di]!)];
  const part = Int32Array.from(order, (id) => edges.origin.column[id]! * nb + edges.origin.batch[id]!);
  const row = Int32Array.from(order, (id) => edges.origin.row[id]!);
  const data = parts.length > 0 ? takeFrom(parts, part, row) : arrow.vectorFromArray([], sf.type).data[0]!;
  return { field: new arrow.Field('node', sf.type, false, sf.metadata), data };
}

function tableOf(columns: readonly { field: arrow.Field; data: arrow.Data }[], meta: Record<string, string>): arrow.Table {
  const schema = new arrow.Schema(columns.map((c) => c.field), new Map(Object.entries(meta)));
  const length = columns[0]!.data.length;
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length, nullCount: 0, children: columns.map((c) => c.data) });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
}

function int32(name: string, values: Int32Array): { field: arrow.Field; data: arrow.Data } {
  return { field: new arrow.Field(name, new arrow.Int32(), false), data: arrow.makeData({ type: new arrow.Int32(), length: values.length, data: values }) };
}

function float64(name: string, values: Float64Array): { field: arrow.Field; data: arrow.Data } {
  return { field: new arrow.Field(name, new arrow.Float64(), false), data: arrow.makeData({ type: new arrow.Float64(), length: values.length, data: values }) };
}

function gather<T extends Int32Array | Float64Array>(values: T, order: Int32Array): T {
  const out = new (values.constructor as new (n: number) => T)(order.length);
  for (let i = 0; i < order.length; i++) out[i] = values[order[i]!]!;
  return out;
}

/**
 * Runs a graph algorithm over the edges `srcCol` → `dstCol` of `table` (rows with a null end are
 * skipped). `args` is the JSON (string or object) described in docs/sdk-local.md:
 * - `degree`: node, in_degree, out_degree, degree (Int32), nodes in order of first appearance.
 * - `connected_components` (weak, direction ignored): node, component (0, 1, ... by first node), component_size.
 * - `pagerank`: node, pagerank (Float64, sums to 1); metadata `hd.graph.iterations`, `hd.graph.converged`.
 * - `shortest_path` from `from`: with `to`, the path: step, node, distance (empty when unreachable);
 *   without, every reachable node: node, distance (hops, or summed `weight`), ordered by distance.
 * Schema metadata `hd.graph.algorithm`, `hd.graph.nodes`, `hd.graph.edges`, `hd.graph.skipped_edges`.
 * @throws LocalSqlError `ERR_LOCAL_ARGS` naming the key for malformed args, unknown columns or nodes.
 * @example
 * runGraph(flows, 'src', 'dst', { algorithm: 'shortest_path', from: '10.0.0.1', to: '10.0.0.9' });
 */
export function runGraph(table: arrow.Table, srcCol: string, dstCol: string, args?: string | GraphArgsJson): arrow.Table {
  const a = parseGraphArgs(args);
  const edges = readEdges(table, srcCol, dstCol, a.algorithm === 'shortest_path' ? a.weight : undefined);
  const n = edges.nodes;
  const meta: Record<string, string> = {
    'hd.graph.algorithm': a.algorithm,
    'hd.graph.nodes': String(n),
    'hd.graph.edges': String(edges.src.length),
    'hd.graph.skipped_edges': String(edges.skipped),
  };
  const all = Int32Array.from({ length: n }, (_x, i) => i);
  const node = (order: Int32Array): { field: arrow.Field; data: arrow.Data } => nodeColumn(table, srcCol, dstCol, edges, order);
  switch (a.algorithm) {
    case 'degree': {
      const { inDegree, outDegree } = degrees(edges);
      const total = Int32Array.from(inDegree, (x, i) => x + outDegree[i]!);
      return tableOf([node(all), int32('in_degree', inDegree), int32('out_degree', outDegree), int32('degree', total)], meta);
    }
    case 'connected_components': {
      const { component, size } = connectedComponents(buildCsr(edges, 'both'), n);
      return tableOf([node(all), int32('component', component), int32('component_size', size)], meta);
    }
    case 'pagerank': {
      const reverse = buildCsr(edges, a.directed ? 'reverse' : 'both');
      const outDegree = a.directed ? degrees(edges).outDegree : Int32Array.from({ length: n }, (_x, v) => reverse.start[v + 1]! - reverse.start[v]!);
      const pr = pageRank(reverse, outDegree, n, a);
      meta['hd.graph.iterations'] = String(pr.iterations);
      meta['hd.graph.converged'] = String(pr.converged);
      return tableOf([node(all), float64('pagerank', pr.rank)], meta);
    }
    case 'shortest_path': {
      const from = resolveNode(edges, 'from', a.from);
      const to = a.to === undefined ? -1 : resolveNode(edges, 'to', a.to);
      const g = buildCsr(edges, a.directed ? 'out' : 'both');
      const paths = a.weight === undefined ? bfs(g, n, from, to) : dijkstra(g, n, from, to);
      if (to >= 0) {
        const path = Int32Array.from(pathTo(paths, from, to));
        const steps = Int32Array.from(path, (_v, i) => i);
        return tableOf([int32('step', steps), node(path), float64('distance', gather(paths.distance, path))], meta);
      }
      const reached = all.filter((v) => paths.distance[v] !== Infinity);
      reached.sort((x, y) => paths.distance[x]! - paths.distance[y]! || x - y);
      return tableOf([node(reached), float64('distance', gather(paths.distance, reached))], meta);
    }
  }
}
