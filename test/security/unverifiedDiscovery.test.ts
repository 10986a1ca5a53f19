// With certificate verification off, or an http: origin, endpoints that DNS or an EndpointSlice names
// get requests only with tls.allowUnverifiedDiscovered: true; addresses written out (static:) need no opt-in.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import test from 'ava';
import { request } from 'undici';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { until } from '../helpers/poll.ts';
import { attachToKubeConfig, BalancerError, createBalancer, fromKubeConfig, type Resolver } from '../../src/index.ts';

const SRV = '_https._tcp.kubernetes-headless.default.svc.cluster.local';
const insecure = { rejectUnauthorized: false } as const;
const namespaces = (cluster: ApiserverCluster): number[] => cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces' }).length);

test('every discovering target with rejectUnauthorized: false is an option error naming tls.allowUnverifiedDiscovered; static lists are not', (t) => {
  const origin = 'https://10.96.0.1:443';
  const resolver: Resolver = { start: () => {} };
  const bootstrap = { server: origin };
  for (const target of [`dns+srv:///${SRV}.`, 'dns:///apiserver.example.test:6443', 'kubernetes:///default/kubernetes', resolver, ['static:///127.0.0.2:6443', 'DNS:///apiserver.example.test:6443']]) {
    const error = t.throws(() => createBalancer({ origin, target, bootstrap, tls: insecure, probe: false }), { instanceOf: BalancerError });
    t.is(error.code, 'ERR_INVALID_OPTION');
    t.regex(error.message, /^options\.tls\.allowUnverifiedDiscovered must be true to use .* with tls\.rejectUnauthorized: false/);
  }
  t.throws(() => createBalancer({ origin, target: 'static:///127.0.0.2:6443', tls: { allowUnverifiedDiscovered: 'yes' as never } }), { message: /options\.tls\.allowUnverifiedDiscovered must be a boolean/ });
  for (const target of ['static:///127.0.0.2:6443', [{ address: '127.0.0.2', port: 6443 }]]) {
    const balancer = createBalancer({ origin, target, tls: insecure, probe: false });
    t.truthy(balancer);
    void balancer.close();
  }
});

test.serial('dns+srv: with verification off, refused without the opt-in (no query sent); with it, every listed apiserver serves', async (t) => {
  const cluster = await ApiserverCluster.start();
  const dns = await DnsTestServer.start();
  dns.add(
    ...cluster.instances.map((i, k) => ({ name: SRV, type: 'SRV' as const, ttl: 60, data: { priority: 0, weight: 1, port: cluster.port, target: `a${k}.${SRV}` } })),
    ...cluster.instances.map((i, k) => ({ name: `a${k}.${SRV}`, type: 'A' as const, ttl: 60, data: i.host })),
  );
  const options = { origin: cluster.instances[0]!.url, target: `dns+srv:///${SRV}.`, dns: { servers: [dns.address] }, probe: false, hedge: false } as const;
  try {
    t.throws(() => createBalancer({ ...options, tls: insecure }), { instanceOf: BalancerError, message: /tls\.allowUnverifiedDiscovered/ });
    t.is(dns.queries().length, 0, 'nothing was discovered');

    const balancer = createBalancer({ ...options, tls: { ...insecure, allowUnverifiedDiscovered: true } });
    try {
      await balancer.ready();
      for (let i = 0; i < 6; i++) {
        const res = await request(`${cluster.instances[0]!.url}/api/v1/namespaces`, { dispatcher: balancer, headers: cluster.authHeaders });
        t.is(res.statusCode, 200);
        await res.body.dump();
      }
      t.deepEqual(namespaces(cluster), [2, 2, 2]);
    } finally {
      await balancer.close();
    }
  } finally {
    await dns.close();
    await cluster.close();
  }
});

