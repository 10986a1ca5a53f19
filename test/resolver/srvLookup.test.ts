import test from 'ava';
import type { DnsCache } from '../../src/dns/DnsCache.ts';
import type { DnsAnswer } from '../../src/dns/DnsClient.ts';
import { srvLookup } from '../../src/resolver/dnsLookups.ts';

const NAME = '_https._tcp.api.test.';

/** A glued SRV answer, as DnsClient decodes one. */
function answer(records: Array<{ target: string; address: string; port?: number; weight?: number }>, ttl = 5): DnsAnswer {
  return {
    name: NAME,
    type: 'SRV',
    kind: 'records',
    addresses: [],
    srv: records.map((r) => ({ priority: 0, weight: r.weight ?? 10, port: r.port ?? 6443, target: r.target })),
    glue: new Map(records.map((r) => [r.target, [r.address]])),
    ttl,
    transport: 'udp',
  };
}

/** Stands in for the cache: each lookup gets the next answer given. */
function cacheOf(answers: DnsAnswer[]): DnsCache {
  let i = 0;
  return { lookup: () => Promise.resolve({ answer: answers[Math.min(i++, answers.length - 1)], stale: false, error: undefined, refreshAt: 4_000 }) } as unknown as DnsCache;
}

test('a round whose SRV answer repeats the last one (the same or an equal one) gives the same endpoints without rebuilding them', async (t) => {
  const records = [
    { target: 'a.api.test', address: '127.0.0.11' },
    { target: 'b.api.test', address: '127.0.0.12' },
  ];
  const first = answer(records);
  const cache = cacheOf([first, first, answer(records)]);
  const lookup = srvLookup(NAME);
  const one = await lookup(cache, false);
  t.deepEqual(
    one.endpoints.map((e) => e.address),
    ['127.0.0.11', '127.0.0.12'],
  );
  t.is((await lookup(cache, false)).endpoints, one.endpoints, 'the same answer again');
  t.is((await lookup(cache, false)).endpoints, one.endpoints, 'an equal answer, decoded anew');
});

test('a changed SRV answer (weight, port, glue address or TTL) is built anew', async (t) => {
  const base = [{ target: 'a.api.test', address: '127.0.0.11' }];
  const changes: Array<[string, DnsAnswer, (e: { address: string; port: number; weight?: number; ttl?: number }) => unknown, unknown]> = [
    ['weight', answer([{ ...base[0]!, weight: 50 }]), (e) => e.weight, 50],
    ['port', answer([{ ...base[0]!, port: 7443 }]), (e) => e.port, 7443],
    ['glue', answer([{ ...base[0]!, address: '127.0.0.99' }]), (e) => e.address, '127.0.0.99'],
    ['ttl', answer(base, 30), (e) => e.ttl, 30],
  ];
  for (const [what, changed, read, expected] of changes) {
    const lookup = srvLookup(NAME);
    const cache = cacheOf([answer(base), changed]);
    const before = await lookup(cache, false);
    const after = await lookup(cache, false);
    t.not(after.endpoints, before.endpoints, what);
    t.is(read(after.endpoints[0]!), expected, what);
  }
});
