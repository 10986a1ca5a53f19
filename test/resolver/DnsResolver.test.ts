import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { DnsCache, dnsCacheDefaults } from '../../src/dns/DnsCache.ts';
import { DnsError } from '../../src/dns/DnsError.ts';
import { DnsResolver } from '../../src/resolver/DnsResolver.ts';
import { srvLookup } from '../../src/resolver/dnsLookups.ts';
import { createResolver } from '../../src/resolver/parseTarget.ts';
import type { EndpointAddress } from '../../src/resolver/Resolver.ts';
import { dnsClient, nameServerOf, resolverOf, withResolver } from '../helpers/dns.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { until } from '../helpers/poll.ts';

const SRV = '_https._tcp.api.test';

function srv(server: DnsTestServer, target: string, port: number, priority = 0, weight = 10, ttl = 30): void {
  server.add({ name: SRV, type: 'SRV', ttl, data: { priority, weight, port, target } });
}

test('dns+srv: one endpoint per SRV record, address from glue, with priority, weight, TTL and source', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      srv(s, 'node1.api.test', 6443, 10, 60);
      srv(s, 'node2.api.test', 6443, 10, 40);
      srv(s, 'node3.api.test', 7443, 20, 0);
      s.add(
        { name: 'node1.api.test', type: 'A', ttl: 20, data: '127.0.0.11' },
        { name: 'node2.api.test', type: 'A', data: '127.0.0.12' },
        { name: 'node3.api.test', type: 'A', data: '127.0.0.13' },
      );
    },
    (h) => {
      t.deepEqual(h.sets, [
        [
          { address: '127.0.0.11', port: 6443, priority: 10, weight: 60, ttl: 20, source: 'dns+srv' },
          { address: '127.0.0.12', port: 6443, priority: 10, weight: 40, ttl: 20, source: 'dns+srv' },
          { address: '127.0.0.13', port: 7443, priority: 20, weight: 0, ttl: 20, source: 'dns+srv' },
        ],
      ]);
      t.deepEqual(
        h.server.log.map((q) => q.type),
        ['SRV'],
        'glue: no A/AAAA queries',
      );
      t.deepEqual(h.errors, []);
    },
  );
});

test('dns+srv without glue: A and AAAA of each target in parallel; a dual-stack target counts once, IPv4 first', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      s.glue = false;
      srv(s, 'dual.api.test', 6443);
      srv(s, 'v6.api.test', 6443);
      srv(s, 'gone.api.test', 6443);
      s.add(
        { name: 'dual.api.test', type: 'AAAA', data: '::1' },
        { name: 'dual.api.test', type: 'A', data: '127.0.0.12' },
        { name: 'dual.api.test', type: 'A', data: '127.0.0.11' },
        { name: 'v6.api.test', type: 'AAAA', data: '::1' },
      );
    },
    (h) => {
      t.deepEqual(h.last(), ['127.0.0.11:6443/0/10', '::1:6443/0/10']);
      t.is(h.server.queries(undefined, 'A').length, 3);
      t.is(h.server.queries(undefined, 'AAAA').length, 3);
      t.deepEqual(h.errors, [], 'a target without addresses is left out, it is no failure');
    },
  );
});

test('SRV records sharing a target: its A and AAAA are asked once (merged lookups)', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      s.glue = false;
      for (const port of [6443, 6444, 6445, 6446]) srv(s, 'node.api.test', port);
      s.add({ name: 'node.api.test', type: 'A', data: '127.0.0.11' });
      s.rule({ name: 'node.api.test', action: { delay: 30 } });
    },
    (h) => {
      t.is(h.last().length, 4);
      t.is(h.server.queries('node.api.test', 'A').length, 1);
      t.is(h.server.queries('node.api.test', 'AAAA').length, 1);
    },
  );
});