test.serial('a kubeconfig with insecure-skip-tls-verify and the EndpointSlice target: refused without the opt-in, balanced with it', async (t) => {
  const cluster = await ApiserverCluster.start();
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig({ insecure: true }));
  try {
    const error = await t.throwsAsync(fromKubeConfig(kc), { instanceOf: BalancerError });
    t.is(error.code, 'ERR_INVALID_OPTION');
    t.regex(error.message, /tls\.allowUnverifiedDiscovered must be true to use target "kubernetes:\/\/\/default\/kubernetes"/);
    await t.throwsAsync(attachToKubeConfig(kc), { message: /tls\.allowUnverifiedDiscovered/ });
    t.deepEqual(
      cluster.instances.map((i) => i.requests.length),
      [0, 0, 0],
      'not even the EndpointSlice was read',
    );
    await t.throwsAsync(fromKubeConfig(kc, { tls: { ca: 'x' } as never }), { message: /options\.tls\.ca comes from the kubeconfig/ });

    const attachment = await attachToKubeConfig(kc, { tls: { allowUnverifiedDiscovered: true }, probe: false, hedge: false });
    try {
      const balancer = attachment.balancer!;
      await balancer.ready();
      const core = kc.makeApiClient(CoreV1Api);
      // The EndpointSlice lists the three instances; the kubeconfig's server is the last resort.
      await until(() => balancer.endpoints().filter((e) => e.priority === 0).length === 3, { what: 'the three instances from the EndpointSlice' });
      for (const instance of cluster.instances) instance.resetCounters();
      for (let i = 0; i < 6; i++) await core.listNamespace();
      t.deepEqual(namespaces(cluster), [2, 2, 2]);
    } finally {
      await attachment.detach();
    }
  } finally {
    await cluster.close();
  }
});

test('an http: origin with any discovering target is an option error naming origin and the fix; static lists are not', (t) => {
  const origin = 'http://10.96.0.1:80';
  const resolver: Resolver = { start: () => {} };
  for (const target of [`dns+srv:///${SRV}.`, 'dns:///apiserver.example.test:80', 'kubernetes:///default/kubernetes', resolver, ['static:///127.0.0.2:80', 'dns:///apiserver.example.test:80']]) {
    const error = t.throws(() => createBalancer({ origin, target, probe: false }), { instanceOf: BalancerError });
    t.is(error.code, 'ERR_INVALID_OPTION');
    t.regex(error.message, /^options\.origin must use https: to use .*; use an https: origin, list the endpoints with static:\/\/\/ instead, or opt in with tls\.allowUnverifiedDiscovered: true; got "http:\/\/10\.96\.0\.1"$/);
  }
  // The origin may come from bootstrap.server, and is refused the same.
  t.throws(() => createBalancer({ target: 'kubernetes:///default/kubernetes', bootstrap: { server: origin }, probe: false }), { message: /^options\.origin must use https:/ });
  for (const target of ['static:///127.0.0.2:80', [{ address: '127.0.0.2', port: 80 }]]) void createBalancer({ origin, target, probe: false }).close();
  void createBalancer({ origin, target: 'dns:///apiserver.example.test:80', tls: { allowUnverifiedDiscovered: true }, probe: false }).close();
  t.pass();
});

test.serial('dns: behind an http: origin: refused without the opt-in (no query sent, no token sent); with it, the named address gets the request', async (t) => {
  const seen: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.end('{"kind":"NamespaceList","items":[]}');
  });
  server.listen(0, '127.0.0.2');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const dns = await DnsTestServer.start();
  dns.add({ name: 'apiserver.example.test', type: 'A', ttl: 60, data: '127.0.0.2' });
  const origin = `http://apiserver.example.test:${port}`;
  const options = { origin, target: `dns:///apiserver.example.test:${port}`, dns: { servers: [dns.address] }, probe: false, hedge: false } as const;
  const headers = { authorization: 'Bearer secret' };
  try {
    t.throws(() => createBalancer(options), { instanceOf: BalancerError, message: /^options\.origin must use https: to use target "dns:/ });
    t.is(dns.queries().length, 0, 'nothing was discovered');
    t.deepEqual(seen, []);

    const balancer = createBalancer({ ...options, tls: { allowUnverifiedDiscovered: true } });
    try {
      await balancer.ready();
      const res = await request(`${origin}/api/v1/namespaces`, { dispatcher: balancer, headers });
      t.is(res.statusCode, 200);
      await res.body.dump();
      t.deepEqual(seen, ['Bearer secret'], 'opted in: the address DNS named got the request and its token');
    } finally {
      await balancer.close();
    }
  } finally {
    await dns.close();
    server.closeAllConnections();
    server.close();
  }
});
