import test from 'ava';
import { createResolver, parseStaticList } from '../../src/resolver/parseTarget.ts';
import { StaticResolver } from '../../src/resolver/StaticResolver.ts';
import { DnsResolver } from '../../src/resolver/DnsResolver.ts';
import type { EndpointAddress } from '../../src/resolver/Resolver.ts';

function resolveNow(target: Parameters<typeof createResolver>[0]): readonly EndpointAddress[] {
  let result: readonly EndpointAddress[] = [];
  createResolver(target).start({ endpoints: (set) => (result = set), error: (e) => { throw e; } });
  return result;
}

test('static list with IPv4, bracketed IPv6, weights and priorities', (t) => {
  t.deepEqual(parseStaticList('t', '10.0.0.1:6443?weight=3, [fd00::1]:443?priority=1&weight=0 ,127.0.0.2:1'), [
    { address: '10.0.0.1', port: 6443, weight: 3 },
    { address: 'fd00::1', port: 443, priority: 1, weight: 0 },
    { address: '127.0.0.2', port: 1 },
  ]);
});

test('the scheme is case-insensitive and a static resolver reports its source', (t) => {
  t.deepEqual(resolveNow('STATIC:///127.0.0.2:6443'), [{ address: '127.0.0.2', port: 6443, source: 'static' }]);
});

test('an array of endpoints is a static target', (t) => {
  t.deepEqual(resolveNow([{ address: '10.0.0.1', port: 6443, weight: 2 }]), [
    { address: '10.0.0.1', port: 6443, weight: 2, priority: undefined, source: 'static' },
  ]);
});

test('a resolver object is used as it is', (t) => {
  const resolver = new StaticResolver([]);
  t.is(createResolver(resolver), resolver);
});

test('dns+srv: and dns: targets build DNS resolvers', (t) => {
  t.true(createResolver('dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.') instanceof DnsResolver);
  t.true(createResolver('DNS:///apiservers.example.com:6443') instanceof DnsResolver);
});
