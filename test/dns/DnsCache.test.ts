import test from 'ava';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { DnsCache, dnsCacheDefaults, type DnsCacheOptions } from '../../src/dns/DnsCache.ts';
import { dnsClient } from '../helpers/dns.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { until } from '../helpers/poll.ts';

interface Setup {
  server: DnsTestServer;
  clock: FakeClock;
  cache: DnsCache;
}

/** A cache over a real client and the embedded server, on a fake clock; `random` fixes the jitter. */
async function withCache(run: (s: Setup) => Promise<void>, options: Partial<DnsCacheOptions> = {}, random = () => 0.5): Promise<void> {
  const server = await DnsTestServer.start();
  const clock = new FakeClock();
  const client = dnsClient([server], { timeout: 1000, attempts: 1, deadline: 5000 }, clock);
  const cache = new DnsCache(client, clock, { ...dnsCacheDefaults, ...options }, random);
  try {
    await run({ server, clock, cache });
  } finally {
    cache.close();
    await server.close();
  }
}

test('TTL 0 counts as minTtl: served from the cache, asked again after ~5 s, never in a loop', async (t) => {
  await withCache(async ({ server, clock, cache }) => {
    server.add({ name: 'api.test', type: 'A', ttl: 0, data: '127.0.0.11' });
    const first = await cache.lookup('api.test.', 'A');
    t.deepEqual(first.answer?.addresses, ['127.0.0.11']);
    t.is(first.refreshAt - clock.now(), 4650, 'refresh at 93 % of 5000 ms with the jitter fixed at 0.5');
    for (let i = 0; i < 10; i++) await cache.lookup('api.test.', 'A');
    t.is(server.log.length, 1);
    clock.advance(4649);
    await cache.lookup('api.test.', 'A');
    t.is(server.log.length, 1);
    clock.advance(1);
    await cache.lookup('api.test.', 'A');
    t.is(server.log.length, 2);
  });
});

test('a huge TTL counts as maxTtl (300 s)', async (t) => {
  await withCache(async ({ server, clock, cache }) => {
    server.add({ name: 'api.test', type: 'A', ttl: 0x7fffffff, data: '127.0.0.11' });
    const first = await cache.lookup('api.test.', 'A');
    t.is(first.refreshAt - clock.now(), 279_000);
    clock.advance(278_999);
    await cache.lookup('api.test.', 'A');
    t.is(server.log.length, 1);
    clock.advance(1);
    await cache.lookup('api.test.', 'A');
    t.is(server.log.length, 2);
  });
});

test('refresh-ahead lands between 88 % and 98 % of the TTL, before the answer expires', async (t) => {
  for (const [random, expected] of [
    [0, 8800],
    [0.999999, 9800],
  ] as const) {
    await withCache(
      async ({ server, clock, cache }) => {
        server.add({ name: 'api.test', type: 'A', ttl: 10, data: '127.0.0.11' });
        const first = await cache.lookup('api.test.', 'A');
        t.is(Math.round(first.refreshAt - clock.now()), expected);
        clock.advance(expected);
        server.set('api.test', 'A', [{ name: 'api.test', type: 'A', ttl: 10, data: '127.0.0.12' }]);
        const second = await cache.lookup('api.test.', 'A');
        t.deepEqual(second.answer?.addresses, ['127.0.0.12']);
        t.false(second.stale);
        t.is(server.log.length, 2);
      },
      {},
      () => random,
    );
  }
});

test('concurrent identical lookups share one query: one packet on the wire', async (t) => {
  await withCache(async ({ server, cache }) => {
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    server.rule({ action: { delay: 50 } });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => cache.lookup(i % 2 ? 'API.test.' : 'api.test.', 'A')));
    t.true(results.every((r) => r.answer?.addresses[0] === '127.0.0.11'));
    t.is(server.log.length, 1);
    // A forced lookup joins a query already under way as well.
    server.rule({ action: { delay: 50 } });
    await Promise.all([cache.lookup('api.test.', 'A', true), cache.lookup('api.test.', 'A', true)]);
    t.is(server.log.length, 2);
  });
});

test('negative answers are cached for the SOA minimum, clamped; without SOA for minTtl only', async (t) => {
  await withCache(async ({ server, clock, cache }) => {
    const refreshIn = async (name: string): Promise<number> => (await cache.lookup(name, 'A')).refreshAt - clock.now();
    t.is(await refreshIn('nx1.test.'), 5000 * 0.93, 'no SOA: not cached (RFC 2308 §5), so minTtl');
    server.soa = { ttl: 60, minimum: 30 };
    t.is(await refreshIn('nx2.test.'), 30_000 * 0.93);
    server.soa = { ttl: 60, minimum: 0 };
    t.is(await refreshIn('nx3.test.'), 5000 * 0.93, 'raised to minTtl');
    server.soa = { ttl: 86_400, minimum: 86_400 };
    t.is(await refreshIn('nx4.test.'), 300_000 * 0.93, 'cut to maxTtl');
    t.is((await cache.lookup('nx4.test.', 'A')).answer?.kind, 'NXDOMAIN');
    t.is(server.log.length, 4);
  });
});

