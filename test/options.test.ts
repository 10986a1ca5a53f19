import { readFileSync } from 'node:fs';
import test, { type ExecutionContext } from 'ava';
import { certs } from '../fixtures/certs/index.ts';
import { balancerInternals } from '../src/dispatcher/internals.ts';
import { BalancerError, createBalancer, defaultOptions, type BalancerErrorCode, type BalancerOptions, type ProbeOptions } from '../src/index.ts';

/** Every balancer needs its origin; the tests here are about the other options. */
const origin = 'https://kubernetes.default.svc';

function rejects(t: ExecutionContext, options: unknown, code: BalancerErrorCode, message: RegExp): void {
  const withOrigin = typeof options === 'object' && options !== null && !('origin' in options) ? { origin, ...options } : options;
  const error = t.throws(() => createBalancer(withOrigin as BalancerOptions), { instanceOf: BalancerError });
  t.is(error?.code, code);
  t.regex(error?.message ?? '', message);
}

const invalidTargets: Array<[unknown, RegExp]> = [
  ['static:///', /lists no endpoint/],
  ['static:///127.0.0.1', /must be ip:port/],
  ['static:///127.0.0.1:0', /port 0 .* not in 1–65535/],
  ['static:///127.0.0.1:65536', /port 65536/],
  ['static:///127.0.0.1:http', /must be ip:port/],
  ['static:///kubernetes.local:6443', /not an IP address/],
  ['static:///::1:6443', /must be ip:port|brackets/],
  ['static:///[127.0.0.1]:6443', /not an IPv6 address/],
  ['static:///127.0.0.1:6443?weight=-1', /weight=-1/],
  ['static:///127.0.0.1:6443?zone=a', /unknown parameter "zone"/],
  ['static://host/127.0.0.1:6443', /no authority/],
  ['gopher:///x', /unknown scheme "gopher:" \(known: static:, dns:, dns\+srv:, kubernetes:\)/],
  ['dns:///apiservers.example.com', /needs a port/],
  ['dns:///apiservers.example.com:0', /port 0 is not in 1–65535/],
  ['dns:///10.0.0.1:6443', /is an IP address, not a name: use static:\/\/\/10.0.0.1:6443/],
  ['dns:///[::1]:6443', /is an IP address/],
  ['dns://10.96.0.10/apiservers.example.com:6443', /take no authority/],
  ['dns+srv://10.96.0.10/_https._tcp.example.com', /take no authority/],
  ['dns+srv:///', /is empty/],
  [`dns+srv:///${'a'.repeat(64)}.example.com`, /label of 64 characters/],
  ['dns+srv:///_https._tcp..example.com', /empty label/],
  ['dns:///bad_name!.example.com:443', /characters other than/],
  ['127.0.0.1:6443', /expected <scheme>:\/\/\/<name>/],
  ['', /expected <scheme>/],
  [42, /options.target "42": must be a URI string/],
  [[], /lists no endpoint/],
  [[{ address: 'localhost', port: 1 }], /options.target\[0\].*IP address/],
  [[{ address: '10.0.0.1', port: 99999 }], /port 99999/],
  [[{ address: '10.0.0.1', port: 1, weight: 1.5 }], /weight 1.5/],
];

for (const [target, message] of invalidTargets) {
  test(`target ${JSON.stringify(target)} is rejected with ERR_INVALID_TARGET`, (t) => {
    rejects(t, { target }, 'ERR_INVALID_TARGET', message);
  });
}

