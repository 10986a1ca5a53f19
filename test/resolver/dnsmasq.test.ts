// Discovery against a real DNS server: dnsmasq, started per test on a free loopback port. A missing
// dnsmasq fails these tests with the package to install; they are never skipped.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import * as undici from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { Dnsmasq, leftoverDnsmasq, type DnsmasqConfig } from '../../fixtures/dnsmasq/Dnsmasq.ts';
import { startServers } from '../../fixtures/server/TestServer.ts';
import { systemClock } from '../../src/clock.ts';
import { dnsCacheDefaults } from '../../src/dns/DnsCache.ts';
import { parseNameServer } from '../../src/dns/ResolvConf.ts';
import { createBalancer, type Balancer } from '../../src/index.ts';
import type { DnsResolver } from '../../src/resolver/DnsResolver.ts';
import { createResolver } from '../../src/resolver/parseTarget.ts';
import { dnsClient } from '../helpers/dns.ts';
import { until } from '../helpers/poll.ts';

const SRV = '_https._tcp.api.test';

async function withDnsmasq(config: DnsmasqConfig, run: (dnsmasq: Dnsmasq) => Promise<void>): Promise<void> {
  const dnsmasq = await Dnsmasq.start(config);
  try {
    await run(dnsmasq);
  } finally {
    await dnsmasq.stop();
  }
}

function balancerOn(dnsmasq: Dnsmasq, target: string): Balancer {
  return createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target, dns: { servers: [dnsmasq.address] }, tls: { ca: certs.ca }, hedge: false }); // exact request counts
}

const view = (b: Balancer): string[] => b.endpoints().map((e) => `${e.address}:${e.port} p${e.priority} w${e.weight}`);

test.serial('SRV with two priorities and different weights, addresses from the A glue', async (t) => {
  await withDnsmasq(
    {
      zone: 'api.test',
      ttl: 30,
      srv: [
        { name: SRV, target: 'node1.api.test', port: 6443, priority: 10, weight: 60 },
        { name: SRV, target: 'node2.api.test', port: 6443, priority: 10, weight: 30 },
        { name: SRV, target: 'node3.api.test', port: 7443, priority: 20, weight: 5 },
      ],
      hostRecords: [
        { name: 'node1.api.test', address: '127.0.0.11' },
        { name: 'node2.api.test', address: '127.0.0.12' },
        { name: 'node3.api.test', address: '127.0.0.13' },
      ],
    },
    async (dnsmasq) => {
      const balancer = balancerOn(dnsmasq, `dns+srv:///${SRV}.`);
      try {
        await balancer.ready();
        t.deepEqual(view(balancer), ['127.0.0.11:6443 p10 w60', '127.0.0.12:6443 p10 w30', '127.0.0.13:7443 p20 w5']);
        t.deepEqual(dnsmasq.queries(), [`SRV ${SRV}`], 'the glue was used: no A/AAAA queries');
      } finally {
        await balancer.close();
      }
    },
  );
});

test.serial('A/AAAA changes through --hostsdir reach the balancer within TTL + 1 s', async (t) => {
  // The TTL is at least dns.minTtl (5 s), which would raise a shorter one.
  const ttl = 5;
  await withDnsmasq({ zone: 'api.test', ttl, hosts: { 'apiservers.api.test': ['127.0.0.11', '127.0.0.12'] } }, async (dnsmasq) => {
    const balancer = balancerOn(dnsmasq, 'dns:///apiservers.api.test.:6443');
    try {
      await balancer.ready();
      t.deepEqual(view(balancer), ['127.0.0.11:6443 p0 w1', '127.0.0.12:6443 p0 w1']);
      for (const next of [['127.0.0.12', '127.0.0.13', '::1'], ['127.0.0.13']]) {
        const changedAt = Date.now();
        dnsmasq.writeHosts({ 'apiservers.api.test': next });
        const expected = next.map((a) => `${a}:6443 p0 w1`).sort();
        await until(() => JSON.stringify(view(balancer).sort()) === JSON.stringify(expected), { timeoutMs: 15_000, what: `the balancer to reach ${next.join(', ')}` });
        const took = Date.now() - changedAt;
        t.log(`took ${took} ms`);
        t.true(took <= (ttl + 1) * 1000, `took ${took} ms`);
      }
    } finally {
      await balancer.close();
    }
  });
});

test.serial('an SRV change (dnsmasq restarted on the same port) reaches the balancer within TTL + 1 s', async (t) => {
  // At least dns.minTtl (5 s), which would raise a shorter TTL.
  const ttl = 5;
  const config = (targets: string[]): DnsmasqConfig => ({
    zone: 'api.test',
    ttl,
    srv: targets.map((target) => ({ name: SRV, target, port: 6443, weight: 10 })),
    hostRecords: ['node1', 'node2', 'node3'].map((n, i) => ({ name: `${n}.api.test`, address: `127.0.0.1${i + 1}` })),
  });
  await withDnsmasq(config(['node1.api.test', 'node2.api.test']), async (dnsmasq) => {
    const balancer = balancerOn(dnsmasq, `dns+srv:///${SRV}.`);
    try {
      await balancer.ready();
      t.deepEqual(view(balancer), ['127.0.0.11:6443 p0 w10', '127.0.0.12:6443 p0 w10']);
      await dnsmasq.restart(config(['node2.api.test', 'node3.api.test']));
      // The change happens once dnsmasq answers again; the restart itself is no part of the bound.
      const changedAt = Date.now();
      await until(() => view(balancer).join() === '127.0.0.12:6443 p0 w10,127.0.0.13:6443 p0 w10', { timeoutMs: 15_000, what: 'the restarted dnsmasq\'s records' });
      const took = Date.now() - changedAt;
      t.log(`took ${took} ms`);
      t.true(took <= (ttl + 1) * 1000, `took ${took} ms`);
    } finally {
      await balancer.close();
    }
  });
});

