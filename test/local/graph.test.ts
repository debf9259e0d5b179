import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { runGraph } from '../../local/graph';
import { expectArgsError, rng } from './fixtures';

interface Graph {
  readonly n: number;
  readonly edges: [number, number, number][];
}

function randomGraph(seed: number, n: number, m: number): Graph {
  const r = rng(seed);
  const edges: [number, number, number][] = [];
  for (let i = 0; i < m; i++) edges.push([Math.floor(r() * n), Math.floor(r() * n), Math.round(r() * 100) / 10]);
  return { n, edges };
}

/** Edges as a table; node values are `name(i)` in a column of `type`, in two batches. */
function edgeTable(g: Graph, type: arrow.DataType, name: (i: number) => unknown): arrow.Table {
  const whole = new arrow.Table({
    src: arrow.vectorFromArray(g.edges.map((e) => name(e[0])), type),
    dst: arrow.vectorFromArray(g.edges.map((e) => name(e[1])), type),
    w: arrow.vectorFromArray(g.edges.map((e) => e[2]), new arrow.Float64()),
  }).batches[0]!;
  const half = g.edges.length >> 1;
  return new arrow.Table([whole.slice(0, half), whole.slice(half, g.edges.length)]);
}

/** Result rows keyed by node value. */
function byNode(t: arrow.Table, column: string): Map<unknown, number> {
  const nodes = [...t.getChild('node')!];
  const values = [...t.getChild(column)!] as number[];
  return new Map(nodes.map((x, i) => [x, values[i]!]));
}

/** Nodes in order of first appearance (source before destination of each edge). */
function nodeOrder(g: Graph): number[] {
  const seen: number[] = [];
  for (const [a, b] of g.edges) for (const v of [a, b]) if (!seen.includes(v)) seen.push(v);
  return seen;
}

const SEEDS = [11, 12, 13];
const graph = suite('runGraph');

