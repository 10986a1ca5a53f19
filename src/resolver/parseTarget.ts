import { isIP } from 'node:net';
import { systemClock, type Clock } from '../clock.ts';
import { DnsCache, dnsCacheDefaults, type DnsCacheOptions } from '../dns/DnsCache.ts';
import { DnsClient, type DnsClientOverrides } from '../dns/DnsClient.ts';
import { nameProblem } from '../dns/names.ts';
import { describe, invalidOption, invalidTarget } from '../errors.ts';
import { isIpLiteral } from '../net/hostnames.ts';
import type { HeadersSource } from '../net/headers.ts';
import type { ResolvedTls } from '../net/tls.ts';
import { ApiClient } from './ApiClient.ts';
import { ChainResolver } from './ChainResolver.ts';
import { EndpointSliceResolver } from './EndpointSliceResolver.ts';
import { DnsResolver, type DnsLookup } from './DnsResolver.ts';
import { addressLookup, srvLookup } from './dnsLookups.ts';
import type { EndpointAddress, Resolver } from './Resolver.ts';
import { ServerResolver } from './ServerResolver.ts';
import { StaticResolver } from './StaticResolver.ts';

/**
 * What a target may be: a URI, a resolver object, a list of endpoints, or a list of URIs and
 * resolvers tried in order.
 */
export type Target = string | Resolver | readonly EndpointAddress[] | ReadonlyArray<string | Resolver>;

export function isResolver(value: unknown): value is Resolver {
  return typeof value === 'object' && value !== null && typeof (value as Resolver).start === 'function';
}

/** Validated `bootstrap` option. */
export interface ResolvedBootstrap {
  server: URL;
  headers: HeadersSource;
  lastResort: boolean;
}

/** What resolvers need besides the target. */
export interface ResolverContext {
  clock: Clock;
  /** Validated `options.dns`. */
  dns: DnsClientOverrides & DnsCacheOptions;
  /** Where the system resolver configuration is; for tests. Default `/etc/resolv.conf`. */
  resolvConf?: string;
  /** The host name whose domain is the search list when resolv.conf gives none; for tests. Default: the system's. */
  hostname?: string;
  /** The TLS settings in force (they may rotate), for resolvers that talk to the API. Default: verify with Node's CAs. */
  tls?: (() => ResolvedTls) | undefined;
  /** `options.bootstrap`: required by `kubernetes:` targets; when set, its server is the last resort. */
  bootstrap?: ResolvedBootstrap | undefined;
}

const defaultContext: ResolverContext = { clock: systemClock, dns: dnsCacheDefaults };

/** The context plus the one DNS client that every DNS target of a `createResolver` call shares. */
interface BuildContext extends ResolverContext {
  dnsClient: DnsClient;
}

/** Builds the resolver for a target; throws `ERR_INVALID_TARGET` for anything it cannot use. */
export function createResolver(target: Target, resolverContext: ResolverContext = defaultContext): Resolver {
  // resolv.conf is read once, on the first lookup, however many DNS targets there are.
  const context = { ...resolverContext, dnsClient: DnsClient.fromSystem(resolverContext.dns, resolverContext.clock, resolverContext.resolvConf, resolverContext.hostname) };
  const links = isChain(target) ? target : undefined;
  if (links && links.length === 0) throw invalidTarget('[]', 'lists no endpoint');
  const bootstrap = context.bootstrap;
  if (!links && !bootstrap?.lastResort) return createOne(target as Exclude<Target, readonly unknown[]> | readonly EndpointAddress[], context);
  const chain = (links ?? [target as string | Resolver | readonly EndpointAddress[]]).map((link, i) => ({
    resolver: createOne(link, context),
    name: typeof link === 'string' ? link : `target[${i}]`,
  }));
  const lastResort = bootstrap?.lastResort ? new ServerResolver(bootstrap.server, context.clock) : undefined;
  return new ChainResolver(chain, lastResort);
}

/** An array of URIs and resolvers (a chain), as opposed to an array of endpoints. */
function isChain(target: Target): target is ReadonlyArray<string | Resolver> {
  if (!Array.isArray(target) || target.length === 0) return false;
  const links = target.filter((item: unknown) => typeof item === 'string' || isResolver(item)).length;
  if (links === 0) return false;
  if (links !== target.length) throw invalidTarget('[…]', 'mixes endpoints with URIs or resolvers: use either an array of endpoints or an array of targets');
  return true;
}

function createOne(target: string | Resolver | readonly EndpointAddress[], context: BuildContext): Resolver {
  if (isResolver(target)) return target;
  if (Array.isArray(target)) return new StaticResolver(validateEndpointList(target as readonly EndpointAddress[]));
  if (typeof target !== 'string') {
    throw invalidTarget(describe(target), 'must be a URI string, a resolver object or an array of endpoints');
  }
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/]*)\/(.*)$/i.exec(target);
  if (!match) throw invalidTarget(target, 'expected <scheme>:///<name>, e.g. static:///10.0.0.1:6443,10.0.0.2:6443');
  const [, scheme = '', authority = '', rest = ''] = match;
  switch (scheme.toLowerCase()) {
    case 'static':
      if (authority !== '') throw invalidTarget(target, 'static targets take no authority: use static:///ip:port,…');
      return new StaticResolver(parseStaticList(target, rest));
    case 'dns+srv':
      checkDnsAuthority(target, authority);
      return dnsResolver(target, srvLookup(checkDnsName(target, rest)), context);
    case 'dns': {
      checkDnsAuthority(target, authority);
      const { name, port } = parseDnsHostPort(target, rest);
      return dnsResolver(target, addressLookup(name, port), context);
    }
    case 'kubernetes':
      return kubernetesResolver(target, authority, rest, context);
    default:
      throw invalidTarget(target, `unknown scheme "${scheme}:" (known: static:, dns:, dns+srv:, kubernetes:)`);
  }
}