test.serial('an answer too big for UDP comes back truncated and is fetched over TCP', async (t) => {
  const hostRecords = Array.from({ length: 100 }, (_, i) => ({ name: 'big.api.test', address: `127.0.1.${i + 1}` }));
  await withDnsmasq({ zone: 'api.test', ttl: 30, hostRecords }, async (dnsmasq) => {
    const answer = await dnsClient([dnsmasq]).query('big.api.test.', 'A');
    t.is(answer.transport, 'tcp');
    t.is(answer.addresses.length, 100);
  });
});

test.serial('end to end: three HTTPS servers found through SRV; all used; a removed record gets no request once the TTL has passed', async (t) => {
  // At least dns.minTtl (5 s), which would raise a shorter TTL.
  const ttl = 5;
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  const config = (count: number): DnsmasqConfig => ({
    zone: 'api.test',
    ttl,
    srv: servers.slice(0, count).map((s, i) => ({ name: SRV, target: `node${i + 1}.api.test`, port: s.port, weight: 33 })),
    hostRecords: servers.map((s, i) => ({ name: `node${i + 1}.api.test`, address: s.host })),
  });
  try {
    await withDnsmasq(config(3), async (dnsmasq) => {
      const balancer = balancerOn(dnsmasq, `dns+srv:///${SRV}.`);
      const send = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) {
          const res = await undici.request(`https://${APISERVER_NAME}:6443/api/v1/namespaces?i=${i}`, { dispatcher: balancer });
          t.is(res.statusCode, 200);
          await res.body.dump();
        }
      };
      try {
        await send(300);
        t.true(
          servers.every((s) => s.requests.length > 0),
          `every server used: ${servers.map((s) => s.requests.length).join('/')}`,
        );
        t.is(
          servers.reduce((n, s) => n + s.requests.length, 0),
          300,
        );
        await dnsmasq.restart(config(2));
        const removedAt = Date.now();
        const removed = (): boolean => !balancer.endpoints().some((e) => e.port === servers[2]!.port);
        // Requests keep flowing while the change propagates; any of them may still reach the third.
        while (!removed() && Date.now() - removedAt <= (ttl + 1) * 1000) await send(5);
        t.deepEqual(
          balancer.endpoints().map((e) => e.port),
          servers.slice(0, 2).map((s) => s.port),
        );
        const third = servers[2]!.requests.length;
        await send(300);
        t.is(servers[2]!.requests.length, third, 'no new request to the removed server');
      } finally {
        await balancer.close();
      }
    });
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
});

test.serial('no search line in resolv.conf: a short name is looked up in the host name\'s domain, as glibc does', async (t) => {
  await withDnsmasq({ zone: 'api.test', ttl: 30, hosts: { 'apiservers.api.test': ['127.0.0.11'] } }, async (dnsmasq) => {
    const dir = mkdtempSync(join(tmpdir(), 'resolv-'));
    writeFileSync(join(dir, 'resolv.conf'), 'nameserver 192.0.2.1\nsearch\noptions attempts:1\n');
    const resolver = createResolver('dns:///apiservers:6443', {
      clock: systemClock,
      dns: { ...dnsCacheDefaults, servers: [parseNameServer(dnsmasq.address)!] },
      resolvConf: join(dir, 'resolv.conf'),
      hostname: 'node0.api.test',
    }) as DnsResolver;
    const sets: string[][] = [];
    resolver.start({ endpoints: (set) => sets.push(set.map((e) => `${e.address}:${e.port}`)), error: () => {} });
    try {
      await resolver.settled();
      t.deepEqual(sets, [['127.0.0.11:6443']]);
      t.is(dnsmasq.queries()[0], 'A apiservers.api.test', 'the domain of node0.api.test, first (no dot in the name)');
    } finally {
      await resolver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test.serial('addresses DNS lists that are never dialled (link-local, multicast, broadcast) reach no balancer; a warning says so', async (t) => {
  const hosts = { 'apiservers.api.test': ['127.0.0.11', '169.254.0.7', '224.0.0.7', '255.255.255.255', 'fe80::7', '::1'] };
  await withDnsmasq({ zone: 'api.test', ttl: 30, hosts }, async (dnsmasq) => {
    const balancer = balancerOn(dnsmasq, 'dns:///apiservers.api.test.:6443');
    const warnings: string[] = [];
    balancer.on('warning', (w) => warnings.push(w));
    try {
      await balancer.ready();
      t.deepEqual(view(balancer).sort(), ['127.0.0.11:6443 p0 w1', '::1:6443 p0 w1']);
      await until(() => warnings.length > 0, { what: 'the warning' });
      t.regex(warnings[0]!, /never dialled, left out: .*169\.254\.0\.7 \(link-local\)/);
      t.regex(warnings[0]!, /fe80::7 \(link-local\)/);
    } finally {
      await balancer.close();
    }
  });
});

test.serial('the harness starts dnsmasq and stops it by PID', async (t) => {
  const dnsmasq = await Dnsmasq.start({ zone: 'api.test' });
  const pid = dnsmasq.pid!;
  t.notThrows(() => process.kill(pid, 0), 'running');
  await dnsmasq.stop();
  t.throws(() => process.kill(pid, 0), undefined, 'gone');
});

test.after.always('no dnsmasq process is left behind', (t) => {
  t.deepEqual(leftoverDnsmasq(), []);
});
