// The import rules of ARCHITECTURE.md, checked by `npm run depcheck` (part of `npm test`).
// A module may import only from its own layer or a lower one, and no import (type-only ones included)
// may close a circle. Each violation is printed as `rule: from → to`, and the rule's name says which
// layers the edge joins, e.g. `balancer(3)-must-not-import-health(4): src/balancer/X.ts → src/health/Y.ts`.

/** Bottom → top. `paths` are regular expressions on the path from the repository root. */
const layers = [
  { name: 'ground', paths: ['^src/errors\\.ts$', '^src/clock\\.ts$', '^src/platform\\.ts$', '^src/net/'] }, // errors, the clock, the Node/undici version check, address/TLS/header helpers
  { name: 'dns', paths: ['^src/dns/'] }, // the DNS wire format, client and cache
  { name: 'resolver', paths: ['^src/resolver/'] }, // targets → endpoint lists (DNS, EndpointSlices, static)
  { name: 'balancer', paths: ['^src/balancer/'] }, // the endpoint set and the pickers
  { name: 'health', paths: ['^src/health/'] }, // outcomes → health verdicts, probes, ejection
  { name: 'observability', paths: ['^src/observability/'] }, // events, logger, stats
  // `src/options.ts` is the module that `src/options/` replaces; it is this layer while it exists.
  { name: 'options', paths: ['^src/options/', '^src/options\\.ts$'] }, // option types, defaults, validation
  { name: 'dispatcher', paths: ['^src/dispatcher/'] }, // the undici Dispatcher: requests, attempts, pools
  { name: 'kube', paths: ['^src/kube/'] }, // glue for @kubernetes/client-node and kubernetes-fluent-client
  { name: 'testing', paths: ['^src/testing/'] }, // `kube-balancer/testing`: the simulator, exported for users' tests
  { name: 'proxy', paths: ['^src/proxy/'] }, // the local HTTP/1.1 proxy in front of a balancer (`kube-balancer proxy`)
  { name: 'top', paths: ['^src/index\\.ts$', '^src/cli/', '^src/prometheus/'] }, // the public entry points and the CLI
];

const allLayerPaths = layers.flatMap((layer) => layer.paths);

/** One rule per (layer, higher layer) pair, so that the rule's name names both ends of the edge. */
const upImports = layers.flatMap((from, low) =>
  layers.slice(low + 1).map((to, offset) => {
    const high = low + 1 + offset;
    return {
      name: `${from.name}(${low})-must-not-import-${to.name}(${high})`,
      comment:
        `${from.name} (layer ${low}) must not import ${to.name} (layer ${high}): imports only go down the layers ` +
        '(ARCHITECTURE.md). Move the shared piece down to the lowest layer that needs it.',
      severity: 'error',
      from: { path: from.paths },
      to: { path: to.paths },
    };
  }),
);

// The demo (`kube-balancer demo`) runs the apiserver simulator, the test certificates and the test DNS
// server from fixtures/: these three entry modules and nothing else. Nothing else in src/ reaches outside it.
const demoFixtures = ['^fixtures/apiserver/index\\.ts$', '^fixtures/certs/index\\.ts$', '^fixtures/dns/DnsTestServer\\.ts$'];
// `kube-balancer/testing` (src/testing/) publishes the apiserver simulator and the run-time PKI: their entry modules only.
const testingFixtures = ['^fixtures/apiserver/index\\.ts$', '^fixtures/certs/index\\.ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'This import closes a circle (type-only imports count): the modules on it cannot be understood, tested or moved apart.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upImports,
    {
      name: 'src-module-in-no-layer',
      comment: 'Every module of src/ belongs to one layer (ARCHITECTURE.md and the `layers` list of .dependency-cruiser.mjs).',
      severity: 'error',
      from: { path: '^src/', pathNot: allLayerPaths },
      to: {},
    },
    {
      name: 'src-imports-module-in-no-layer',
      comment: 'Every module of src/ belongs to one layer (ARCHITECTURE.md and the `layers` list of .dependency-cruiser.mjs).',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: allLayerPaths },
    },
    {
      name: 'no-orphans-in-src',
      comment: 'A module of src/ that nothing imports and that imports nothing is dead code: delete it or use it.',
      severity: 'error',
      from: { orphan: true, path: '^src/' },
      to: {},
    },
    {
      name: 'src-must-not-import-tests-bench-scripts',
      comment: 'The library must not depend on its tests, benchmarks or scripts: they are not published.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts|chaos)/' },
    },
    {
      name: 'only-the-demo-and-testing-import-fixtures',
      comment: 'Only src/cli/demo/ and src/testing/ may import fixtures/ (they run the apiserver simulator).',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/cli/demo/', '^src/testing/'] },
      to: { path: '^fixtures/' },
    },
    {
      name: 'demo-imports-only-fixture-entry-points',
      comment: `src/cli/demo/ may import only these fixtures: ${demoFixtures.join(', ')}.`,
      severity: 'error',
      from: { path: '^src/cli/demo/' },
      to: { path: '^fixtures/', pathNot: demoFixtures },
    },
    {
      name: 'testing-imports-only-fixture-entry-points',
      comment: `src/testing/ may import only these fixtures: ${testingFixtures.join(', ')}.`,
      severity: 'error',
      from: { path: '^src/testing/' },
      to: { path: '^fixtures/', pathNot: testingFixtures },
    },
  ],
  options: {
    // Cruise only the project's own code; packages are leaves.
    includeOnly: '^(src|test|bench|fixtures|scripts|fleet|chaos)/',
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage|\\.cache)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    // Count `import type` and type-only uses too: a type-only cycle still ties the modules together.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'node', 'default'],
      extensions: ['.ts', '.js', '.json'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
