/**
 * The dependency direction of docs/ARCHITECTURE.md ("Layout"), enforced by dependency-cruiser
 * (`npm run lint:deps`, called from .ci/run). Each production module belongs to exactly one unit; a unit
 * may import only units of a LOWER rank (and itself). An import to a higher rank is "upward", one to
 * another unit of the same rank is "sideways": both are errors, type-only imports included (a type
 * import still couples the layers). Since every edge between units goes strictly down, no cycle
 * between folders can exist. test/, bench/, scripts/ and pipelines/examples/ may import anything.
 */
const LAYERS = [
  // rank 0-1: no project imports / the native face and the roles/addresses contract (no project
  // imports either; below the query contract, whose HDQuery targets are its SCC addresses)
  { rank: 0, units: { lib: '^lib/' } },
  { rank: 1, units: { 'engine-rs': '^engine-rs/[^/]+\\.ts$', 'control/api': '^control/api\\.ts$' } },
  // rank 2: the query contract (plain data and checks); the user-space transport under HDWP (a NIC's TCP streams)
  { rank: 2, units: { query: '^query/[^/]+$', transport: '^transport/' } },
  // rank 3-4: the stream kernel (element types, Flow, counters, pull) and the pipeline runtime
  { rank: 3, units: { stream: '^stream/' } },
  { rank: 4, units: { pipelines: '^pipelines/(?!examples/)' } },
  // rank 5: libraries below the roles: transport, identity/TLS, local evaluation, gRPC dispatch,
  // the control plane's HTTP helpers and store
  {
    rank: 5,
    units: {
      hdwp: '^hdwp/',
      net: '^net/',
      local: '^local/',
      'query/dispatch': '^query/dispatch/',
      'control/http': '^control/http/',
      'control/store': '^control/store/',
    },
  },
  { rank: 6, units: { operators: '^operators/' } },
  { rank: 7, units: { sources: '^sources/', sinks: '^sinks/' } },
  // rank 8: the roles' engines and the public SDK
  {
    rank: 8,
    units: {
      'nodes/scc': '^nodes/scc/',
      'nodes/storageNode': '^nodes/storageNode/',
      'control/dms': '^control/dms/',
      'control/proxy': '^control/proxy/',
      sdk: '^sdk/',
    },
  },
  { rank: 9, units: { sql: '^sql/' } },
  // rank 10: the stage catalogue, the composition root (every role is a pipeline of these stages)
  { rank: 10, units: { roles: '^roles/' } },
  { rank: 11, units: { up: '^up/' } },
  { rank: 12, units: { bin: '^bin/', index: '^index\\.ts$' } },
];

const units = LAYERS.flatMap((l) => Object.entries(l.units).map(([name, path]) => ({ name, path, rank: l.rank })));
const FREE = '^(test|bench|scripts|pipelines/examples|node_modules|dist)/';

const layerRules = units.flatMap((u) => {
  const above = units.filter((v) => v.rank > u.rank).map((v) => v.path);
  const beside = units.filter((v) => v.rank === u.rank && v.name !== u.name).map((v) => v.path);
  return [
    ...(above.length
      ? [{ name: `upward:${u.name}`, comment: `${u.name} (rank ${u.rank}) imports a higher layer`, severity: 'error', from: { path: u.path }, to: { path: above } }]
      : []),
    ...(beside.length
      ? [{ name: `sideways:${u.name}`, comment: `${u.name} (rank ${u.rank}) imports another unit of its own rank`, severity: 'error', from: { path: u.path }, to: { path: beside } }]
      : []),
  ];
});

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-layer',
      comment: 'a production module outside every layer: add its folder to LAYERS in .dependency-cruiser.cjs',
      severity: 'error',
      from: { pathNot: [...units.map((u) => u.path), FREE] },
      to: { pathNot: '^node_modules/', dependencyTypesNot: ['core'] },
    },
    {
      name: 'no-test-code',
      comment: 'production code does not import test/ or bench/',
      severity: 'error',
      from: { pathNot: FREE },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'an import that resolves to nothing',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-circular',
      comment: 'a file-level cycle (inside one folder; cycles between folders are impossible under the layer rules)',
      severity: 'warn',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // web/: the WebUX's browser modules, imported by URL (/vendor/…), not by Node.
    exclude: { path: '^(node_modules|dist|web|engine-rs/(target|core|node|fuzz))/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
