// The two DNS lookup strategies behind `dns+srv:` and `dns:` targets, on the shared answer cache.
//
// A round may succeed in part (one target's lookup fails). Its endpoints are still used, and a
// failed lookup falls back on the last answer this strategy used for that name and type: the cache
// may have evicted it (it is bounded) or given it up (maxStale), but a failure must never shrink the
// set, whatever its size (issue 12: 600 SRV targets fell to 88 in an outage, evicted from the cache).
import { isIPv4 } from 'node:net';
import type { CacheResult } from '../dns/DnsCache.ts';
import type { DnsAnswer } from '../dns/DnsClient.ts';
import { DnsError } from '../dns/DnsError.ts';
import { canonical } from '../dns/names.ts';
import type { DnsLookup, DnsLookupResult } from './DnsResolver.ts';
import { type EndpointAddress } from './Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { unusableAddress } from './usableAddress.ts';

/** SRV targets are looked up a few at a time, so a 100-record answer does not open 200 sockets at once. */
const TARGET_CONCURRENCY = 8;

/**
 * `dns+srv:`: one endpoint per SRV record, with its priority, weight and port. The address comes
 * from the glue in the SRV answer, else from A and AAAA lookups of the target (in parallel). When a
 * target has several addresses, one is chosen — IPv4 before IPv6, then the lowest — so that a
 * dual-stack target counts once and the choice does not flap with the server's record order.
 */
