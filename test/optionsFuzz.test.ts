// Fuzzed option objects (issue 12): random shapes, known keys with values of every type, unknown keys,
// nested garbage. Each either fails at construction with a typed BalancerError, or builds a balancer
// that reports stats, settles a request within a bound, and closes cleanly; never a crash, a hang or
// an unhandled rejection, and nothing left running. `npm test` runs FUZZ_CASES (default 300);
// `npm run fuzz` 100,000.
import test from 'ava';
import fc from 'fast-check';
import * as undici from 'undici';
import { certs } from '../fixtures/certs/index.ts';
import { startServers, type TestServer } from '../fixtures/server/TestServer.ts';
import { BalancerError, createBalancer, type Balancer, type BalancerOptions } from '../src/index.ts';
import { ORIGIN } from './helpers/balancer.ts';
import { activeResources, leftOver } from './helpers/leaks.ts';

const CASES = Number(process.env.FUZZ_CASES ?? 300);
/** Every how many working balancers one also sends a request (the rest only report stats and close). */
const REQUEST_EVERY = 50;

const garbage: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ maxDepth: 2 }),
  fc.double(),
  fc.integer(),
  fc.string({ maxLength: 40 }),
  fc.constantFrom(undefined, null, true, false, 0, -1, NaN, Infinity, '', [], {}, 2 ** 31, 1e12),
);
const ms = fc.integer({ min: 1, max: 120_000 });

/** Option paths a case may spoil with garbage (zero to two of them per case). */
const PATHS = [
  'target', 'origin', 'tls', 'tls.ca', 'tls.cert', 'tls.key', 'tls.servername', 'tls.rejectUnauthorized', 'undici', 'connectTimeout',
  'keepAliveTimeout', 'pingInterval', 'requestTimeout', 'maxAttempts', 'retryBudget', 'retryBudget.percent', 'maxBufferedBody',
  'baseEjectionMs', 'maxEjectionMs', 'maxEjectionPercent', 'probe', 'probe.path', 'probe.intervalMs', 'probe.headers', 'dns',
  'dns.servers', 'dns.timeout', 'clock', 'policy', 'slowStartMs', 'panicThreshold', 'logger', 'rebalanceWatches',
  'rebalanceWatches.maxPerSecond', 'bootstrap', 'bootstrap.server', 'bootstrap.headers', 'orign', 'tls.serverName',
];

function spoil(options: Record<string, unknown>, path: string, value: unknown): void {
  const [head = '', tail] = path.split('.');
  if (tail === undefined) {
    options[head] = value;
    return;
  }
  const inner = options[head];
  options[head] = { ...(typeof inner === 'object' && inner !== null ? inner : {}), [tail]: value };
}

