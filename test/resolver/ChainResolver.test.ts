import test from 'ava';
import { systemClock } from '../../src/clock.ts';
import { ChainResolver } from '../../src/resolver/ChainResolver.ts';
import { type EndpointAddress, type Resolver, type ResolverListener } from '../../src/resolver/Resolver.ts';
import { endpointKey } from '../../src/net/endpointKey.ts';
import { ServerResolver } from '../../src/resolver/ServerResolver.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

/** A resolver the test drives. */
class Scripted implements Resolver {
  listener: ResolverListener | undefined;
  starts = 0;
  closed = 0;
  refreshed = 0;
  start(listener: ResolverListener): void {
    this.starts++;
    this.listener = listener;
  }
  refresh(): void {
    this.refreshed++;
  }
  close(): void {
    this.closed++;
    this.listener = undefined;
  }
  yields(...addresses: string[]): void {
    this.listener?.endpoints(addresses.map((a) => ({ address: a, port: 6443 })));
  }
  fails(message: string): void {
    this.listener?.error(new Error(message));
  }
}

function record(): { listener: ResolverListener; sets: string[]; errors: string[]; warnings: string[] } {
  const out = { sets: [] as string[], errors: [] as string[], warnings: [] as string[] };
  const listener: ResolverListener = {
    endpoints: (set: readonly EndpointAddress[]) => out.sets.push(set.map((e) => `${endpointKey(e)}@${e.priority ?? 0}`).join(',')),
    error: (error) => out.errors.push(error.message),
    warning: (message) => out.warnings.push(message),
  };
  return { listener, ...out };
}

test('the first way that lists endpoints wins; the server stays one priority below as the last resort', (t) => {
  const dns = new Scripted();
  const slices = new Scripted();
  const server = new Scripted();
  const chain = new ChainResolver([{ resolver: dns, name: 'dns' }, { resolver: slices, name: 'slices' }], server);
  const out = record();
  chain.start(out.listener);
  t.is(dns.starts, 1);
  t.is(slices.starts, 0, 'a later way starts only once the earlier ones have failed');

  server.yields('10.96.0.1');
  t.deepEqual(out.sets, ['10.96.0.1:6443@0'], 'the server alone, before discovery answers');

  dns.fails('NXDOMAIN');
  t.is(slices.starts, 1);
  t.deepEqual(out.errors, [], 'not an error while another way may answer');

  slices.yields('10.0.0.1', '10.0.0.2');
  t.deepEqual(out.sets.at(-1), '10.0.0.1:6443@0,10.0.0.2:6443@0,10.96.0.1:6443@1');

  slices.fails('watch broke');
  t.deepEqual(out.errors, ['watch broke'], 'errors of the way in use are resolver errors');
  dns.fails('NXDOMAIN');
  dns.fails('NXDOMAIN');
  t.deepEqual(out.warnings, ['dns: NXDOMAIN'], 'a preferred way still failing is a warning, once');

  chain.refresh();
  t.deepEqual([dns.refreshed, slices.refreshed, server.refreshed], [1, 1, 1]);

  dns.yields('10.0.0.7');
  t.deepEqual(out.sets.at(-1), '10.0.0.7:6443@0,10.96.0.1:6443@1');
  t.is(slices.closed, 1, 'a later way stops once an earlier one answers');
  slices.yields('10.0.0.9');
  t.is(out.sets.length, 3, 'and is not heard from again');

  server.yields('10.0.0.7');
  t.deepEqual(out.sets.at(-1), '10.0.0.7:6443@0', 'the server is not listed twice');
  server.yields('10.0.0.7');
  t.is(out.sets.length, 4, 'only changes are reported');
});