test('a lone SRV target "." means no service: an error, and no endpoints', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => srv(s, '.', 0),
    (h) => {
      t.deepEqual(h.sets, []);
      t.is(h.errors.length, 1);
      t.regex(h.errors[0]!.message, /no service/);
    },
  );
});

test('dns: every A and AAAA address, on the target port', async (t) => {
  await withResolver(
    'dns:///apiservers.api.test.:6443',
    (s) => {
      s.add(
        { name: 'apiservers.api.test', type: 'A', ttl: 5, data: '127.0.0.12' },
        { name: 'apiservers.api.test', type: 'A', ttl: 5, data: '127.0.0.11' },
        { name: 'apiservers.api.test', type: 'AAAA', ttl: 7, data: '::1' },
      );
    },
    (h) => {
      t.deepEqual(h.sets, [
        [
          { address: '127.0.0.11', port: 6443, ttl: 5, source: 'dns' },
          { address: '127.0.0.12', port: 6443, ttl: 5, source: 'dns' },
          { address: '::1', port: 6443, ttl: 5, source: 'dns' },
        ],
      ]);
    },
  );
});

test('refresh ahead of expiry through the clock; a set is handed on only when it changed', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      srv(s, 'node1.api.test', 6443, 0, 10, 10);
      srv(s, 'node2.api.test', 6443, 0, 10, 10);
      s.add({ name: 'node1.api.test', type: 'A', ttl: 10, data: '127.0.0.11' }, { name: 'node2.api.test', type: 'A', ttl: 10, data: '127.0.0.12' });
    },
    async (h) => {
      t.is(h.sets.length, 1);
      // Same records in another order, and another TTL: no update.
      h.server.records.reverse();
      for (const r of h.server.records) r.ttl = 11;
      h.clock.advance(9800); // 98 %: at the latest
      await h.resolver.settled();
      t.is(h.server.log.length, 2, 'refreshed before the 10 s TTL ran out');
      t.is(h.sets.length, 1);
      // A weight change is a change.
      h.server.set(SRV, 'SRV', [
        { name: SRV, type: 'SRV', ttl: 10, data: { priority: 0, weight: 50, port: 6443, target: 'node1.api.test' } },
        { name: SRV, type: 'SRV', ttl: 10, data: { priority: 0, weight: 10, port: 6443, target: 'node2.api.test' } },
      ]);
      h.clock.advance(11_000);
      await h.resolver.settled();
      t.is(h.sets.length, 2);
      t.deepEqual(h.last(), ['127.0.0.11:6443/0/50', '127.0.0.12:6443/0/10']);
      // A removed record is a change.
      h.server.remove('node2.api.test');
      h.server.set(SRV, 'SRV', [{ name: SRV, type: 'SRV', ttl: 10, data: { priority: 0, weight: 50, port: 6443, target: 'node1.api.test' } }]);
      h.clock.advance(11_000);
      await h.resolver.settled();
      t.deepEqual(h.last(), ['127.0.0.11:6443/0/50']);
      t.deepEqual(h.errors, []);
    },
  );
});

test('an outage (SERVFAIL) keeps the set, reports errors, warns once about stale data, and recovers', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      srv(s, 'node1.api.test', 6443, 0, 10, 10);
      s.add({ name: 'node1.api.test', type: 'A', ttl: 10, data: '127.0.0.11' });
    },
    async (h) => {
      h.server.rule({ action: { rcode: 2 } });
      for (let i = 0; i < 120; i++) {
        h.clock.advance(1000);
        await h.resolver.settled();
      }
      t.is(h.sets.length, 1, 'two minutes of SERVFAIL: the set never changed');
      t.true(h.errors.length >= 4 && h.errors.every((e) => e instanceof DnsError && e.reason === 'SERVFAIL'), `${h.errors.length} errors`);
      t.true(h.server.log.length <= 12, `retries back off: ${h.server.log.length} queries in 120 s`);
      t.is(h.warnings.filter((w) => /past its TTL/.test(w)).length, 1);
      h.server.rules.length = 0;
      h.server.set('node1.api.test', 'A', [{ name: 'node1.api.test', type: 'A', ttl: 10, data: '127.0.0.21' }]);
      h.clock.advance(31_000);
      await h.resolver.settled();
      t.deepEqual(h.last(), ['127.0.0.21:6443/0/10']);
    },
  );
});

