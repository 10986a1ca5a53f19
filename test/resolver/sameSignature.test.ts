import test from 'ava';
import { seeded } from '../../fleet/sim/random.ts';
import { endpointSignature, sameSignature, type EndpointAddress } from '../../src/resolver/Resolver.ts';

test('sameSignature agrees with comparing endpointSignature, order, duplicates and defaults included', (t) => {
  const next = seeded(15);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const one = (): EndpointAddress => ({
    address: pick(['10.0.0.1', '10.0.0.2', '10.0.0.3', 'fd00::1']),
    port: pick([443, 6443]),
    // Absent and the default are the same to the signature.
    ...pick([{}, { weight: 1 }, { weight: 2 }]),
    ...pick([{}, { priority: 0 }, { priority: 1 }]),
    ttl: pick([5, 30]),
  });
  let same = 0;
  for (let i = 0; i < 5_000; i++) {
    const a = Array.from({ length: Math.floor(next() * 4) }, one);
    // Half the time a shuffle of `a` with one field possibly changed, else a fresh set.
    const b = next() < 0.5 ? [...a].sort(() => next() - 0.5).map((e) => (next() < 0.2 ? { ...e, ttl: 99 } : next() < 0.1 ? { ...e, weight: 3 } : e)) : Array.from({ length: a.length }, one);
    const expected = endpointSignature(a) === endpointSignature(b);
    if (expected) same++;
    t.is(sameSignature(a, b), expected, JSON.stringify({ a, b }));
  }
  t.true(same > 1_000, `both outcomes seen (${same} same)`);
  t.is(sameSignature(Array.from({ length: 31 }, one), Array.from({ length: 31 }, one)), undefined, 'large sets are left to the signature');
});
