import test from 'ava';
import { createBalancer } from '../../src/index.ts';
import { limitEndpoints } from '../../src/resolver/limitEndpoints.ts';
import { endpointKey } from '../../src/net/endpointKey.ts';
import type { EndpointAddress } from '../../src/resolver/Resolver.ts';
import { pushResolver } from '../helpers/pushResolver.ts';

/** No request is sent here; every balancer needs its origin. */
const ORIGIN = 'https://kubernetes.default.svc';

const many = (n: number, priority = 0, base = 1): EndpointAddress[] =>
  Array.from({ length: n }, (_, i) => ({ address: `10.${priority}.${(base + i) >> 8}.${(base + i) & 255}`, port: 6443, priority }));

test('a listing over the cap keeps the lowest priority values, then the lowest address:port, whatever its order; one warning per listing', (t) => {
  const inner = pushResolver();
  const sets: string[][] = [];
  const warnings: string[] = [];
  limitEndpoints(inner, 5).start({ endpoints: (set) => sets.push(set.map(endpointKey)), error: () => {}, warning: (w) => warnings.push(w) });
  const listing = [...many(4, 1), ...many(3, 0, 100), ...many(2, 2)];
  inner.push([...listing].reverse());
  inner.push([...listing].sort(() => 0.5 - Math.random()));
  t.deepEqual(sets[0], ['10.0.0.100:6443', '10.0.0.101:6443', '10.0.0.102:6443', '10.1.0.1:6443', '10.1.0.2:6443']);
  t.deepEqual(sets[1], sets[0], 'the same subset, whatever the order');
  t.is(warnings.length, 1);
  t.regex(warnings[0]!, /listed 9 endpoints, more than maxEndpoints \(5\)/);
  inner.push(many(3));
  t.deepEqual(sets[2], ['10.0.0.1:6443', '10.0.0.2:6443', '10.0.0.3:6443'], 'under the cap: passed on as it is');
  inner.push(listing);
  t.is(warnings.length, 2, 'a new listing over the cap warns again');
});

test('the balancer uses at most maxEndpoints (default 100) of a listing and says so', async (t) => {
  const resolver = pushResolver(many(150));
  const warnings: string[] = [];
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, probe: false });
  balancer.on('warning', (w) => warnings.push(w));
  try {
    t.is(balancer.endpoints().length, 100);
    resolver.push(many(150, 0, 50));
    t.is(balancer.endpoints().length, 100);
    t.true(warnings.some((w) => /more than maxEndpoints \(100\)/.test(w)));
    const small = createBalancer({ origin: ORIGIN, target: pushResolver(many(10)), probe: false, maxEndpoints: 3 });
    t.deepEqual(
      small.endpoints().map((e) => e.address).sort(),
      ['10.0.0.1', '10.0.0.10', '10.0.0.2'],
      'by address:port as text',
    );
    await small.close();
  } finally {
    await balancer.close();
  }
});