function dnsResolver(target: string, lookup: DnsLookup, context: BuildContext): DnsResolver {
  const cache = new DnsCache(context.dnsClient, context.clock, context.dns);
  return new DnsResolver(lookup, { clock: context.clock, cache, maxStale: context.dns.maxStale, target });
}

function checkDnsAuthority(target: string, authority: string): void {
  // gRPC puts a DNS server in the authority; here servers have one place: options.dns.servers.
  if (authority !== '') throw invalidTarget(target, 'DNS targets take no authority: use dns+srv:///name or dns:///name:port, and options.dns.servers for the server');
}

function checkDnsName(target: string, name: string): string {
  const problem = nameProblem(name);
  if (problem) throw invalidTarget(target, `the name "${name}" ${problem}`);
  return name;
}

/**
 * `name:port`. The port is required: the A/AAAA records of a headless Service are pod addresses,
 * reached on the target port (6443 on kubeadm), not on the Service port, so no default is right.
 */
function parseDnsHostPort(target: string, rest: string): { name: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(rest);
  if (!m) throw invalidTarget(target, 'needs a port: dns:///apiservers.example.com:6443 (SRV records carry their own: dns+srv:///…)');
  const [, name = '', portText = ''] = m;
  if (isIpLiteral(name)) throw invalidTarget(target, `"${name}" is an IP address, not a name: use static:///${rest}`);
  const port = Number(portText);
  if (!isPort(port)) throw invalidTarget(target, `port ${portText} is not in 1–65535`);
  return { name: checkDnsName(target, name), port };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `kubernetes:///<namespace>/<service>`, read through `options.bootstrap`. */
function kubernetesResolver(target: string, authority: string, rest: string, context: ResolverContext): Resolver {
  if (authority !== '') throw invalidTarget(target, 'kubernetes targets take no authority: use kubernetes:///<namespace>/<service>');
  const parts = rest.split('/');
  if (parts.length !== 2 || !parts.every((p) => DNS_LABEL.test(p))) {
    throw invalidTarget(target, 'expected kubernetes:///<namespace>/<service>, e.g. kubernetes:///default/kubernetes');
  }
  const bootstrap = context.bootstrap;
  if (!bootstrap) {
    throw invalidOption('bootstrap', undefined, `is required by the target ${JSON.stringify(target)}: the apiserver to read EndpointSlices through, e.g. { server: 'https://10.96.0.1:443', headers } (fromKubeConfig sets it)`);
  }
  const api = new ApiClient({ server: bootstrap.server, headers: bootstrap.headers, tls: context.tls ?? (() => ({ rejectUnauthorized: true })) });
  return new EndpointSliceResolver(parts[0]!, parts[1]!, api, context.clock);
}

/** `10.0.0.1:6443?weight=3&priority=1,[::1]:6443` → endpoints. */
export function parseStaticList(target: string, list: string): EndpointAddress[] {
  if (list.trim() === '') throw invalidTarget(target, 'lists no endpoint');
  return list.split(',').map((item) => parseStaticItem(target, item.trim()));
}

function parseStaticItem(target: string, item: string): EndpointAddress {
  const [hostPort = '', query] = item.split('?', 2);
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d+)$/.exec(hostPort);
  if (!m) throw invalidTarget(target, `endpoint "${item}" must be ip:port or [ipv6]:port`);
  const address = m[1] ?? m[2] ?? '';
  if (isIP(address) === 0) throw invalidTarget(target, `"${address}" is not an IP address (use dns:/// for names)`);
  if (m[1] !== undefined && isIP(address) !== 6) throw invalidTarget(target, `"[${address}]" is not an IPv6 address`);
  if (m[2] !== undefined && isIP(address) !== 4) throw invalidTarget(target, `IPv6 address "${address}" must be in brackets`);
  const port = Number(m[3]);
  if (!isPort(port)) throw invalidTarget(target, `port ${m[3]} of "${item}" is not in 1–65535`);
  const endpoint: EndpointAddress = { address, port };
  if (query !== undefined) {
    for (const [key, value] of new URLSearchParams(query)) {
      if (key !== 'weight' && key !== 'priority') throw invalidTarget(target, `unknown parameter "${key}" on "${item}"`);
      const n = Number(value);
      if (value === '' || !Number.isInteger(n) || n < 0 || n > 65535) {
        throw invalidTarget(target, `${key}=${value} on "${item}" must be an integer in 0–65535`);
      }
      endpoint[key] = n;
    }
  }
  return endpoint;
}

function validateEndpointList(list: readonly EndpointAddress[]): EndpointAddress[] {
  if (list.length === 0) throw invalidTarget('[]', 'lists no endpoint');
  return list.map((e, i) => {
    const where = `options.target[${i}]`;
    if (typeof e !== 'object' || e === null || typeof e.address !== 'string' || isIP(e.address) === 0) {
      throw invalidTarget(where, 'address must be an IP address string');
    }
    if (!isPort(e.port)) throw invalidTarget(where, `port ${String(e.port)} is not an integer in 1–65535`);
    for (const key of ['weight', 'priority'] as const) {
      const v = e[key];
      if (v !== undefined && (!Number.isInteger(v) || v < 0 || v > 65535)) {
        throw invalidTarget(where, `${key} ${String(v)} must be an integer in 0–65535`);
      }
    }
    return { address: e.address, port: e.port, weight: e.weight, priority: e.priority };
  });
}

function isPort(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535;
}
