// What `resolve` and `watch` share, and `probe` in part: a resolver built from the command line, and how endpoints print.
import { systemClock } from '../clock.ts';
import { dnsCacheDefaults } from '../dns/DnsCache.ts';
import { parseNameServer, type NameServer } from '../dns/ResolvConf.ts';
import { BalancerError } from '../errors.ts';
import { createResolver } from '../resolver/parseTarget.ts';
import { type EndpointAddress, type Resolver } from '../resolver/Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { UsageError } from './args.ts';
import { table } from './table.ts';

export const TARGETS_HELP = `targets:
  dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.
                  one endpoint per SRV record, with its priority, weight and port
  dns:///apiservers.example.com:6443
                  one endpoint per A/AAAA address of the name, on that port
  static:///10.0.0.11:6443,10.0.0.12:6443?weight=2
                  a fixed list`;

export const DNS_SERVER_HELP = `  --dns-server ADDR  DNS server to ask, e.g. 10.96.0.10 or 127.0.0.1:5353; repeat for more
                     (default: the nameservers of /etc/resolv.conf)`;

/** An endpoint as `resolve --json` and `watch --json` print it: every field present. */
export interface EndpointRow {
  address: string;
  port: number;
  priority: number;
  weight: number;
  /** Seconds, as DNS said; `null` when the source has none (static targets). */
  ttl: number | null;
  source: string | null;
}

/** The one `<target>` argument of `resolve` and `watch`. */
export function oneTarget(positionals: readonly string[]): string {
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'missing <target>' : `one target only, got ${positionals.length}`);
  return positionals[0]!;
}

/** `--dns-server` values; one that is not an address is a usage error. */
export function parseDnsServers(specs: readonly string[] = []): NameServer[] {
  return specs.map((spec) => {
    const server = parseNameServer(spec);
    if (!server) throw new UsageError(`--dns-server "${spec}" is not an IP address with an optional port (10.96.0.10, 127.0.0.1:5353, [::1]:53)`);
    return server;
  });
}

/** A target the library rejects came from the command line: a usage error. Anything else is as it was. */
export function asUsageError(error: unknown): unknown {
  if (error instanceof BalancerError && error.code === 'ERR_INVALID_TARGET') return new UsageError(`invalid target ${error.message.replace(/^options\.target /, '')}`);
  return error;
}

/** Builds the resolver for `target`; a target or server that cannot work is a usage error. */
export function openResolver(target: string, dnsServers: readonly string[] = []): Resolver {
  const servers = parseDnsServers(dnsServers);
  if (/^kubernetes:/i.test(target)) {
    throw new UsageError(`${target}: a kubernetes: target is read through a cluster's API, which needs a kubeconfig: kube-balancer probe --target ${target}`);
  }
  try {
    return createResolver(target, { clock: systemClock, dns: { ...dnsCacheDefaults, ...(servers.length ? { servers } : {}) } });
  } catch (error) {
    throw asUsageError(error);
  }
}

/** DNS gives up after 10 s on its own; this only guards against a resolver that never answers. */
const GIVE_UP_MS = 15_000;

/**
 * The first resolution round's endpoints, with its partial failures as warnings; throws if it
 * found none. A round reports its failures just before its endpoints, in the same tick, so an
 * error settles the outcome only if no endpoints follow it. Closes the resolver.
 */
export async function resolveOnce(resolver: Resolver, target: string): Promise<{ endpoints: readonly EndpointAddress[]; warnings: string[] }> {
  const errors: Error[] = [];
  const warnings: string[] = [];
  try {
    const endpoints = await new Promise<readonly EndpointAddress[] | undefined>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`${target}: no answer within ${GIVE_UP_MS / 1000} s`)), GIVE_UP_MS);
      const finish = (set: readonly EndpointAddress[] | undefined): void => {
        clearTimeout(timer);
        done(set);
      };
      try {
        resolver.start({
          endpoints: finish,
          error: (error) => {
            errors.push(error);
            setImmediate(() => finish(undefined));
          },
          warning: (message) => warnings.push(message),
        });
      } catch (error) {
        clearTimeout(timer);
        fail(error instanceof Error ? error : new Error(String(error)));
      }
    });
    if (!endpoints || endpoints.length === 0) {
      throw new Error(`${target} resolved to no endpoint${errors.length ? `: ${errors.map((e) => e.message).join('; ')}` : ''}`);
    }
    return { endpoints, warnings: [...warnings, ...errors.map((e) => e.message)] };
  } finally {
    await resolver.close?.();
  }
}

export function toRow(e: EndpointAddress): EndpointRow {
  return { address: e.address, port: e.port, priority: e.priority ?? 0, weight: e.weight ?? 1, ttl: e.ttl ?? null, source: e.source ?? null };
}

/** Sorted by priority, then address, so output is stable across runs. */
export function sortRows(rows: EndpointRow[]): EndpointRow[] {
  return [...rows].sort((a, b) => a.priority - b.priority || compareKeys(endpointKey(a), endpointKey(b)));
}

export function endpointTable(rows: readonly EndpointRow[]): string {
  return table(
    ['ENDPOINT', 'PRIORITY', 'WEIGHT', 'TTL', 'SOURCE'],
    rows.map((r) => [endpointKey(r), String(r.priority), String(r.weight), r.ttl === null ? '-' : `${r.ttl}s`, r.source ?? '-']),
    [false, true, true, true, false],
  );
}

/** `10.0.0.2:6443` before `10.0.0.10:6443`. */
function compareKeys(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