const invalidOptions: Array<[string, unknown, RegExp]> = [
  ['missing target', { target: undefined }, /options.target is required/],
  ['options not an object', null, /must be an object/],
  ['tls.ca not PEM', { tls: { ca: 'hello' } }, /options.tls.ca must be PEM/],
  ['tls.ca PEM without certificate', { tls: { ca: certs.apiserver.key } }, /options.tls.ca holds no/],
  ['tls.ca[1] not PEM', { tls: { ca: [certs.ca, Buffer.from('x')] } }, /options.tls.ca\[1\] must be PEM.*Buffer of 1 bytes/],
  ['tls.ca broken certificate', { tls: { ca: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' } }, /does not parse/],
  ['tls.cert without key', { tls: { cert: certs.client.cert } }, /options.tls.key is required/],
  ['tls.key without cert', { tls: { key: certs.client.key } }, /options.tls.cert is required/],
  ['tls.key not a key', { tls: { cert: certs.client.cert, key: certs.ca } }, /options.tls.key must be a valid PEM private key/],
  ['tls.servername empty', { tls: { servername: '' } }, /options.tls.servername/],
  ['tls.rejectUnauthorized a string', { tls: { rejectUnauthorized: 'no' } }, /options.tls.rejectUnauthorized must be a boolean; got "no"/],
  ['origin not a URL', { origin: 'kubernetes' }, /options.origin must be an absolute URL/],
  ['origin with a path', { origin: 'https://kubernetes.default.svc/api' }, /options.origin must be an origin only/],
  ['origin ftp', { origin: 'ftp://x' }, /options.origin must use https: or http:/],
  ['undici not a module', { undici: {} }, /options.undici must be an undici module/],
  ['connectTimeout zero', { connectTimeout: 0 }, /options.connectTimeout must be a positive number/],
  ['keepAliveTimeout NaN', { keepAliveTimeout: Number.NaN }, /options.keepAliveTimeout/],
  ['maxAttempts 0', { maxAttempts: 0 }, /options.maxAttempts must be an integer from 1 to 10; got 0/],
  ['retryBudget.percent 101', { retryBudget: { percent: 101 } }, /options.retryBudget.percent must be an integer from 0 to 100/],
  ['probe.path relative', { probe: { path: 'readyz' } }, /options.probe.path must be a path starting with "\/"; got "readyz"/],
  ['probe.intervalMs negative', { probe: { intervalMs: -1 } }, /options.probe.intervalMs/],
  ['probe.headers not strings', { probe: { headers: { authorization: 1 } } }, /options.probe.headers/],
  ['probe true', { probe: true }, /options.probe must be an object or false/],
  ['pingInterval fractional', { pingInterval: 1.5 }, /options.pingInterval/],
  ['maxEjectionPercent 150', { maxEjectionPercent: 150 }, /options.maxEjectionPercent/],
  ['consecutive5xx 0', { consecutive5xx: 0 }, /options.consecutive5xx/],
  ['maxEndpoints 0', { maxEndpoints: 0 }, /options.maxEndpoints must be an integer from 1 to 10000; got 0/],
  ['maxEndpoints 2.5', { maxEndpoints: 2.5 }, /options.maxEndpoints/],
  ['maxEndpoints a string', { maxEndpoints: '100' }, /options.maxEndpoints/],
  ['dns not an object', { dns: 'x' }, /options.dns must be an object/],
  ['dns.servers empty', { dns: { servers: [] } }, /options.dns.servers must be a non-empty array/],
  ['dns.servers[1] a name', { dns: { servers: ['127.0.0.1', 'dns.google'] } }, /options.dns.servers\[1\] must be an IP address with an optional port/],
  ['dns.servers[0] port 0', { dns: { servers: ['127.0.0.1:0'] } }, /options.dns.servers\[0\]/],
  ['dns.timeout negative', { dns: { timeout: -1 } }, /options.dns.timeout must be a positive number of milliseconds/],
  ['dns.attempts 0', { dns: { attempts: 0 } }, /options.dns.attempts must be an integer in 1–10/],
  ['dns.attempts 1.5', { dns: { attempts: 1.5 } }, /options.dns.attempts/],
  ['dns.minTtl 0', { dns: { minTtl: 0 } }, /options.dns.minTtl must be a positive/],
  ['dns.maxTtl below minTtl', { dns: { minTtl: 5000, maxTtl: 1000 } }, /options.dns.maxTtl must not be less than dns.minTtl \(5000\)/],
  ['dns.maxStale negative', { dns: { maxStale: -5 } }, /options.dns.maxStale must be a number of milliseconds, 0 or more/],
];

for (const [name, options, message] of invalidOptions) {
  test(`${name} is rejected with ERR_INVALID_OPTION`, (t) => {
    rejects(t, options === null ? null : { target: 'static:///127.0.0.1:6443', ...(options as object) }, 'ERR_INVALID_OPTION', message);
  });
}

test('key material never appears in an error message', (t) => {
  const error = t.throws(() => createBalancer({ origin, target: 'static:///127.0.0.1:6443', tls: { cert: certs.client.cert, key: certs.ca } }));
  t.false(error?.message.includes('BEGIN'));
});

test('valid options are accepted', async (t) => {
  const balancer = createBalancer({
    target: 'static:///127.0.0.1:6443?weight=3,[::1]:6443?priority=1',
    origin: 'https://kubernetes.default.svc:443',
    tls: { ca: [certs.ca, Buffer.from(certs.foreignCa)], cert: certs.client.cert, key: Buffer.from(certs.client.key), servername: 'kubernetes' },
  });
  t.deepEqual(
    balancer.endpoints().map((e) => [e.address, e.port, e.weight, e.priority]),
    [
      ['127.0.0.1', 6443, 3, 0],
      ['::1', 6443, 1, 1],
    ],
  );
  await balancer.close();
});

test('picker options: policy, slowStartMs and panicThreshold are validated, with defaults', (t) => {
  const target = 'static:///127.0.0.1:6443';
  rejects(t, { target, policy: 'random' }, 'ERR_INVALID_OPTION', /options.policy must be one of 'weighted-round-robin', 'round-robin', 'least-request'; got "random"/);
  rejects(t, { target, slowStartMs: -1 }, 'ERR_INVALID_OPTION', /options.slowStartMs must be a number of milliseconds, 0 or more/);
  rejects(t, { target, slowStartMs: Infinity }, 'ERR_INVALID_OPTION', /options.slowStartMs/);
  rejects(t, { target, panicThreshold: 1.5 }, 'ERR_INVALID_OPTION', /options.panicThreshold must be a fraction in \[0, 1\]; got 1.5/);
  rejects(t, { target, panicThreshold: Number.NaN }, 'ERR_INVALID_OPTION', /options.panicThreshold/);
  t.like(defaultOptions, { policy: 'weighted-round-robin', slowStartMs: 10_000, panicThreshold: 0.5 });
  for (const options of [{ policy: 'least-request' as const }, { policy: 'round-robin' as const }, { slowStartMs: 0 }, { panicThreshold: 0 }, { panicThreshold: 1 }]) {
    t.notThrows(() => void createBalancer({ origin, target, ...options }).close());
  }
});

test('valid dns options are accepted and a DNS target starts resolving', async (t) => {
  const balancer = createBalancer({
    origin,
    target: 'dns:///api.test.:6443',
    dns: { servers: ['127.0.0.1:1', '[::1]:53', '::1'], timeout: 100, attempts: 1, minTtl: 500, maxTtl: 60_000, maxStale: 0 },
  });
  const error = await t.throwsAsync(balancer.ready(), { instanceOf: BalancerError });
  t.is(error?.code, 'ERR_NO_ENDPOINTS');
  await balancer.close();
});

test('the README option table lists every dns option', (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  for (const key of ['servers', 'timeout', 'attempts', ...Object.keys(defaultOptions.dns)]) {
    t.true(readme.includes(`| \`dns.${key}\` |`), `dns.${key}`);
  }
});

test('kubernetes: targets, chains, bootstrap and rebalanceWatches are validated', (t) => {
  const target = 'static:///127.0.0.1:6443';
  rejects(t, { target: 'kubernetes:///default/kubernetes' }, 'ERR_INVALID_OPTION', /options.bootstrap is required by the target "kubernetes:\/\/\/default\/kubernetes"/);
  const bootstrap = { server: 'https://10.96.0.1:443', lastResort: false };
  rejects(t, { target: 'kubernetes:///kubernetes', bootstrap }, 'ERR_INVALID_TARGET', /expected kubernetes:\/\/\/<namespace>\/<service>/);
  rejects(t, { target: 'kubernetes:///Default/kubernetes', bootstrap }, 'ERR_INVALID_TARGET', /expected kubernetes/);
  rejects(t, { target: 'kubernetes://cluster/default/kubernetes', bootstrap }, 'ERR_INVALID_TARGET', /take no authority/);
  rejects(t, { target: ['static:///127.0.0.1:6443', { address: '127.0.0.1', port: 1 }] }, 'ERR_INVALID_TARGET', /mixes endpoints with URIs/);
  rejects(t, { target: ['static:///127.0.0.1:6443', 'gopher:///x'] }, 'ERR_INVALID_TARGET', /unknown scheme "gopher:"/);
  rejects(t, { target, bootstrap: { server: 'kubernetes.default.svc' } }, 'ERR_INVALID_OPTION', /options.bootstrap.server must be an absolute URL/);
  rejects(t, { target, bootstrap: { server: 'https://u:p@10.96.0.1' } }, 'ERR_INVALID_OPTION', /options.bootstrap.server must be scheme, host, port/);
  rejects(t, { target, bootstrap: { server: 'https://10.96.0.1', headers: { a: 1 } } }, 'ERR_INVALID_OPTION', /options.bootstrap.headers/);
  rejects(t, { target, bootstrap: { server: 'https://10.96.0.1', lastResort: 'no' } }, 'ERR_INVALID_OPTION', /options.bootstrap.lastResort must be a boolean/);
  rejects(t, { target, rebalanceWatches: { maxPerSecond: 0 } }, 'ERR_INVALID_OPTION', /options.rebalanceWatches.maxPerSecond must be a number above 0/);
  rejects(t, { target, rebalanceWatches: true }, 'ERR_INVALID_OPTION', /options.rebalanceWatches must be \{ maxPerSecond, graceMs \} or false/);
  rejects(t, { target, rebalanceWatches: { graceMs: -1 } }, 'ERR_INVALID_OPTION', /options.rebalanceWatches.graceMs/);
  t.deepEqual(defaultOptions.rebalanceWatches, { maxPerSecond: 1, graceMs: 60_000 });
  for (const options of [
    { rebalanceWatches: false as const },
    { rebalanceWatches: { maxPerSecond: 0.1 } },
    { target: [target, 'static:///127.0.0.2:6443'] },
    // Loopback only: nothing listens on port 1.
    { target: ['kubernetes:///default/kubernetes'], bootstrap: { server: 'https://127.0.0.1:1' } },
    { probe: { headers: () => ({ authorization: 'Bearer x' }) } satisfies ProbeOptions },
  ]) {
    t.notThrows(() => void createBalancer({ origin, target, ...options }).close());
  }
});

test('the balanced origin is required: options.origin, else bootstrap.server\'s origin', async (t) => {
  const target = 'static:///127.0.0.1:6443';
  const error = t.throws(() => createBalancer({ target, tls: { ca: certs.ca } }), { instanceOf: BalancerError });
  t.is(error?.code, 'ERR_INVALID_OPTION');
  t.regex(error?.message ?? '', /^options.origin is required \(or bootstrap.server\)/);
  const fromBootstrap = createBalancer({ target, bootstrap: { server: 'https://127.0.0.1:1/prefix', lastResort: false } });
  t.true(balancerInternals(fromBootstrap).balances(new URL('https://127.0.0.1:1/api')));
  t.false(balancerInternals(fromBootstrap).balances(new URL('https://hooks.example.test/')));
  await fromBootstrap.close();
  rejects(t, { target, origin: 'http://127.0.0.1:8080', probe: { headers: { authorization: 'Bearer x' } } }, 'ERR_INVALID_OPTION', /^options.probe.headers must not be set for the http: origin http:\/\/127.0.0.1:8080/);
  t.notThrows(() => void createBalancer({ target, origin: 'http://127.0.0.1:8080' }).close());
});
