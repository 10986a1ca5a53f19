// A balancer on a dns+srv: target, against the embedded DNS server: discovery end to end, with
// real HTTPS servers, TLS verified by name. (The same against dnsmasq is in dnsmasq.test.ts.)
import test from 'ava';
import * as undici from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { startServers } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { until } from '../helpers/poll.ts';

const SRV = '_https._tcp.kubernetes-headless.default.svc.cluster.local';

// Serial: the other test of this file opens sockets of its own, which would count as leaks.
test.serial('createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target: "dns+srv:///…", dns: { servers } }) finds the servers, balances, reports, and leaks nothing', async (t) => {
  const baseline = activeResources();
  const dns = await DnsTestServer.start();
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  for (const [i, s] of servers.entries()) {
    dns.add(
      { name: SRV, type: 'SRV', ttl: 5, data: { priority: 0, weight: 33, port: s.port, target: `10-0-0-${i}.kubernetes-headless.default.svc.cluster.local` } },
      { name: `10-0-0-${i}.kubernetes-headless.default.svc.cluster.local`, type: 'A', ttl: 5, data: s.host },
    );
  }
  const balancer = createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target: `dns+srv:///${SRV}.`, dns: { servers: [dns.address] }, tls: { ca: certs.ca } });
  const errors: Error[] = [];
  balancer.on('resolver-error', (e) => errors.push(e));
  try {
    await balancer.ready();
    t.deepEqual(
      balancer.endpoints().map((e) => [e.address, e.port, e.priority, e.weight]),
      servers.map((s) => [s.host, s.port, 0, 33]),
    );
    for (let i = 0; i < 30; i++) {
      const res = await undici.request(`https://${APISERVER_NAME}:6443/version`, { dispatcher: balancer });
      t.is(res.statusCode, 200);
      await res.body.dump();
    }
    t.true(
      servers.every((s) => s.requests.length > 0),
      'every server found through DNS gets requests',
    );
    // The zone drops one server; within TTL (5 s) + 1 s the balancer stops using it.
    dns.remove(SRV).add(
      ...servers.slice(0, 2).map((s, i) => ({ name: SRV, type: 'SRV' as const, ttl: 5, data: { priority: 0, weight: 50, port: s.port, target: `10-0-0-${i}.kubernetes-headless.default.svc.cluster.local` } })),
    );
    await until(() => balancer.endpoints().length === 2, { timeoutMs: 6000, what: 'the removal to reach the balancer within TTL + 1 s' });
    const before = servers[2]!.requests.length;
    for (let i = 0; i < 20; i++) await (await undici.request(`https://${APISERVER_NAME}:6443/version`, { dispatcher: balancer })).body.dump();
    t.is(servers[2]!.requests.length, before);
    t.deepEqual(errors, []);
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
    await dns.close();
  }
  t.deepEqual(await leftOver(baseline), {});
});

test('a DNS failure before any answer fails ready() with ERR_NO_ENDPOINTS and the DNS error as cause', async (t) => {
  const dns = await DnsTestServer.start();
  dns.rule({ action: { rcode: 5 } });
  const balancer = createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target: `dns+srv:///${SRV}.`, dns: { servers: [dns.address], attempts: 1 }, tls: { ca: certs.ca } });
  try {
    const error = await t.throwsAsync(balancer.ready());
    t.is((error as { code?: string }).code, 'ERR_NO_ENDPOINTS');
    t.regex(String((error as Error & { cause?: Error }).cause?.message), /REFUSED/);
  } finally {
    await balancer.close();
    await dns.close();
  }
});
