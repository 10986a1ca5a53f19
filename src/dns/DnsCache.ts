import { LRUCache } from 'lru-cache';
import { jitteredBackoff, type Clock } from '../clock.ts';
import type { DnsAnswer, DnsClient } from './DnsClient.ts';
import { DnsError } from './DnsError.ts';
import type { QueryType } from './wire.ts';

export interface DnsCacheOptions {
  /** Milliseconds; shorter TTLs (0 included) are raised to this, so a refresher never spins. */
  minTtl: number;
  /** Milliseconds; longer TTLs are cut to this, so a membership change is seen within it. */
  maxTtl: number;
  /** Milliseconds an answer is still served after its TTL while refreshing it fails (RFC 8767). */
  maxStale: number;
}

/**
 * `minTtl` is 5 s, CoreDNS's default TTL for cluster names. A shorter TTL — dnsmasq's local records
 * have 0 — is a refresh at that pace by every client: at the former 1 s floor one client asked ~70
 * SRV queries a minute, 10,000 clients 12,000 a second. What the floor delays is only learning of an
 * apiserver that joined (one that leaves shows itself through failed connections, which refresh at
 * once). `npm run fleet -- --scenario dns-ttl0` (1,000 clients, TTL 0, one apiserver joining):
 * floor 1 s: 1,210 q/s, every client lists the newcomer within 3.9 s of its readiness (3 s of
 * that is DNS publishing it); 5 s: 242 q/s, 7.4 s; 10 s: 121 q/s, 11.9 s; 30 s: 40 q/s, 29.7 s
 * (measured with refreshes at 75–90 % of the TTL; at today's 88–98 % the rates are ~11 % lower).
 * A newcomer then slow-starts for 10 s anyway, and watches move to it only after a minute.
 */
export const dnsCacheDefaults: Readonly<DnsCacheOptions> = Object.freeze({
  minTtl: 5_000,
  maxTtl: 300_000,
  maxStale: 3_600_000,
});

/** What a lookup knows about one name and type. */
export interface CacheResult {
  /** The last answer, positive or negative; `undefined` when none was ever had (or it is too stale). */
  answer: DnsAnswer | undefined;
  /** The answer's TTL has run out and it is served only because refreshing it fails. */
  stale: boolean;
  /** The latest query failed (the answer, if any, is older). */
  error: DnsError | undefined;
  /** Clock time (ms) from which a lookup goes to the network again: refresh-ahead or retry. */
  refreshAt: number;
}

interface Entry {
  answer: DnsAnswer | undefined;
  fetchedAt: number;
  /** Clamped TTL of `answer`, ms. */
  ttl: number;
  refreshAt: number;
  failures: number;
  error: DnsError | undefined;
}

/** Retry after a failure: after 1–2 s, doubling to 15–30 s (RFC 8767's failure recheck; RFC 9520's ≥ 1 s). */
const RETRY_BASE = 2_000;
const RETRY_MAX = 30_000;
/**
 * One resolver's cache must hold every answer its rounds use, or each round evicts the answers the
 * next one needs and asks for all of them again. An SRV answer fits in 64 KiB over TCP, so it has at
 * most ~3,270 records (20 bytes each, names compressed), each target needing an A and an AAAA
 * answer: 8,192 entries cover any SRV set, at a few hundred bytes each.
 */
const DNS_CACHE_ENTRIES = 8_192;

/**
 * Answers by (name, type), on lru-cache. A lookup returns the cached answer until its refresh time
 * (88–98 % of the clamped TTL, jittered so that many clients do not ask in step), then asks again;
 * concurrent lookups of one key share one query. When a query fails, the previous answer is kept
 * and served stale for up to `maxStale`, and the next query waits a jittered, growing backoff.
 * The cache has no timers: whoever looks up decides when (the resolvers schedule by `refreshAt`).
 */
export class DnsCache {
  readonly #client: Pick<DnsClient, 'query'>;
  readonly #clock: Clock;
  readonly #options: DnsCacheOptions;
  readonly #random: () => number;
  readonly #entries: LRUCache<string, Entry>;
  readonly #inflight = new Map<string, Promise<CacheResult>>();
  readonly #abort = new AbortController();
  /**
   * Told the result of every query that went to the network (one per name and type, whatever tries
   * and search-list names it took): `success`, `NXDOMAIN`, `NODATA` or the failure's reason. For counting.
   */
  onQuery: ((result: string) => void) | undefined;