for (const seed of SEEDS) {
  const g = randomGraph(seed, 40 + seed, 70 + seed * 3);
  const name = (i: number): string => `10.0.0.${i}`;
  const t = edgeTable(g, new arrow.Utf8(), name);

  graph(`degree, seed ${seed}: counts of the edge list`, () => {
    const out = runGraph(t, 'src', 'dst', { algorithm: 'degree' });
    assert.equal([...out.getChild('node')!], nodeOrder(g).map(name));
    const ins = byNode(out, 'in_degree');
    const outs = byNode(out, 'out_degree');
    for (const v of nodeOrder(g)) {
      assert.is(ins.get(name(v)), g.edges.filter((e) => e[1] === v).length);
      assert.is(outs.get(name(v)), g.edges.filter((e) => e[0] === v).length);
    }
    assert.is(out.schema.metadata.get('hd.graph.edges'), String(g.edges.length));
  });

  graph(`connected_components, seed ${seed}: same partition as union-find`, () => {
    const parent = Array.from({ length: g.n }, (_x, i) => i);
    const find = (x: number): number => (parent[x] === x ? x : (parent[x] = find(parent[x]!)));
    for (const [a, b] of g.edges) parent[find(a)] = find(b);
    const out = runGraph(t, 'src', 'dst', '{"algorithm":"connected_components"}');
    const comp = byNode(out, 'component');
    const size = byNode(out, 'component_size');
    const nodes = nodeOrder(g);
    for (const a of nodes) {
      assert.is(size.get(name(a)), nodes.filter((b) => find(b) === find(a)).length);
      for (const b of nodes) assert.is(comp.get(name(a)) === comp.get(name(b)), find(a) === find(b), `${a} ~ ${b}`);
    }
    // Components are numbered by their first node.
    const firsts = [...new Set(nodes.map((v) => comp.get(name(v))))];
    assert.equal(firsts, firsts.map((_x, i) => i));
  });

  graph(`pagerank, seed ${seed}: plain power iteration agrees within the tolerance`, () => {
    const nodes = nodeOrder(g);
    const n = nodes.length;
    const idx = new Map(nodes.map((v, i) => [v, i]));
    const outDeg = new Array<number>(n).fill(0);
    for (const [a] of g.edges) outDeg[idx.get(a)!]++;
    let r = new Array<number>(n).fill(1 / n);
    for (let it = 0; it < 1000; it++) {
      const dangling = r.reduce((s, x, i) => s + (outDeg[i] === 0 ? x : 0), 0);
      const next = new Array<number>(n).fill((1 - 0.85) / n + (0.85 * dangling) / n);
      for (const [a, b] of g.edges) next[idx.get(b)!] += (0.85 * r[idx.get(a)!]!) / outDeg[idx.get(a)!]!;
      r = next;
    }
    const out = runGraph(t, 'src', 'dst', { algorithm: 'pagerank', tolerance: 1e-12, max_iterations: 1000 });
    const pr = byNode(out, 'pagerank');
    nodes.forEach((v, i) => assert.ok(Math.abs(pr.get(name(v))! - r[i]!) < 1e-9, `node ${v}: ${pr.get(name(v))} vs ${r[i]}`));
    assert.ok(Math.abs([...pr.values()].reduce((s, x) => s + x, 0) - 1) < 1e-9);
    assert.is(out.schema.metadata.get('hd.graph.converged'), 'true');
    const capped = runGraph(t, 'src', 'dst', { algorithm: 'pagerank', max_iterations: 2 });
    assert.is(capped.schema.metadata.get('hd.graph.iterations'), '2');
  });

  graph(`shortest_path, seed ${seed}: BFS hops and weighted distances match plain BFS and Bellman-Ford`, () => {
    const from = g.edges[0]![0];
    for (const directed of [true, false]) {
      const arcs = directed ? g.edges : [...g.edges, ...g.edges.map(([a, b, w]) => [b, a, w] as [number, number, number])];
      const hops = new Map<number, number>([[from, 0]]);
      const queue = [from];
      while (queue.length) {
        const v = queue.shift()!;
        for (const [a, b] of arcs) if (a === v && !hops.has(b)) (hops.set(b, hops.get(v)! + 1), queue.push(b));
      }
      const out = runGraph(t, 'src', 'dst', { algorithm: 'shortest_path', from: name(from), directed });
      assert.equal(byNode(out, 'distance'), new Map([...hops].map(([v, d]) => [name(v), d])));
      const dist = new Map<number, number>([[from, 0]]);
      for (let round = 0; round < g.n; round++) {
        for (const [a, b, w] of arcs) if (dist.has(a) && dist.get(a)! + w < (dist.get(b) ?? Infinity)) dist.set(b, dist.get(a)! + w);
      }
      const weighted = byNode(runGraph(t, 'src', 'dst', { algorithm: 'shortest_path', from: name(from), weight: 'w', directed }), 'distance');
      assert.is(weighted.size, dist.size);
      for (const [v, d] of dist) assert.ok(Math.abs(weighted.get(name(v))! - d) < 1e-9, `node ${v}`);
      // With `to`: a real path of that length, step by step.
      const far = [...dist.keys()].sort((x, y) => dist.get(y)! - dist.get(x)!)[0]!;
      const path = runGraph(t, 'src', 'dst', { algorithm: 'shortest_path', from: name(from), to: name(far), weight: 'w', directed });
      const steps = [...path.getChild('node')!] as string[];
      assert.is(steps[0], name(from));
      assert.is(steps[steps.length - 1], name(far));
      let total = 0;
      for (let i = 1; i < steps.length; i++) {
        const ws = arcs.filter(([a, b]) => name(a) === steps[i - 1] && name(b) === steps[i]).map((e) => e[2]);
        assert.ok(ws.length > 0, `edge ${steps[i - 1]} -> ${steps[i]}`);
        total += Math.min(...ws);
      }
      assert.ok(Math.abs(total - dist.get(far)!) < 1e-9);
      assert.equal([...path.getChild('step')!], steps.map((_s, i) => i));
    }
  });
}