test('serve-stale during an outage: the last good answer for up to maxStale, retries backing off', async (t) => {
  await withCache(
    async ({ server, clock, cache }) => {
      server.add({ name: 'api.test', type: 'A', ttl: 10, data: '127.0.0.11' });
      await cache.lookup('api.test.', 'A');
      server.rule({ action: { rcode: 2 } }); // SERVFAIL from now on
      clock.advance(9300);
      const failing = await cache.lookup('api.test.', 'A');
      t.is(failing.error?.reason, 'SERVFAIL');
      t.deepEqual(failing.answer?.addresses, ['127.0.0.11']);
      t.false(failing.stale, 'still within its TTL');
      // Drive the outage for the rest of the stale window: look up every 100 ms of fake time.
      let queries = server.log.length;
      const end = clock.now() + 10_000 - 9300 + 60_000;
      let lastGood = failing;
      while (clock.now() < end - 100) {
        clock.advance(100);
        lastGood = await cache.lookup('api.test.', 'A');
        t.deepEqual(lastGood.answer?.addresses, ['127.0.0.11']);
      }
      t.true(lastGood.stale);
      queries = server.log.length - queries;
      // Backoff 1–2 s, doubling to 15–30 s: about 6 retries in 60 s, not 600.
      t.true(queries >= 4 && queries <= 9, `${queries} retries`);
      clock.advance(40_000);
      const expired = await cache.lookup('api.test.', 'A');
      t.is(expired.answer, undefined, 'past maxStale the answer is no longer served');
      t.is(expired.error?.reason, 'SERVFAIL');
      server.rules.length = 0;
      clock.advance(30_000);
      const back = await cache.lookup('api.test.', 'A');
      t.deepEqual(back.answer?.addresses, ['127.0.0.11']);
      t.is(back.error, undefined);
      t.false(back.stale);
    },
    { maxStale: 60_000 },
  );
});

test('retries after failures wait 1–2 s at first, then double; still jittered at the 30 s cap', async (t) => {
  const delays = async (random: number): Promise<number[]> => {
    const waits: number[] = [];
    await withCache(
      async ({ server, clock, cache }) => {
        server.rule({ action: { rcode: 2 } });
        for (let i = 0; i < 8; i++) {
          const result = await cache.lookup('api.test.', 'A');
          waits.push(Math.round(result.refreshAt - clock.now()));
          clock.advance(result.refreshAt - clock.now());
        }
        t.is(server.log.length, 8);
      },
      {},
      () => random,
    );
    return waits;
  };
  t.deepEqual(await delays(0), [1000, 2000, 4000, 8000, 15_000, 15_000, 15_000, 15_000]);
  t.deepEqual(await delays(0.999), [1999, 3998, 7996, 15_992, 29_985, 29_985, 29_985, 29_985]);
});

test('a forced lookup asks again even while the answer is fresh', async (t) => {
  await withCache(async ({ server, cache }) => {
    server.add({ name: 'api.test', type: 'A', ttl: 300, data: '127.0.0.11' });
    await cache.lookup('api.test.', 'A');
    await cache.lookup('api.test.', 'A', true);
    t.is(server.log.length, 2);
  });
});

test('close() aborts a query under way; the lookup resolves with what was cached', async (t) => {
  await withCache(async ({ server, cache }) => {
    server.rule({ action: { drop: true } });
    const pending = cache.lookup('api.test.', 'A');
    await until(() => server.log.length === 1, { what: 'the query to reach the server' });
    cache.close();
    const result = await pending;
    t.is(result.answer, undefined);
    t.is(result.error?.reason, 'ABORTED');
    t.is(server.log.length, 1);
  });
});

test('a full cache drops the least recently used name: one looked up again stays, the oldest is asked again', async (t) => {
  const server = await DnsTestServer.start();
  const clock = new FakeClock();
  const client = dnsClient([server], { timeout: 1000, attempts: 1, deadline: 5000 }, clock);
  const cache = new DnsCache(client, clock, dnsCacheDefaults, () => 0.5, 8);
  try {
    for (let i = 0; i < 9; i++) server.add({ name: `n${i}.test`, type: 'A', ttl: 60, data: `127.0.0.${20 + i}` });
    for (let i = 0; i < 8; i++) await cache.lookup(`n${i}.test.`, 'A');
    t.is(server.log.length, 8);
    await cache.lookup('n0.test.', 'A');
    t.is(server.log.length, 8, 'n0 is cached, and now the most recently used');
    await cache.lookup('n8.test.', 'A');
    t.is(server.log.length, 9, 'a ninth name makes room');
    await cache.lookup('n0.test.', 'A');
    await cache.lookup('n2.test.', 'A');
    t.is(server.log.length, 9, 'n0 (used again) and n2 stayed');
    const n1 = await cache.lookup('n1.test.', 'A');
    t.is(server.log.length, 10, 'n1, the least recently used, was dropped and is asked again');
    t.deepEqual(n1.answer?.addresses, ['127.0.0.21']);
  } finally {
    cache.close();
    await server.close();
  }
});
