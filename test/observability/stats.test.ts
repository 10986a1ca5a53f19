import test from 'ava';
import { certs } from '../../fixtures/certs/index.ts';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { sendJson, startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { get, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';
import type { ResolverListener } from '../../src/resolver/Resolver.ts';
import { pushResolver } from '../helpers/pushResolver.ts';
import { load } from '../helpers/load.ts';

test('stats() after 300 GETs and one GET that fails everywhere: per-endpoint outcomes, retries, ejections, panic, JSON-safe', async (t) => {
  // `/fail` answers 500: a GET is retried on each endpoint in turn, and with consecutive5xx: 1 each ejects its endpoint.
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4'], {
    handler: (req, res) => sendJson(res, req.url === '/fail' ? 500 : 200, {}),
  });
  const balancer = createBalancer({ origin: ORIGIN,
    target: staticTarget(servers),
    tls: { ca: certs.ca },
    probe: false,
    consecutive5xx: 1,
    maxEjectionPercent: 100,
    baseEjectionMs: 30_000,
    hedge: false,
  });
  try {
    const results = await load(300, 10, () => get(balancer, '/api/v1/pods'));
    t.true(results.every((r) => r.value === 200));
    let stats = balancer.stats();
    t.deepEqual(
      stats.endpoints.map((e) => [e.key, e.requests, e.responses['2xx'], e.inFlight, e.state]),
      servers.map((s) => [`${s.host}:${s.port}`, 100, 100, 0, 'ready']),
    );
    t.like(stats.totals, { requests: 300, inFlight: 0, failed: 0 });
    t.deepEqual(stats.picker, { policy: 'weighted-round-robin', panic: false });
    t.true(stats.budget.credit > 0, 'successes earn retry credit');

    t.is(await get(balancer, '/fail'), 500, 'the last attempt’s 500 reaches the caller');
    stats = balancer.stats();
    t.deepEqual(JSON.parse(JSON.stringify(stats)), stats, 'plain JSON-safe data');
    // A run of 5xx is inferred evidence: even at maxEjectionPercent 100 the last endpoint taking requests stays in.
    t.deepEqual(stats.endpoints.map((e) => e.state).sort(), ['ejected', 'ejected', 'ready']);
    for (const e of stats.endpoints) {
      t.deepEqual(e.responses, { '1xx': 0, '2xx': 100, '3xx': 0, '4xx': 0, '5xx': 1, error: 0, aborted: 0 });
      t.like(e, { requests: 101, failures: 1, weightFactor: 1, source: 'static' });
    }
    for (const e of stats.endpoints.filter((e) => e.state === 'ejected')) {
      t.is(e.ejections, 1);
      t.is(e.lastEjection?.reason, 'failures');
      t.true(e.lastEjection!.durationMs >= 24_000 && e.lastEjection!.durationMs <= 30_000, 'baseEjectionMs ±20 %, at most maxEjectionMs');
      t.true(e.lastEjection!.at <= Date.now());
    }
    t.like(stats.totals, { requests: 301, inFlight: 0, failed: 0 });
    t.deepEqual(stats.totals.retries, { connect: 0, tls: 0, refused: 0, reset: 0, unresponsive: 0, timeout: 0, throttled: 0, shutdown: 0, '5xx': 2, hedge: 0, moved: 0 });
    t.deepEqual(stats.totals.ejections, { connect: 0, tls: 0, failures: 2, throttled: 0, unreachable: 0, probe: 0 });
    t.deepEqual(stats.budget, { retriesInFlight: 0, refused: 0, credit: stats.budget.credit });
    t.true(stats.picker.panic, 'one endpoint of three ready: panic mode');
    t.like(stats.resolver, { target: staticTarget(servers), updates: 1, errors: 0, lastError: null, warnings: 0, dnsQueries: {} });
    t.true(typeof stats.resolver.lastUpdateAt === 'number' && stats.resolver.lastUpdateAt <= Date.now());
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('resolver state, dns-error, resolver-error and warning events from a resolver’s listener calls', async (t) => {
  const target = pushResolver([{ address: '127.0.0.9', port: 6443, ttl: 30, source: 'dns+srv' }]);
  const balancer = createBalancer({ origin: ORIGIN, target, probe: false });
  const events: string[] = [];
  balancer.on('resolver-error', (e) => events.push(`resolver-error ${e.message}`));
  balancer.on('dns-error', (e) => events.push(`dns-error ${e.message}`));
  balancer.on('warning', (m) => events.push(`warning ${m}`));
  try {
    const dnsError = Object.assign(new Error('DNS _https._tcp.example SRV: SERVFAIL'), { code: 'ERR_DNS' });
    target.listener!.error(dnsError);
    target.listener!.error(new Error('EndpointSlice watch failed'));
    target.listener!.warning!('serving the last answer past its TTL');
    target.listener!.endpoints([]);
    for (const result of ['success', 'success', 'NXDOMAIN', 'TIMEOUT']) target.listener!.dnsQuery!(result);
    t.deepEqual(events, [
      `resolver-error ${dnsError.message}`,
      `dns-error ${dnsError.message}`,
      'resolver-error EndpointSlice watch failed',
      'warning serving the last answer past its TTL',
      'warning resolver reported no endpoints; keeping the previous set',
    ]);
    const { resolver, endpoints: listed } = balancer.stats();
    t.like(resolver, { target: 'custom', updates: 1, errors: 2, warnings: 2, dnsQueries: { success: 2, nxdomain: 1, timeout: 1 } });
    t.like(resolver.lastError, { message: 'EndpointSlice watch failed' });
    t.false('code' in resolver.lastError!);
    t.like(resolver.lastWarning, { message: 'resolver reported no endpoints; keeping the previous set' });
    t.like(listed[0], { key: '127.0.0.9:6443', ttl: 30, source: 'dns+srv' });
    // A resolver cannot blow up the metric's label set.
    for (let i = 0; i < 100; i++) target.listener!.dnsQuery!(`weird-${i}`);
    t.true(Object.keys(balancer.stats().resolver.dnsQueries).length <= 33);
    t.true(balancer.stats().resolver.dnsQueries.other! > 0);
  } finally {
    await balancer.close();
  }
});

test('a probe refused for lack of credentials (401) is a warning, once', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3']);
  for (const s of servers) s.readyzStatus = 401;
  const balancer = createBalancer({ target: staticTarget(servers), origin: ORIGIN, tls: { ca: certs.ca }, probe: { intervalMs: 50 } });
  const warnings: string[] = [];
  balancer.on('warning', (m) => warnings.push(m));
  try {
    await until(() => servers.every((s) => s.probes >= 3), { what: 'three probes on every server' });
    t.is(warnings.length, 1);
    t.regex(warnings[0]!, /answered 401: set probe\.headers/);
    t.true(balancer.stats().endpoints.every((e) => e.state === 'ready'), 'a 401 counts as alive');
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a dns+srv: target counts its DNS queries by result and reports a failure as dns-error', async (t) => {
  const SRV = '_https._tcp.kubernetes-headless.default.svc.cluster.local';
  const dns = await DnsTestServer.start();
  dns.add(
    { name: SRV, type: 'SRV', ttl: 60, data: { priority: 0, weight: 1, port: 6443, target: 'a.kubernetes-headless.default.svc.cluster.local' } },
    { name: 'a.kubernetes-headless.default.svc.cluster.local', type: 'A', ttl: 60, data: '127.0.0.2' },
  );
  const good = createBalancer({ origin: ORIGIN, target: `dns+srv:///${SRV}.`, dns: { servers: [dns.address] }, probe: false });
  const refused = await DnsTestServer.start();
  refused.rule({ action: { rcode: 5 } });
  const bad = createBalancer({ origin: ORIGIN, target: `dns+srv:///${SRV}.`, dns: { servers: [refused.address], attempts: 1 }, probe: false });
  const dnsErrors: Error[] = [];
  bad.on('dns-error', (e) => dnsErrors.push(e));
  try {
    await good.ready();
    const stats = good.stats();
    t.like(stats.resolver, { target: `dns+srv:///${SRV}.`, updates: 1, errors: 0 });
    t.true((stats.resolver.dnsQueries.success ?? 0) >= 1, JSON.stringify(stats.resolver.dnsQueries));
    t.like(stats.endpoints[0], { key: '127.0.0.2:6443', source: 'dns+srv' });
    await t.throwsAsync(bad.ready());
    t.true(dnsErrors.length >= 1);
    t.is((dnsErrors[0] as Error & { code?: string }).code, 'ERR_DNS');
    t.true((bad.stats().resolver.dnsQueries.refused ?? 0) >= 1, JSON.stringify(bad.stats().resolver.dnsQueries));
    t.like(bad.stats().resolver.lastError, { code: 'ERR_DNS' });
  } finally {
    await good.close();
    await bad.close();
    await dns.close();
    await refused.close();
  }
});

test('resolver.target names a chain by its URIs, an array of endpoints as list, a resolver object as custom', async (t) => {
  const custom = { start: (l: ResolverListener) => l.endpoints([{ address: '127.0.0.9', port: 6443 }]) };
  const cases: Array<[Parameters<typeof createBalancer>[0]['target'], string]> = [
    ['static:///127.0.0.2:6443', 'static:///127.0.0.2:6443'],
    [['static:///127.0.0.2:6443', 'static:///127.0.0.3:6443'], 'static:///127.0.0.2:6443 static:///127.0.0.3:6443'],
    [['static:///127.0.0.2:6443', custom], 'static:///127.0.0.2:6443 custom'],
    [[{ address: '127.0.0.2', port: 6443 }], 'list'],
    [custom, 'custom'],
  ];
  for (const [target, named] of cases) {
    const balancer = createBalancer({ origin: ORIGIN, target, probe: false });
    t.is(balancer.stats().resolver.target, named);
    await balancer.close();
  }
});