test('NXDOMAIN after a good answer keeps the set for maxStale with a warning, then reports it empty', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      srv(s, 'node1.api.test', 6443, 0, 10, 5);
      s.add({ name: 'node1.api.test', type: 'A', ttl: 5, data: '127.0.0.11' });
      s.soa = { ttl: 5, minimum: 5 };
    },
    async (h) => {
      h.server.records = [];
      h.clock.advance(5000);
      await h.resolver.settled();
      t.is(h.sets.length, 1);
      t.is(h.warnings.length, 1);
      t.regex(h.warnings[0]!, /NXDOMAIN.*keeping the last 1 endpoint\(s\) for up to 60 s/);
      for (let i = 0; i < 11; i++) {
        h.clock.advance(5000);
        await h.resolver.settled();
      }
      t.is(h.sets.length, 1, 'still the last good set after 55 s');
      h.clock.advance(5000);
      await h.resolver.settled();
      t.deepEqual(h.sets.at(-1), []);
      t.regex(h.warnings.at(-1)!, /now empty/);
      t.deepEqual(h.errors, [], 'NXDOMAIN is an answer, not a failure');
    },
    { maxStale: 60_000 },
  );
});

test('NODATA before any good answer is reported as an error, once', async (t) => {
  await withResolver(
    'dns:///nothing.api.test.:443',
    (s) => s.add({ name: 'nothing.api.test', type: 'TXT', data: 'x' }),
    async (h) => {
      h.clock.advance(10_000);
      await h.resolver.settled();
      t.deepEqual(h.sets, []);
      t.is(h.errors.length, 1);
      t.is((h.errors[0] as DnsError).reason, 'NODATA');
    },
  );
});

test('refresh() re-resolves at once, bypassing the cache, and at most once a second', async (t) => {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      srv(s, 'node1.api.test', 6443, 0, 10, 300);
      s.add({ name: 'node1.api.test', type: 'A', ttl: 300, data: '127.0.0.11' });
    },
    async (h) => {
      t.is(h.server.log.length, 1);
      h.clock.advance(1000);
      await h.resolver.resolveNow();
      t.is(h.server.log.length, 2, 'a fresh answer is asked again');
      const second = h.resolver.resolveNow();
      h.resolver.refresh();
      h.resolver.refresh();
      await sleep(50); // time for a query to reach the server, were one sent
      t.is(h.server.log.length, 2, 'not within a second of the last query');
      h.clock.advance(999);
      t.is(h.server.log.length, 2);
      h.clock.advance(1);
      await second;
      t.is(h.server.log.length, 3, 'three refresh() calls, one query');
    },
  );
});

test('resolv.conf gives the search list and ndots; options.dns.servers replaces only its name servers', async (t) => {
  const server = await DnsTestServer.start();
  server.add({ name: 'apiservers.api.test', type: 'A', data: '127.0.0.11' });
  const dir = mkdtempSync(join(tmpdir(), 'resolv-'));
  writeFileSync(join(dir, 'resolv.conf'), 'nameserver 192.0.2.1\nsearch other.test api.test\noptions ndots:2 attempts:1\n');
  const resolver = createResolver('dns:///apiservers:6443', {
    clock: new FakeClock(),
    dns: { ...dnsCacheDefaults, servers: [nameServerOf(server)] },
    resolvConf: join(dir, 'resolv.conf'),
  }) as DnsResolver;
  const sets: Array<readonly EndpointAddress[]> = [];
  resolver.start({ endpoints: (s) => sets.push(s), error: () => {} });
  await resolver.settled();
  t.deepEqual(sets, [[{ address: '127.0.0.11', port: 6443, ttl: 30, source: 'dns' }]]);
  t.deepEqual(
    [...new Set(server.log.map((q) => q.name))],
    ['apiservers.other.test', 'apiservers.api.test', 'apiservers'],
    'A stops at the first positive answer; AAAA goes on through NODATA (glibc)',
  );
  await resolver.close();
  await server.close();
});

