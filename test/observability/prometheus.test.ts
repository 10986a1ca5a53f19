import assert from 'node:assert';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import test from 'ava';
import { Registry } from 'prom-client';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, staticTarget, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { registerMetrics } from '../../src/prometheus/index.ts';
import { cluster, get, ORIGIN } from '../helpers/balancer.ts';
import { load } from '../helpers/load.ts';
import { until } from '../helpers/poll.ts';
import { pushResolver } from '../helpers/pushResolver.ts';
import { apfThrottle } from '../helpers/throttle.ts';

/** `name{label="value",…}` → value, for every series of the registry. */
async function scrape(registry: Registry): Promise<Map<string, number>> {
  const series = new Map<string, number>();
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const { labels, value } of metric.values) {
      const text = Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(',');
      series.set(text ? `${metric.name}{${text}}` : metric.name, value);
    }
  }
  return series;
}

const key = (s: TestServer): string => `${s.host}:${s.port}`;

test('300 GETs over 3 servers, then an APF 429: request counters per endpoint and status class, the ejection and the retry by reason', async (t) => {
  const { throttled, rejected, handler } = apfThrottle();
  const { servers, balancer, close } = await cluster({ probe: false }, { handler });
  const registry = new Registry();
  const unregister = registerMetrics(balancer, registry);
  try {
    const results = await load(300, 10, () => get(balancer));
    t.true(results.every((r) => r.value === 200));
    let m = await scrape(registry);
    for (const s of servers) {
      t.is(m.get(`kube_balancer_requests_total{endpoint="${key(s)}",status_class="2xx"}`), 100, key(s));
      t.is(m.get(`kube_balancer_requests_total{endpoint="${key(s)}",status_class="5xx"}`), 0);
      t.is(m.get(`kube_balancer_requests_in_flight{endpoint="${key(s)}"}`), 0);
      t.is(m.get(`kube_balancer_open_streams{endpoint="${key(s)}"}`), 0);
      t.is(m.get(`kube_balancer_endpoint_state{endpoint="${key(s)}",state="ready"}`), 1);
      t.is(m.get(`kube_balancer_endpoint_state{endpoint="${key(s)}",state="ejected"}`), 0);
    }
    t.is(m.get('kube_balancer_retries_total{reason="throttled"}'), 0);
    t.is(m.get('kube_balancer_panic'), 0);

    // API Priority and Fairness rejects everything at one server: the next request sent there is
    // retried elsewhere, and the endpoint rests for its Retry-After.
    const limited = servers[1]!;
    throttled.add(limited);
    let sent = 0;
    while (rejected() === 0 && sent < 3) {
      t.is(await get(balancer), 200);
      sent++;
    }
    t.is(rejected(), 1);
    m = await scrape(registry);
    t.is(m.get(`kube_balancer_requests_total{endpoint="${key(limited)}",status_class="4xx"}`), 1);
    t.is(m.get('kube_balancer_retries_total{reason="throttled"}'), 1);
    t.is(m.get('kube_balancer_ejections_total{reason="throttled"}'), 1);
    t.is(m.get(`kube_balancer_endpoint_state{endpoint="${key(limited)}",state="ejected"}`), 1);
    t.is(m.get(`kube_balancer_endpoint_weight_factor{endpoint="${key(limited)}"}`), 0.5);
    t.is(m.get('kube_balancer_retries_refused_total'), 0);
    t.is(m.get('kube_balancer_failed_requests_total'), 0);
    const twoXx = servers.reduce((sum, s) => sum + m.get(`kube_balancer_requests_total{endpoint="${key(s)}",status_class="2xx"}`)!, 0);
    t.is(twoXx, 300 + sent);

    const text = await registry.metrics();
    t.regex(text, /# TYPE kube_balancer_requests_total counter/);
    t.regex(text, /# TYPE kube_balancer_requests_in_flight gauge/);
    t.regex(text, new RegExp(`kube_balancer_requests_total\\{endpoint="${key(servers[0]!)}",status_class="2xx"\\} \\d+`));
    unregister();
    t.deepEqual(registry.getMetricsAsArray(), []);
  } finally {
    await close();
  }
});

test('in-flight and open streams are read at scrape time', async (t) => {
  let release = (): void => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const servers = await startServers(['127.0.0.2'], {
    handler: (_req, res) => void held.then(() => sendJson(res, 200, {})),
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const registry = new Registry();
  registerMetrics(balancer, registry);
  try {
    const pending = [get(balancer), get(balancer), undici.request(`${ORIGIN}/api/v1/pods?watch=true`, { dispatcher: balancer }).then((r) => r.body.dump())];
    const endpoint = key(servers[0]!);
    await until(() => servers[0]!.requests.length >= 3, { what: 'the three requests to reach the server' });
    const m = await scrape(registry);
    t.is(m.get(`kube_balancer_requests_in_flight{endpoint="${endpoint}"}`), 3);
    t.is(m.get(`kube_balancer_open_streams{endpoint="${endpoint}"}`), 1);
    release();
    await Promise.all(pending);
    const after = await scrape(registry);
    t.is(after.get(`kube_balancer_requests_in_flight{endpoint="${endpoint}"}`), 0);
    t.is(after.get(`kube_balancer_open_streams{endpoint="${endpoint}"}`), 0);
    t.is(after.get(`kube_balancer_requests_total{endpoint="${endpoint}",status_class="2xx"}`), 3);
  } finally {
    release();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('DNS queries by result and resolver errors; two balancers on one registry with their own prefixes', async (t) => {
  const target = pushResolver([{ address: '127.0.0.9', port: 6443 }]);
  const a = createBalancer({ origin: ORIGIN, target, probe: false });
  const b = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.10:6443', probe: false });
  const registry = new Registry();
  registerMetrics(a, registry);
  registerMetrics(b, registry, { prefix: 'other_' });
  try {
    for (const result of ['success', 'success', 'NXDOMAIN', 'SERVFAIL']) target.listener!.dnsQuery!(result);
    target.listener!.error(Object.assign(new Error('DNS x SRV: SERVFAIL'), { code: 'ERR_DNS' }));
    const m = await scrape(registry);
    t.is(m.get('kube_balancer_dns_queries_total{result="success"}'), 2);
    t.is(m.get('kube_balancer_dns_queries_total{result="nxdomain"}'), 1);
    t.is(m.get('kube_balancer_dns_queries_total{result="servfail"}'), 1);
    t.is(m.get('kube_balancer_resolver_errors_total'), 1);
    t.is(m.get('other_resolver_errors_total'), 0);
    t.is(m.get('other_endpoint_state{endpoint="127.0.0.10:6443",state="ready"}'), 1);
    t.throws(() => registerMetrics(b, registry), { message: /already been registered/ });
  } finally {
    await a.close();
    await b.close();
  }
});

test('the package: `kube-balancer/prometheus` resolves to the build with types; the main entry never loads prom-client', async (t) => {
  const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as { exports: Record<string, unknown>; peerDependenciesMeta: unknown };
  t.deepEqual(pkg.exports['./prometheus'], { types: './dist/src/prometheus/index.d.ts', default: './dist/src/prometheus/index.js' });
  t.like(pkg.peerDependenciesMeta, { 'prom-client': { optional: true } });
  // Through the package's self-reference, as a user imports it (npm test builds dist first).
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ resolve(specifier, context, next) { if (specifier.startsWith('prom-client')) loaded.push(specifier); return next(specifier, context); } });
    const main = await import('kube-balancer');
    const balancer = main.createBalancer({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.9:6443', probe: false });
    const mainLoaded = loaded.length;
    const { registerMetrics } = await import('kube-balancer/prometheus');
    const subpathLoaded = loaded.length;
    const { Registry } = await import('prom-client');
    const registry = new Registry();
    registerMetrics(balancer, registry);
    await balancer.close();
    console.log(JSON.stringify({ mainLoaded, subpathLoaded, metrics: registry.getMetricsAsArray().length }));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: import.meta.dirname });
  t.deepEqual(JSON.parse(stdout), { mainLoaded: 0, subpathLoaded: 1, metrics: 12 });
});

test('docs/observability.md lists every metric', (t) => {
  const readme = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
  const registry = new Registry();
  registerMetrics({ stats: () => assert.fail('not scraped') }, registry);
  const names = registry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name);
  t.is(names.length, 12);
  for (const name of names) t.true(readme.includes(`| \`${name}\` |`), name);
});