test('an error reaches the balancer only when every way and the server have failed', (t) => {
  const a = new Scripted();
  const b = new Scripted();
  const server = new Scripted();
  const chain = new ChainResolver([{ resolver: a, name: 'a' }, { resolver: b, name: 'b' }], server);
  const out = record();
  chain.start(out.listener);
  a.fails('a down');
  server.fails('no such host');
  t.deepEqual(out.errors, []);
  b.fails('b down');
  t.deepEqual(out.errors, ['b down']);
  b.yields('10.0.0.1');
  t.deepEqual(out.sets, ['10.0.0.1:6443@0']);
});

test('a last resort that keeps failing while another way is in use warns once in a row', (t) => {
  const dns = new Scripted();
  const server = new Scripted();
  const chain = new ChainResolver([{ resolver: dns, name: 'dns' }], server);
  const out = record();
  chain.start(out.listener);
  dns.yields('10.0.0.1');
  server.fails('getaddrinfo ENOTFOUND api.example.com');
  server.fails('getaddrinfo ENOTFOUND api.example.com');
  t.deepEqual(out.warnings, ['server: getaddrinfo ENOTFOUND api.example.com']);
  t.deepEqual(out.errors, []);
  server.fails('getaddrinfo EAI_AGAIN api.example.com');
  t.is(out.warnings.length, 2, 'a new message is told');
});

test('DNS query counts from every way and from the last resort reach the listener', (t) => {
  const dns = new Scripted();
  const server = new Scripted();
  const chain = new ChainResolver([{ resolver: dns, name: 'dns' }], server);
  const queries: string[] = [];
  chain.start({ endpoints: () => {}, error: () => {}, dnsQuery: (result) => queries.push(result) });
  dns.listener?.dnsQuery?.('NXDOMAIN');
  server.listener?.dnsQuery?.('success');
  t.deepEqual(queries, ['NXDOMAIN', 'success']);
});

test('without a last resort, the first answer is published as it is', async (t) => {
  const a = new Scripted();
  const chain = new ChainResolver([{ resolver: a, name: 'a' }]);
  const out = record();
  chain.start(out.listener);
  a.yields('10.0.0.1');
  t.deepEqual(out.sets, ['10.0.0.1:6443@0']);
  await chain.close();
  t.is(a.closed, 1);
});

test('ServerResolver: an IP server is its own endpoint; a name is looked up with the system resolver, again on refresh', async (t) => {
  const ip = new ServerResolver(new URL('https://10.96.0.1'), systemClock);
  const sets: string[] = [];
  ip.start({ endpoints: (set) => sets.push(set.map(endpointKey).join()), error: () => {} });
  t.deepEqual(sets, ['10.96.0.1:443']);
  ip.close();

  const clock = new FakeClock();
  let answers = [{ address: '192.0.2.1' }, { address: '192.0.2.2' }, { address: '192.0.2.1' }];
  let lookups = 0;
  const named = new ServerResolver(new URL('https://api.example.com:6443/prefix'), clock, (host) => {
    t.is(host, 'api.example.com');
    lookups++;
    return Promise.resolve(answers);
  });
  const found: string[] = [];
  named.start({ endpoints: (set) => found.push(set.map(endpointKey).join()), error: () => {} });
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(found, ['192.0.2.1:6443,192.0.2.2:6443']);
  answers = [{ address: '2001:db8::1' }];
  clock.advance(1000);
  named.refresh();
  t.is(lookups, 1, 'refreshes closer than 5 s are one');
  clock.advance(5000);
  named.refresh();
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(found, ['192.0.2.1:6443,192.0.2.2:6443', '[2001:db8::1]:6443']);
  named.close();
  t.is(clock.pending, 0);
});

test('ServerResolver: localhost through the real system resolver', async (t) => {
  const resolver = new ServerResolver(new URL('https://localhost:6443'), systemClock);
  const set = await new Promise<readonly EndpointAddress[]>((resolve, reject) => resolver.start({ endpoints: resolve, error: reject }));
  resolver.close();
  t.true(set.length > 0 && set.every((e) => ['127.0.0.1', '::1'].includes(e.address) && e.port === 6443));
});