// Serial: other tests of this file open sockets of their own, which would count as leaks.
test.serial('close() ends a query under way and leaves no socket or timer behind', async (t) => {
  const baseline = activeResources();
  const server = await DnsTestServer.start();
  server.rule({ action: { drop: true } });
  const resolver = resolverOf(`dns+srv:///${SRV}.`, server, new FakeClock());
  resolver.start({ endpoints: () => t.fail(), error: () => {} });
  await until(() => server.log.length === 1, { what: 'the query to reach the server' });
  await resolver.close();
  await server.close();
  t.deepEqual(await leftOver(baseline), {});
});

test('a listener that throws does not stop the refresher', async (t) => {
  const server = await DnsTestServer.start();
  srv(server, 'node1.api.test', 6443, 0, 10, 1);
  server.add({ name: 'node1.api.test', type: 'A', ttl: 1, data: '127.0.0.11' });
  const clock = new FakeClock();
  const resolver = resolverOf(`dns+srv:///${SRV}.`, server, clock);
  let calls = 0;
  resolver.start({
    endpoints: () => {
      calls++;
      throw new Error('listener bug');
    },
    error: () => {},
  });
  await resolver.settled();
  server.set('node1.api.test', 'A', [{ name: 'node1.api.test', type: 'A', ttl: 1, data: '127.0.0.12' }]);
  clock.advance(5000);
  await resolver.settled();
  t.is(calls, 2);
  await resolver.close();
  await server.close();
});

/** `count` SRV targets t0…t{count-1}.api.test (SRV TTL 5 s), each with one A record of `addressTtl`. */
function addTargets(s: DnsTestServer, count: number, addressTtl: number): void {
  for (let i = 0; i < count; i++) {
    srv(s, `t${i}.api.test`, 6443, 0, 1, 5);
    s.add({ name: `t${i}.api.test`, type: 'A', ttl: addressTtl, data: `127.1.${i >> 8}.${i & 255}` });
  }
}

// Serial: 600 targets cost a few thousand real queries; alone they do not crowd out the other tests.
test.serial('a DNS outage never shrinks a large SRV set: 600 targets, SERVFAIL from mid-round on, for longer than the 5 s TTLs', async (t) => {
  t.timeout(120_000);
  const targets = 600;
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      // No glue: each target costs an A and an AAAA answer, 1,201 answers in all (issue 12, item 9).
      s.glue = false;
      s.soa = { ttl: 5, minimum: 5 }; // the AAAA NODATA answers live as long as the rest
      addTargets(s, targets, 5);
    },
    async (h) => {
      t.is(h.sets.at(-1)?.length, targets);
      // The outage starts in the middle of the next round: its SRV answer and 88 A answers get through.
      h.server.rule({ type: 'SRV', times: 2, action: {} }); // truncated over UDP, then over TCP
      h.server.rule({ type: 'A', times: 88, action: {} });
      h.server.rule({ action: { rcode: 2 } });
      const before = h.server.log.length;
      for (let i = 0; i < 4; i++) {
        h.clock.advance(3000);
        await h.resolver.settled();
      }
      t.true(h.errors.length > 0, 'the outage was seen');
      t.true(h.server.log.length - before > targets, `the targets were asked again (${h.server.log.length - before} queries)`);
      t.deepEqual(
        h.sets.map((set) => set.length),
        [targets],
        'no smaller set was ever handed on',
      );
    },
  );
});

