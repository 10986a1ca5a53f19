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
  /** Clock time (ms) after which the entry is gone (its TTL and `maxStale`, or the retry window). */
  expiresAt: number;
  /** When it was last looked up or stored, in `Entries`' own count: the least recently used goes first. */
  usedAt: number;
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
 * Answers by (name, type), in a small LRU table (`Entries`). A lookup returns the cached answer until its refresh time
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
  readonly #entries: Entries;
  /** Queries under way by type, then lower-cased name (no key string built per lookup). */
  readonly #inflight = new Map<QueryType, Map<string, Promise<CacheResult> | undefined>>();
  /** Queries under way (the keys of `#inflight` that are set), and queries over so far. */
  #pending = 0;
  #finished = 0;
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
    this.#entries = new Entries(maxEntries);
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
    const lower = name.toLowerCase();
    const now = this.#clock.now();
    const entry = this.#entries.get(type, lower, now);
    if (entry && !force && now < entry.refreshAt) return Promise.resolve(this.#view(entry));
    let inflight = this.#inflight.get(type);
    if (!inflight) this.#inflight.set(type, (inflight = new Map<string, Promise<CacheResult> | undefined>()));
    let pending = inflight.get(lower);
    if (!pending) {
      this.#pending++;
      const finished = this.#finished;
      pending = this.#fetch(inflight, lower, name, type, entry);
      // Unless it is over already (a client that fails at once): then there is nothing to share.
      if (this.#finished === finished) inflight.set(lower, pending);
    }
    return pending;
  }

  /** Aborts the queries under way; their lookups resolve with what the cache had. */
  close(): void {
    this.#abort.abort();
  }

  async #fetch(inflight: Map<string, Promise<CacheResult> | undefined>, lower: string, name: string, type: QueryType, previous: Entry | undefined): Promise<CacheResult> {
    try {
      let answer: DnsAnswer;
      try {
        answer = await this.#client.query(name, type, this.#abort.signal);
      } catch (err) {
        const error = err instanceof DnsError ? err : new DnsError('NETWORK', `${name} ${type}`, String(err), { cause: err });
        if (error.reason === 'ABORTED') return previous ? this.#view(previous) : { answer: undefined, stale: false, error, refreshAt: Infinity };
        this.onQuery?.(error.reason);
        return this.#view(this.#failed(type, lower, previous, error));
      }
      this.onQuery?.(answer.kind === 'records' ? 'success' : answer.kind);
      const now = this.#clock.now();
      // A negative answer without SOA comes with TTL 0 (not to be cached): `minTtl` makes that "ask again soon".
      const ttl = this.#clamp(answer.ttl);
      // Late in the TTL, so that a fleet asks about clients ÷ TTL times a second (at 75–90 % it was
      // 1.21 × that, `npm run fleet`); the last 2 % and serve-stale cover a slow answer.
      const entry: Entry = { answer, expiresAt: now + ttl + this.#options.maxStale, usedAt: 0, fetchedAt: now, ttl, refreshAt: now + ttl * (0.88 + 0.1 * this.#random()), failures: 0, error: undefined };
      this.#entries.set(type, lower, entry);
      return this.#view(entry);
    } finally {
      this.#done(inflight, lower);
    }
  }

  /**
   * The query for `lower` is over. Its name is set to `undefined` rather than deleted: a delete that
   * leaves a map nearly empty shrinks it, a new table each time (`clear` too), and that was a tenth
   * of a DNS round's garbage (`npm run fleet`). Emptied only when nothing is under way and it holds
   * many names (an SRV set's targets that came and went).
   */
  #done(inflight: Map<string, Promise<CacheResult> | undefined>, lower: string): void {
    this.#finished++;
    if (--this.#pending === 0 && inflight.size > 64) inflight.clear();
    else inflight.set(lower, undefined);
  }

  #failed(type: QueryType, lower: string, previous: Entry | undefined, error: DnsError): Entry {
    const now = this.#clock.now();
    const failures = (previous?.failures ?? 0) + 1;
    // RFC 8767 §5: past the stale limit an answer is no longer served, whatever else fails.
    const usable = previous?.answer !== undefined && now < previous.fetchedAt + previous.ttl + this.#options.maxStale;
    const entry: Entry = {
      answer: usable ? previous.answer : undefined,
      expiresAt: 0,
      usedAt: 0,
      fetchedAt: usable ? previous.fetchedAt : now,
      ttl: usable ? previous.ttl : 0,
      refreshAt: now + jitteredBackoff(failures, RETRY_BASE, RETRY_MAX, this.#random),
      failures,
      error,
    };
    const keep = usable ? entry.fetchedAt + entry.ttl + this.#options.maxStale - now : 0;
    entry.expiresAt = now + Math.max(keep, entry.refreshAt - now + RETRY_MAX);
    this.#entries.set(type, lower, entry);
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

/**
 * The cache's entries by type, then lower-cased name, at most `max` of them: the least recently
 * used goes when a new one comes, and an entry past its `expiresAt` is gone when next looked up.
 * It replaced lru-cache, whose entry arrays (keys, values, links, TTLs, start times, each its own
 * array) made a lookup touch a dozen places in memory: with thousands of simulated clients,
 * lookups were 7 % of a run (`npm run fleet`). Evicting sorts the entries, which happens only when
 * a resolver's names outgrow `max` (each round then misses anyway).
 */
class Entries {
  readonly #byType = new Map<QueryType, Map<string, Entry>>();
  readonly #max: number;
  #size = 0;
  #uses = 0;

  constructor(max: number) {
    this.#max = max;
  }

  get(type: QueryType, name: string, now: number): Entry | undefined {
    const names = this.#byType.get(type);
    const entry = names?.get(name);
    if (!entry) return undefined;
    if (now > entry.expiresAt) {
      names!.delete(name);
      this.#size--;
      return undefined;
    }
    entry.usedAt = ++this.#uses;
    return entry;
  }

  set(type: QueryType, name: string, entry: Entry): void {
    let names = this.#byType.get(type);
    if (!names) this.#byType.set(type, (names = new Map<string, Entry>()));
    if (!names.has(name)) {
      if (this.#size >= this.#max) this.#evict();
      this.#size++;
    }
    entry.usedAt = ++this.#uses;
    names.set(name, entry);
  }

  /** Drops the least recently used eighth (one at least), so that a table kept full sorts once per `max / 8` new names. */
  #evict(): void {
    const all: Array<{ names: Map<string, Entry>; name: string; usedAt: number }> = [];
    for (const names of this.#byType.values()) for (const [name, entry] of names) all.push({ names, name, usedAt: entry.usedAt });
    all.sort((a, b) => a.usedAt - b.usedAt);
    for (const { names, name } of all.slice(0, Math.max(1, this.#max >> 3))) {
      names.delete(name);
      this.#size--;
    }
  }
}