  constructor(
    client: Pick<DnsClient, 'query'>,
    clock: Clock,
    options: DnsCacheOptions = dnsCacheDefaults,
    random: () => number = Math.random,
    maxEntries = DNS_CACHE_ENTRIES,
  ) {
    this.#client = client;
    this.#clock = clock;
    this.#options = options;
    this.#random = random;
    // lru-cache on our clock; ttlResolution 0 because caching `now` would set a real timer.
    this.#entries = new LRUCache<string, Entry>({ max: maxEntries, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  /** The shortest time an answer is kept (ms): no name is asked again sooner for its TTL's sake. */
  get minTtl(): number {
    return this.#options.minTtl;
  }

  /**
   * The answer for `name` and `type`: from the cache while it is fresh, else from the network.
   * `force` asks the network even for a fresh answer (a query already under way is shared).
   * Never rejects: failures come back in `error`, next to whatever answer is still usable.
   */
  lookup(name: string, type: QueryType, force = false): Promise<CacheResult> {
    // The name as given: "api" (search list applies) and "api." (absolute) are different questions.
    const key = `${type} ${name.toLowerCase()}`;
    const entry = this.#entries.get(key);
    if (entry && !force && this.#clock.now() < entry.refreshAt) return Promise.resolve(this.#view(entry));
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = this.#fetch(key, name, type, entry).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    return pending;
  }

  /** Aborts the queries under way; their lookups resolve with what the cache had. */
  close(): void {
    this.#abort.abort();
  }

  async #fetch(key: string, name: string, type: QueryType, previous: Entry | undefined): Promise<CacheResult> {
    let answer: DnsAnswer;
    try {
      answer = await this.#client.query(name, type, this.#abort.signal);
    } catch (err) {
      const error = err instanceof DnsError ? err : new DnsError('NETWORK', `${name} ${type}`, String(err), { cause: err });
      if (error.reason === 'ABORTED') return previous ? this.#view(previous) : { answer: undefined, stale: false, error, refreshAt: Infinity };
      this.onQuery?.(error.reason);
      return this.#view(this.#failed(key, previous, error));
    }
    this.onQuery?.(answer.kind === 'records' ? 'success' : answer.kind);
    const now = this.#clock.now();
    // A negative answer without SOA comes with TTL 0 (not to be cached): `minTtl` makes that "ask again soon".
    const ttl = this.#clamp(answer.ttl);
    // Late in the TTL, so that a fleet asks about clients ÷ TTL times a second (at 75–90 % it was
    // 1.21 × that, `npm run fleet`); the last 2 % and serve-stale cover a slow answer.
    const refreshAt = now + ttl * (0.88 + 0.1 * this.#random());
    // The entry of the previous answer is refilled rather than replaced: only the cache holds it
    // (lookups get views), and a new one every TTL outlived the young generation for nothing.
    const entry: Entry = previous ?? { answer, fetchedAt: now, ttl, refreshAt, failures: 0, error: undefined };
    entry.answer = answer;
    entry.fetchedAt = now;
    entry.ttl = ttl;
    entry.refreshAt = refreshAt;
    entry.failures = 0;
    entry.error = undefined;
    this.#entries.set(key, entry, { ttl: ttl + this.#options.maxStale });
    return this.#view(entry);
  }

  #failed(key: string, previous: Entry | undefined, error: DnsError): Entry {
    const now = this.#clock.now();
    const failures = (previous?.failures ?? 0) + 1;
    // RFC 8767 §5: past the stale limit an answer is no longer served, whatever else fails.
    const usable = previous?.answer !== undefined && now < previous.fetchedAt + previous.ttl + this.#options.maxStale;
    const entry: Entry = {
      answer: usable ? previous.answer : undefined,
      fetchedAt: usable ? previous.fetchedAt : now,
      ttl: usable ? previous.ttl : 0,
      refreshAt: now + jitteredBackoff(failures, RETRY_BASE, RETRY_MAX, this.#random),
      failures,
      error,
    };
    const keep = usable ? entry.fetchedAt + entry.ttl + this.#options.maxStale - now : 0;
    this.#entries.set(key, entry, { ttl: Math.max(keep, entry.refreshAt - now + RETRY_MAX) });
    return entry;
  }

  #view(entry: Entry): CacheResult {
    const age = this.#clock.now() - entry.fetchedAt;
    const answer = age < entry.ttl + this.#options.maxStale ? entry.answer : undefined;
    return { answer, stale: answer !== undefined && age >= entry.ttl, error: entry.error, refreshAt: entry.refreshAt };
  }

  /** Seconds from the wire to clamped milliseconds. */
  #clamp(seconds: number): number {
    return Math.min(this.#options.maxTtl, Math.max(this.#options.minTtl, seconds * 1000));
  }
}