test.serial('600 SRV targets fit the answer cache: a short SRV TTL does not make every target be asked again', async (t) => {
  t.timeout(120_000);
  const targets = 600;
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      s.glue = false;
      s.soa = { ttl: 60, minimum: 60 };
      addTargets(s, targets, 60);
    },
    async (h) => {
      const first = h.server.log.length;
      t.is(first, 2 + 2 * targets, 'SRV over UDP (truncated) and TCP, an A and an AAAA per target');
      for (let i = 0; i < 30; i++) {
        h.clock.advance(1000);
        await h.resolver.settled();
      }
      // The SRV answer is refreshed every 3.75–4.5 s, the targets' not before 45 s. A cache smaller
      // than the set evicts, at every round, the answers that the same round then asks for again.
      const srvQueries = h.server.queries(undefined, 'SRV').length;
      t.true(srvQueries >= 12, `${srvQueries} SRV queries`);
      t.is(h.server.log.length - srvQueries, 2 * targets, 'no target was asked again');
      t.deepEqual(
        h.sets.map((set) => set.length),
        [targets],
      );
    },
  );
});

test('a failure never shrinks the set even when it outgrows the answer cache', async (t) => {
  const server = await DnsTestServer.start();
  server.glue = false;
  for (let i = 0; i < 20; i++) {
    srv(server, `t${i}.api.test`, 6443, 0, 1, 5);
    server.add({ name: `t${i}.api.test`, type: 'A', ttl: 5, data: `127.1.0.${i}` });
  }
  const clock = new FakeClock();
  // 41 answers, room for 10: each round loses most of them, yet the set must stay whole.
  const cache = new DnsCache(dnsClient([server], { attempts: 1, timeout: 1000 }, clock), clock, dnsCacheDefaults, Math.random, 10);
  const resolver = new DnsResolver(srvLookup(`${SRV}.`), { clock, cache, maxStale: dnsCacheDefaults.maxStale, target: SRV });
  const sets: number[] = [];
  resolver.start({ endpoints: (set) => sets.push(set.length), error: () => {} });
  try {
    await resolver.settled();
    // The outage starts in the middle of a round: the SRV answer and 5 A answers get through.
    server.rule({ type: 'SRV', times: 1, action: {} });
    server.rule({ type: 'A', times: 5, action: {} });
    server.rule({ action: { rcode: 2 } });
    for (let i = 0; i < 12; i++) {
      clock.advance(1000);
      await resolver.settled();
    }
    t.true(server.queries(undefined, 'A').length > 20, 'the targets were asked again');
    t.deepEqual(sets, [20]);
  } finally {
    await resolver.close();
    await server.close();
  }
});

test('unusable addresses from DNS (unspecified, link-local, multicast, broadcast, reserved) are left out with one warning; loopback and private ones stay', async (t) => {
  const bad = ['0.0.0.0', '169.254.10.1', '224.0.0.1', '255.255.255.255', '240.0.0.1'];
  await withResolver(
    `dns+srv:///${SRV}.`,
    (s) => {
      bad.forEach((address, i) => {
        srv(s, `bad${i}.api.test`, 6443);
        s.add({ name: `bad${i}.api.test`, type: 'A', data: address });
      });
      for (const [i, address] of ['::', 'fe80::1', 'ff02::1', '::ffff:169.254.0.1'].entries()) {
        srv(s, `bad6-${i}.api.test`, 6443);
        s.add({ name: `bad6-${i}.api.test`, type: 'AAAA', data: address });
      }
      srv(s, 'loop.api.test', 6443);
      s.add({ name: 'loop.api.test', type: 'A', data: '127.0.0.11' });
      srv(s, 'private.api.test', 6443);
      s.add({ name: 'private.api.test', type: 'A', data: '10.0.0.1' });
      // Dual-stack with a link-local IPv4: its IPv6 address is used instead.
      srv(s, 'dual.api.test', 6443);
      s.add({ name: 'dual.api.test', type: 'A', data: '169.254.0.9' }, { name: 'dual.api.test', type: 'AAAA', data: 'fd00::9' });
    },
    async (h) => {
      t.deepEqual(h.last(), ['10.0.0.1:6443/0/10', '127.0.0.11:6443/0/10', 'fd00::9:6443/0/10']);
      const warnings = h.warnings.filter((w) => /never dialled/.test(w));
      t.is(warnings.length, 1);
      t.regex(warnings[0]!, /0\.0\.0\.0 \(unspecified\)/);
      t.regex(warnings[0]!, /and \d+ more/);
      t.deepEqual(h.errors, []);
      h.clock.advance(31_000);
      await h.resolver.settled();
      t.is(h.warnings.filter((w) => /never dialled/.test(w)).length, 1, 'the same listing is not warned about again');
    },
  );
});

