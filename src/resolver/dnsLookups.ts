// The two DNS lookup strategies behind `dns+srv:` and `dns:` targets, on the shared answer cache.
//
// A round may succeed in part (one target's lookup fails). Its endpoints are still used: the cache
// serves every answer it ever had for up to maxStale, so a lookup that fails without an answer is
// one that never had any, and no endpoint that was in the set is lost through it.
import { isIPv4 } from 'node:net';
import type { CacheResult } from '../dns/DnsCache.ts';
import { DnsError } from '../dns/DnsError.ts';
import { canonical } from '../dns/names.ts';
import type { DnsLookup, DnsLookupResult } from './DnsResolver.ts';
import { type EndpointAddress } from './Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';

/** SRV targets are looked up a few at a time, so a 100-record answer does not open 200 sockets at once. */
const TARGET_CONCURRENCY = 8;

/**
 * `dns+srv:`: one endpoint per SRV record, with its priority, weight and port. The address comes
 * from the glue in the SRV answer, else from A and AAAA lookups of the target (in parallel). When a
 * target has several addresses, one is chosen — IPv4 before IPv6, then the lowest — so that a
 * dual-stack target counts once and the choice does not flap with the server's record order.
 */
export function srvLookup(name: string): DnsLookup {
  return async (cache, force) => {
    const srv = await cache.lookup(name, 'SRV', force);
    const result = fold(empty(), [srv]);
    const answer = srv.answer;
    if (!answer) return result;
    if (answer.kind !== 'records') return negative(result, new DnsError(answer.kind, `${name} SRV`));
    // Port 0 cannot be dialled; "." is RFC 2782's "no service here".
    const records = answer.srv.filter((r) => r.target !== '.' && r.port !== 0);
    // RFC 2782: a lone target of "." means the service is decidedly not available here.
    if (records.length === 0) return negative(result, new DnsError('NODATA', `${name} SRV`, 'no usable target (only "." or port 0): no service'));
    const unglued = [...new Set(records.map((r) => canonical(r.target)).filter((t) => !answer.glue.has(t)))];
    const addresses = new Map<string, { list: string[]; ttl: number | undefined }>();
    for (const [target, list] of answer.glue) addresses.set(target, { list: [...list], ttl: answer.ttl });
    await forEachLimited(unglued, TARGET_CONCURRENCY, async (target) => {
      // Absolute: an SRV target is a full name, the search list must not apply.
      const both = await Promise.all([cache.lookup(`${target}.`, 'A', force), cache.lookup(`${target}.`, 'AAAA', force)]);
      fold(result, both);
      addresses.set(target, collect(both));
    });
    const byKey = new Map<string, EndpointAddress>();
    for (const r of records) {
      const found = addresses.get(canonical(r.target));
      const address = found && preferred(found.list);
      if (!address) continue;
      const endpoint: EndpointAddress = {
        address,
        port: r.port,
        priority: r.priority,
        weight: r.weight,
        ttl: minimum(answer.ttl, found.ttl),
        source: 'dns+srv',
      };
      // Two records for one address and port: the preferred priority wins, then the larger weight.
      const key = endpointKey(endpoint);
      const seen = byKey.get(key);
      if (!seen || r.priority < seen.priority! || (r.priority === seen.priority && r.weight > seen.weight!)) byKey.set(key, endpoint);
    }
    result.endpoints = [...byKey.values()];
    if (result.endpoints.length === 0 && result.errors.length === 0) {
      return negative(result, new DnsError('NODATA', `${name} SRV`, 'no SRV target has an address'));
    }
    return result;
  };
}

/** `dns:`: one endpoint per A and AAAA address of the name, all on the target's port. */
export function addressLookup(name: string, port: number): DnsLookup {
  return async (cache, force) => {
    const both = await Promise.all([cache.lookup(name, 'A', force), cache.lookup(name, 'AAAA', force)]);
    const result = fold(empty(), both);
    const found = collect(both);
    result.endpoints = found.list.map((address) => ({ address, port, ttl: found.ttl, source: 'dns' }));
    if (result.endpoints.length === 0 && result.errors.length === 0) {
      const nx = both.some((r) => r.answer?.kind === 'NXDOMAIN');
      return negative(result, new DnsError(nx ? 'NXDOMAIN' : 'NODATA', `${name} A/AAAA`));
    }
    return result;
  };
}

function empty(): DnsLookupResult {
  return { endpoints: [], errors: [], stale: false, refreshAt: Infinity };
}

/** Adds the lookups' failures, staleness and refresh times to `result`. */
function fold(result: DnsLookupResult, lookups: readonly CacheResult[]): DnsLookupResult {
  for (const lookup of lookups) {
    if (lookup.error) result.errors.push(lookup.error);
    result.stale ||= lookup.stale;
    result.refreshAt = Math.min(result.refreshAt, lookup.refreshAt);
  }
  return result;
}

function negative(result: DnsLookupResult, error: DnsError): DnsLookupResult {
  // With a failure in the round, the negative is not trusted: it is reported as that failure.
  return result.errors.length > 0 ? result : { ...result, negative: error };
}

/** The addresses of A and AAAA answers, and their smallest TTL. */
function collect(lookups: readonly CacheResult[]): { list: string[]; ttl: number | undefined } {
  const list: string[] = [];
  let ttl: number | undefined;
  for (const lookup of lookups) {
    if (lookup.answer?.kind !== 'records') continue;
    ttl = minimum(ttl, lookup.answer.ttl);
    for (const address of lookup.answer.addresses) if (!list.includes(address)) list.push(address);
  }
  return { list, ttl };
}

function preferred(addresses: readonly string[]): string | undefined {
  return [...addresses].sort((a, b) => Number(isIPv4(b)) - Number(isIPv4(a)) || (a < b ? -1 : a > b ? 1 : 0))[0];
}

function minimum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

async function forEachLimited<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
