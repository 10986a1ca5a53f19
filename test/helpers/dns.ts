// DNS clients and resolvers pointed at a server of ours (DnsTestServer or dnsmasq), never at resolv.conf.
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { systemClock, type Clock } from '../../src/clock.ts';
import { dnsCacheDefaults, type DnsCacheOptions } from '../../src/dns/DnsCache.ts';
import { DnsClient, type DnsClientConfig } from '../../src/dns/DnsClient.ts';
import type { NameServer } from '../../src/dns/ResolvConf.ts';
import type { DnsResolver } from '../../src/resolver/DnsResolver.ts';
import { createResolver, type ResolverContext } from '../../src/resolver/parseTarget.ts';
import type { EndpointAddress } from '../../src/resolver/Resolver.ts';
import { FakeClock } from './FakeClock.ts';

/** A server of ours as a name server entry. */
export const nameServerOf = (server: { host: string; port: number }): NameServer => ({ address: server.host, port: server.port });

/** A client of `servers` with no search list and resolv.conf's defaults (2 s timeout, 2 attempts). */
export function dnsClient(servers: Array<{ host: string; port: number } | NameServer>, config: Partial<DnsClientConfig> = {}, clock: Clock = systemClock): DnsClient {
  return new DnsClient(
    {
      servers: servers.map((s) => ('host' in s ? nameServerOf(s) : s)),
      search: [],
      ndots: 1,
      timeout: 2000,
      attempts: 2,
      rotate: false,
      deadline: 10_000,
      ...config,
    },
    clock,
  );
}

/** A resolver for `target` on `clock` that asks `server` only (no resolv.conf), `dns` laid over the defaults. */
export function resolverOf(target: string, server: { host: string; port: number }, clock: Clock, dns: Partial<ResolverContext['dns']> = {}): DnsResolver {
  return createResolver(target, {
    clock,
    dns: { ...dnsCacheDefaults, servers: [nameServerOf(server)], ...dns },
    resolvConf: '/nonexistent/resolv.conf',
    hostname: 'localhost', // no domain: no search list from the host name
  }) as DnsResolver;
}

export interface ResolverHarness {
  server: DnsTestServer;
  clock: FakeClock;
  resolver: DnsResolver;
  sets: Array<readonly EndpointAddress[]>;
  errors: Error[];
  warnings: string[];
  /** The last set, as `address:port/priority/weight` strings. */
  last(): string[];
}

/**
 * A resolver for `target` on a fake clock, asking a DnsTestServer that `setup` fills; `run` starts
 * once the first round is over. One try of 1 s per query.
 */
export async function withResolver(
  target: string,
  setup: (server: DnsTestServer) => void,
  run: (h: ResolverHarness) => Promise<void> | void,
  dns: Partial<DnsCacheOptions> = {},
): Promise<void> {
  const server = await DnsTestServer.start();
  setup(server);
  const clock = new FakeClock();
  const resolver = resolverOf(target, server, clock, { timeout: 1000, attempts: 1, ...dns });
  const h: ResolverHarness = {
    server,
    clock,
    resolver,
    sets: [],
    errors: [],
    warnings: [],
    last: () => (h.sets.at(-1) ?? []).map((e) => `${e.address}:${e.port}/${e.priority ?? '-'}/${e.weight ?? '-'}`),
  };
  resolver.start({ endpoints: (set) => h.sets.push(set), error: (e) => h.errors.push(e), warning: (w) => h.warnings.push(w) });
  try {
    await resolver.settled();
    await run(h);
  } finally {
    await resolver.close();
    await server.close();
  }
}