export function srvLookup(name: string): DnsLookup {
  const lastGood = new LastGood();
  const srvKey = `SRV ${name}`;
  // The last fully glued answer and the endpoints it gave: most rounds get the same answer again
  // (from the cache, or a repeat of it from the server), and rebuilding the same endpoints was most
  // of a round's work and garbage (`npm run fleet`: a DNS round every ~5 s per client).
  let last: { answer: DnsAnswer; endpoints: EndpointAddress[]; dropped: readonly string[] } | undefined;
  return async (cache, force) => {
    const round = lastGood.round();
    const srv = round.use(srvKey, await cache.lookup(name, 'SRV', force));
    const result = fold(empty(), [srv]);
    const answer = srv.answer;
    if (!answer) return result;
    if (answer.kind !== 'records') return negative(result, new DnsError(answer.kind, `${name} SRV`));
    if (last && sameSrvAnswer(answer, last.answer)) {
      result.endpoints = last.endpoints;
      for (const dropped of last.dropped) result.dropped.push(dropped);
      round.end();
      return result;
    }
    last = undefined;
    // Port 0 cannot be dialled; "." is RFC 2782's "no service here".
    const records = answer.srv.filter((r) => r.target !== '.' && r.port !== 0);
    // RFC 2782: a lone target of "." means the service is decidedly not available here.
    if (records.length === 0) return negative(result, new DnsError('NODATA', `${name} SRV`, 'no usable target (only "." or port 0): no service'));
    // Built only when a target lacks glue (CoreDNS glues every one).
    let unglued: Set<string> | undefined;
    for (const r of records) {
      const target = canonical(r.target);
      if (!answer.glue.has(target)) (unglued ??= new Set()).add(target);
    }
    // Glue lists are only read (filtered into new arrays), never changed: no copies.
    const addresses = new Map<string, { list: readonly string[]; ttl: number | undefined }>();
    for (const [target, list] of answer.glue) addresses.set(target, { list, ttl: answer.ttl });
    // CoreDNS glues every target: then there is nothing to wait for (no microtask hop either).
    if (unglued) {
      await forEachLimited([...unglued], TARGET_CONCURRENCY, async (target) => {
        // Absolute: an SRV target is a full name, the search list must not apply.
        const both = await Promise.all([
          cache.lookup(`${target}.`, 'A', force).then((r) => round.use(`A ${target}`, r)),
          cache.lookup(`${target}.`, 'AAAA', force).then((r) => round.use(`AAAA ${target}`, r)),
        ]);
        fold(result, both);
        addresses.set(target, collect(both));
      });
    }
    const byKey = new Map<string, EndpointAddress>();
    for (const r of records) {
      const found = addresses.get(canonical(r.target));
      const address = found && preferred(usable(found.list, result));
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
    round.end();
    // Only an answer that needed no A/AAAA lookups is reused as it is: the others depend on them too.
    if (!unglued && result.endpoints.length > 0 && result.errors.length === 0) last = { answer, endpoints: result.endpoints, dropped: [...result.dropped] };
    if (result.endpoints.length === 0 && result.errors.length === 0) {
      return negative(result, new DnsError('NODATA', `${name} SRV`, result.dropped.length > 0 ? 'no SRV target has a usable address' : 'no SRV target has an address'));
    }
    return result;
  };
}

/** `dns:`: one endpoint per A and AAAA address of the name, all on the target's port. */
export function addressLookup(name: string, port: number): DnsLookup {
  const lastGood = new LastGood();
  return async (cache, force) => {
    const round = lastGood.round();
    const both = await Promise.all([cache.lookup(name, 'A', force), cache.lookup(name, 'AAAA', force)]);
    both[0] = round.use('A', both[0]);
    both[1] = round.use('AAAA', both[1]);
    round.end();
    const result = fold(empty(), both);
    const found = collect(both);
    result.endpoints = usable(found.list, result).map((address) => ({ address, port, ttl: found.ttl, source: 'dns' }));
    if (result.endpoints.length === 0 && result.errors.length === 0) {
      const nx = both.some((r) => r.answer?.kind === 'NXDOMAIN');
      return negative(result, new DnsError(nx ? 'NXDOMAIN' : 'NODATA', `${name} A/AAAA`, result.dropped.length > 0 ? 'no usable address' : undefined));
    }
    return result;
  };
}

/**
 * The last answer a strategy used, per name and type, for the lookups of one round to fall back on
 * when they fail without one. Only what the latest round used is kept, so it holds no more than
 * the current set needs. An answer (a negative one too) always replaces what was kept.
 */
class LastGood {
  #kept = new Map<string, DnsAnswer>();

  round(): { use(key: string, lookup: CacheResult): CacheResult; end(): void } {
    const used = new Map<string, DnsAnswer>();
    const kept = this.#kept;
    return {
      use: (key, lookup) => {
        const answer = lookup.answer ?? (lookup.error ? kept.get(key) : undefined);
        if (answer) used.set(key, answer);
        return answer === lookup.answer ? lookup : { ...lookup, answer, stale: true };
      },
      // A round that returns early (no SRV answer at all) does not end: what was kept stays. A
      // round that used what the last one did keeps the older map (most rounds: one the cache's
      // next TTL would otherwise carry out of the young generation).
      end: () => {
        if (!sameAnswers(used, kept)) this.#kept = used;
      },
    };
  }
}

function sameAnswers(a: ReadonlyMap<string, DnsAnswer>, b: ReadonlyMap<string, DnsAnswer>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, answer] of a) if (b.get(key) !== answer) return false;
  return true;
}

/** Whether two SRV answers list the same records and glue (so give the same endpoints). */
function sameSrvAnswer(a: DnsAnswer, b: DnsAnswer): boolean {
  if (a === b) return true;
  if (a.ttl !== b.ttl || a.srv.length !== b.srv.length || a.glue.size !== b.glue.size) return false;
  for (let i = 0; i < a.srv.length; i++) {
    const x = a.srv[i]!;
    const y = b.srv[i]!;
    if (x.target !== y.target || x.port !== y.port || x.priority !== y.priority || x.weight !== y.weight) return false;
  }
  for (const [target, list] of a.glue) {
    const other = b.glue.get(target);
    if (!other || other.length !== list.length || list.some((address, i) => other[i] !== address)) return false;
  }
  return true;
}

function empty(): DnsLookupResult {
  return { endpoints: [], errors: [], stale: false, refreshAt: Infinity, dropped: [] };
}

/** The addresses that can be dialled; the others go to `result.dropped` (the resolver warns). */
function usable(addresses: readonly string[], result: DnsLookupResult): string[] {
  return addresses.filter((address) => {
    const reason = unusableAddress(address);
    if (reason && !result.dropped.includes(`${address} (${reason})`)) result.dropped.push(`${address} (${reason})`);
    return reason === undefined;
  });
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
  if (addresses.length <= 1) return addresses[0];
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