test('dns: a name whose only addresses are unusable is no endpoint set', async (t) => {
  await withResolver(
    'dns:///blocked.api.test.:6443',
    (s) => s.add({ name: 'blocked.api.test', type: 'A', data: '0.0.0.0' }),
    (h) => {
      t.deepEqual(h.sets, []);
      t.is(h.errors.length, 1);
      t.regex(h.errors[0]!.message, /no usable address/);
      t.true(h.warnings.some((w) => /0\.0\.0\.0 \(unspecified\)/.test(w)));
    },
  );
});

test('refresh() after a failure is spread over dns.minTtl: a fleet that fails at once does not ask DNS in the same second', async (t) => {
  const server = await DnsTestServer.start();
  srv(server, 'node1.api.test', 6443, 0, 10, 5);
  server.add({ name: 'node1.api.test', type: 'A', ttl: 5, data: '127.0.0.11' });
  const clock = new FakeClock(0);
  let seed = 11;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  /** Queries sent per second of the fake clock. */
  const perSecond = new Array<number>(60).fill(0);
  const client = dnsClient([server], { attempts: 1, timeout: 1000 }, clock);
  const counting = { query: (...args: Parameters<typeof client.query>) => (perSecond[Math.floor(clock.now() / 1000)]!++, client.query(...args)) };
  const clients = 100;
  const resolvers: DnsResolver[] = [];
  const step = async (ms: number): Promise<void> => {
    clock.advance(ms);
    await Promise.all(resolvers.map(async (r) => r.settled()));
  };
  try {
    // Clients started at different times, as a fleet's do: their TTL refreshes are out of step.
    for (let i = 0; i < clients; i++) {
      const cache = new DnsCache(counting, clock, dnsCacheDefaults, random);
      const resolver = new DnsResolver(srvLookup(`${SRV}.`), { clock, cache, maxStale: dnsCacheDefaults.maxStale, target: SRV, random });
      resolvers.push(resolver);
      resolver.start({ endpoints: () => {}, error: () => {} });
      await step(50);
    }
    while (clock.now() < 30_000) await step(100);
    const before = perSecond.slice(10, 30).reduce((a, b) => a + b, 0);
    // An apiserver crashed: every client's connections to it fail in the same second.
    for (const resolver of resolvers) resolver.refresh();
    while (clock.now() < 60_000) await step(100);
    const mean = perSecond.slice(10).reduce((a, b) => a + b, 0) / 50;
    const peak = Math.max(...perSecond.slice(30));
    t.true(peak <= 3 * mean, `busiest second ${peak} queries, mean ${mean}: ${perSecond.slice(28, 45).join(' ')}`);
    // Each client asked once more for the failure at most (its round inside the TTL window may carry it).
    const after = perSecond.slice(30, 60).reduce((a, b) => a + b, 0);
    t.true(after <= (before * 30) / 20 + clients, `${after} queries in the 30 s after, ${before} in the 20 s before`);
    t.true(perSecond.slice(30, 36).reduce((a, b) => a + b, 0) >= clients, 'every client asked again within dns.minTtl');
  } finally {
    await Promise.all(resolvers.map(async (r) => r.close()));
    await server.close();
  }
});