function options(port: () => number): fc.Arbitrary<unknown> {
  const target = fc.oneof(
    { weight: 8, arbitrary: fc.constant(null).map(() => `static:///127.0.0.2:${port()}`) },
    { weight: 1, arbitrary: fc.constantFrom('static:///', 'dns:///', 'dns+srv:///_x._tcp.test.', 'static:///[::1]:0', 'http://x', 'static:///a:b:c', 'static:///127.0.0.2:1,127.0.0.3:1') },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map((s) => `static:///${s}`) },
  );
  const tls = fc.record({ ca: fc.constantFrom(certs.ca, certs.foreignCa), servername: fc.constantFrom('kubernetes.default.svc', 'x.test'), rejectUnauthorized: fc.boolean() }, { requiredKeys: [] });
  const valid = fc.record(
    {
      target,
      origin: fc.constantFrom(ORIGIN, 'https://10.96.0.1', 'https://kubernetes.default.svc'),
      tls,
      connectTimeout: ms,
      keepAliveTimeout: ms,
      pingInterval: fc.integer({ min: 0, max: 60_000 }),
      requestTimeout: ms,
      maxAttempts: fc.integer({ min: 1, max: 10 }),
      retryBudget: fc.record({ percent: fc.integer({ min: 0, max: 100 }), min: fc.integer({ min: 0, max: 20 }) }, { requiredKeys: [] }),
      maxBufferedBody: fc.integer({ min: 0, max: 2 ** 24 }),
      baseEjectionMs: ms,
      maxEjectionMs: ms,
      maxEjectionPercent: fc.integer({ min: 0, max: 100 }),
      probe: fc.oneof(fc.constant(false), fc.record({ path: fc.constantFrom('/readyz', '/livez'), intervalMs: ms, timeoutMs: ms }, { requiredKeys: [] })),
      policy: fc.constantFrom('round-robin', 'least-request'),
      slowStartMs: fc.integer({ min: 0, max: 60_000 }),
      panicThreshold: fc.double({ min: 0, max: 1, noNaN: true }),
      rebalanceWatches: fc.oneof(fc.constant(false), fc.record({ maxPerSecond: fc.double({ min: 0.01, max: 1000, noNaN: true }) })),
    },
    { requiredKeys: ['target'] },
  );
  const spoiled = fc.tuple(valid, fc.array(fc.tuple(fc.constantFrom(...PATHS), garbage), { maxLength: 2 })).map(([opts, spoils]) => {
    const copy: Record<string, unknown> = { ...opts };
    for (const [path, value] of spoils) spoil(copy, path, value);
    return copy;
  });
  // Now and then not an object at all.
  return fc.oneof({ weight: 20, arbitrary: spoiled }, { weight: 1, arbitrary: garbage });
}

/** Rejects if `promise` has not settled within `ms`: a hang is a failure, not a slow test. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

test('fuzzed options: a typed BalancerError at construction, or a balancer that works and closes cleanly', async (t) => {
  t.timeout(3_600_000);
  const [server] = (await startServers(['127.0.0.2'])) as [TestServer];
  const baseline = activeResources();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
  const counts = { cases: 0, rejected: 0, built: 0, requests: 0 };
  const started = performance.now();
  try {
    await fc.assert(
      fc.asyncProperty(options(() => server.port), async (opts) => {
        counts.cases++;
        let balancer: Balancer;
        try {
          balancer = createBalancer(opts as BalancerOptions);
        } catch (error) {
          counts.rejected++;
          // A typed error whose message names what was wrong (the field, or the object itself).
          return error instanceof BalancerError && /^ERR_[A-Z_]+$/.test(error.code) && error.message.length > 0;
        }
        counts.built++;
        balancer.on('warning', () => {});
        balancer.on('resolver-error', () => {});
        try {
          if (typeof balancer.stats() !== 'object') return false;
          if (counts.built % REQUEST_EVERY === 0) {
            counts.requests++;
            // Settles either way (garbage TLS material, a wrong origin...), with an error that has a code.
            const outcome = await within(
              undici.request(`${ORIGIN}/version`, { dispatcher: balancer, headersTimeout: 5_000, bodyTimeout: 5_000 }).then(
                async (res) => (await res.body.dump(), res.statusCode),
                (error: Error & { code?: unknown }) => error,
              ),
              30_000,
              'a request',
            );
            if (outcome instanceof Error && typeof outcome.code !== 'string') return false;
          }
        } finally {
          await within(balancer.close(), 10_000, 'close()');
        }
        return true;
      }),
      { numRuns: CASES },
    );
  } finally {
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
    await server.close();
  }
  const seconds = (performance.now() - started) / 1000;
  t.log(`options: ${counts.cases} cases in ${seconds.toFixed(1)} s: ${counts.rejected} rejected with a BalancerError, ${counts.built} built and closed, ${counts.requests} of them sent a request`);
  t.deepEqual(unhandled, []);
  t.true(counts.rejected > 0 && counts.built > 0, 'both outcomes were exercised');
  t.deepEqual(await leftOver(baseline), {}, 'close() released every timer and socket');
});