graph('integer and enum node columns keep their type; mixed types fall back to text; nulls are skipped', () => {
  const ints = new arrow.Table({
    src: arrow.vectorFromArray([1n, 2n, null, 3n, 5n], new arrow.Int64()),
    dst: arrow.vectorFromArray([2n, 3n, 4n, 1n, 1n], new arrow.Int64()),
  });
  const out = runGraph(ints, 'src', 'dst', { algorithm: 'shortest_path', from: '3', to: 2 });
  assert.is(String(out.schema.fields[1]!.type), 'Int64');
  assert.equal([...out.getChild('node')!], [3n, 1n, 2n]);
  assert.is(runGraph(ints, 'src', 'dst').schema.metadata.get('hd.graph.skipped_edges'), '1');
  const labels = new arrow.Table({
    src: arrow.vectorFromArray(['tcp', 'udp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    dst: arrow.vectorFromArray(['udp', 'icmp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
  });
  const deg = runGraph(labels, 'src', 'dst', { algorithm: 'degree' });
  assert.ok(arrow.DataType.isDictionary(deg.schema.fields[0]!.type));
  assert.equal([...deg.getChild('node')!], ['tcp', 'udp', 'icmp']);
  const mixed = new arrow.Table({
    src: arrow.vectorFromArray([1, 2], new arrow.Int32()),
    dst: arrow.vectorFromArray(['2', 'x'], new arrow.Utf8()),
  });
  assert.equal([...runGraph(mixed, 'src', 'dst').getChild('node')!], ['1', '2', 'x']);
  // 5 -> 1 exists, so 5 is a node, but nothing leads from 1 to 5: an empty path.
  assert.is(runGraph(ints, 'src', 'dst', { algorithm: 'shortest_path', from: 1, to: 5 }).numRows, 0);
  assert.is(runGraph(ints, 'src', 'dst', { algorithm: 'shortest_path', from: 1, to: 5, directed: false }).numRows, 2);
});

graph('malformed args are refused, naming the key', () => {
  const t = new arrow.Table({
    src: arrow.vectorFromArray([1, 2], new arrow.Int32()),
    dst: arrow.vectorFromArray([2, 3], new arrow.Int32()),
    w: arrow.vectorFromArray([1, -1], new arrow.Float64()),
  });
  const bad = (args: unknown, key: string, msg: RegExp, src = 'src'): void => expectArgsError(() => runGraph(t, src, 'dst', args as string), key, msg);
  bad('{nope', 'args', /not valid JSON/);
  bad('[1]', 'args', /JSON object/);
  bad({ algorithm: 'louvain' }, 'algorithm', /one of degree, connected_components, pagerank, shortest_path/);
  bad({ algorithm: 'degree', colour: 1 }, 'colour', /unknown key/);
  bad({ algorithm: 'degree', damping: 0.5 }, 'damping', /degree does not take/);
  bad({ algorithm: 'pagerank', damping: 1.5 }, 'damping', /between 0 and 1/);
  bad({ algorithm: 'pagerank', max_iterations: 0 }, 'max_iterations', /integer from 1/);
  bad({ algorithm: 'pagerank', tolerance: -1 }, 'tolerance', /> 0/);
  bad({ algorithm: 'pagerank', directed: 'yes' }, 'directed', /true or false/);
  bad({ algorithm: 'shortest_path' }, 'from', /needs the start node/);
  bad({ algorithm: 'shortest_path', from: { a: 1 } }, 'from', /node value/);
  bad({ algorithm: 'shortest_path', from: 99 }, 'from', /not in the graph/);
  bad({ algorithm: 'shortest_path', from: 1, to: 99 }, 'to', /not in the graph/);
  bad({ algorithm: 'shortest_path', from: 1, weight: 'w' }, 'weight', /finite numbers >= 0/);
  bad({ algorithm: 'shortest_path', from: 1, weight: 'nope' }, 'weight', /no column "nope"/);
  bad({}, 'srcCol', /no column "x"/, 'x');
});

graph.run();
