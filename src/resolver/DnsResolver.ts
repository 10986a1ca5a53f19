import type { Clock, ClockTimer } from '../clock.ts';
import type { DnsCache } from '../dns/DnsCache.ts';
import type { DnsError } from '../dns/DnsError.ts';
import { endpointSignature, inKeyOrder, sameSignature, type EndpointAddress, type Resolver, type ResolverListener } from './Resolver.ts';
import { describeDropped } from './usableAddress.ts';

/** One resolution round's outcome, as a DNS lookup strategy (SRV, A/AAAA) reports it. */
export interface DnsLookupResult {
  endpoints: EndpointAddress[];
  /** Set when there are no endpoints because DNS said so (NXDOMAIN, NODATA, SRV target "."). */
  negative?: DnsError | undefined;
  /** Lookups that failed this round (the endpoints may still come from the rest, or from stale answers). */
  errors: DnsError[];
  /** Some answer behind `endpoints` is past its TTL (served because refreshing it fails). */
  stale: boolean;
  /** Clock time (ms) when one of the answers used wants refreshing. */
  refreshAt: number;
  /** Addresses DNS listed that are never dialled (`0.0.0.0 (unspecified)`…), left out of `endpoints`. */
  dropped: string[];
}

export type DnsLookup = (cache: DnsCache, force: boolean) => Promise<DnsLookupResult>;

export interface DnsResolverOptions {
  clock: Clock;
  cache: DnsCache;
  /** How long a negative answer may stand before the last good set is given up (ms). */
  maxStale: number;
  /** The target, for messages. */
  target: string;
  /** Draws the delay of a `refresh()` (default `Math.random`). */
  random?: () => number;
}

/** The least time between a round and one that `refresh()` asks for. */
const MIN_ROUND_INTERVAL = 1_000;
/**
 * The least time between two rounds the TTLs ask for. Each answer is refreshed on its own schedule
 * (never sooner than 88 % of `minTtl` after it was fetched), so this only guards against a tight loop.
 */
const MIN_TIMER_GAP = 250;

/**
 * A resolver on DNS: runs a lookup strategy when one of the answers it used wants refreshing (only
 * that one goes to the network), or when `refresh()` asks (then every answer, at most once a
 * second), and tells the listener about real changes only.
 * A failure never touches the set; a negative answer after a good one keeps the set for `maxStale`.
 */
export class DnsResolver implements Resolver {
  readonly #lookup: DnsLookup;
  readonly #options: DnsResolverOptions;
  #listener: ResolverListener | undefined;
  /** The last set handed to the listener, in key order. */
  #current: EndpointAddress[] | undefined;
  #negativeSince: number | undefined;
  #staleWarned = false;
  /** The unusable addresses last warned about, so that each listing is warned about once. */
  #droppedWarned = '';
  /** A cached failure comes back with every lookup until its retry: report each one once. */
  readonly #reported = new WeakSet<Error>();
  #timer: ClockTimer | undefined;
  #timerAt = Infinity;
  #round: Promise<void> | undefined;
  #lastRoundAt = -Infinity;
  #force = false;
  /** When the forced round asked for is due (clock ms). */
  #forceAt = Infinity;
  #waiters: Array<() => void> = [];
  #closed = false;

  constructor(lookup: DnsLookup, options: DnsResolverOptions) {
    this.#lookup = lookup;
    this.#options = options;
  }

  start(listener: ResolverListener): void {
    if (this.#listener) throw new Error('DnsResolver.start() was called twice');
    this.#listener = listener;
    this.#options.cache.onQuery = (result) => listener.dnsQuery?.(result);
    void this.#run();
  }

  /**
   * Re-resolves, bypassing fresh cache entries, after a random delay of up to `dns.minTtl` (or at
   * the next round the TTLs ask for, if that comes sooner), and never within a second of the
   * previous round. The balancer calls it after connection failures.
   *
   * The delay is for the fleet: when an apiserver crashes, every client's connections to it fail
   * in the same second, and without it every client asked DNS in that second — one query per
   * client, 4.6 × the steady rate, echoed every TTL after (`npm run fleet -- --scenario crash`).
   * Spread over `dns.minTtl` (5 s, the TTL of cluster names), those queries come no faster than
   * the fleet's steady rate, and a round the TTLs ask for inside the window carries them at no
   * cost. Nothing waits for the answer: health has already ejected the failing endpoint, and DNS
   * itself publishes a change only seconds later (readiness probe, EndpointSlice, CoreDNS).
   */
  refresh(): void {
    if (this.#closed || !this.#listener) return;
    const { clock, cache, random = Math.random } = this.#options;
    if (!this.#force) this.#forceAt = clock.now() + random() * cache.minTtl;
    this.#force = true;
    if (!this.#round) this.#schedule(Math.max(this.#lastRoundAt + MIN_ROUND_INTERVAL, this.#forceAt));
  }

  /**
   * Re-resolves now, bypassing fresh cache entries, or one second after the previous round if that
   * was less than a second ago; resolves when that round is over, never rejects. For callers that
   * wait for the answer (tools, tests); the balancer's failures use `refresh()`.
   */
  resolveNow(): Promise<void> {
    if (this.#closed || !this.#listener) return Promise.resolve();
    this.#force = true;
    this.#forceAt = this.#options.clock.now();
    const done = new Promise<void>((resolve) => this.#waiters.push(resolve));
    if (!this.#round) this.#schedule(this.#lastRoundAt + MIN_ROUND_INTERVAL);
    return done;
  }

  /** Resolves once no round is running (a round started by a timer included). For tests and tools. */
  async settled(): Promise<void> {
    while (this.#round) await this.#round;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#options.cache.close();
    await this.#round;
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  #schedule(at: number): void {
    if (this.#closed || this.#round) return;
    const { clock } = this.#options;
    if (at <= clock.now()) {
      void this.#run();
      return;
    }
    if (this.#timer && this.#timerAt <= at) return;
    if (this.#timer) clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#run();
    }, at - clock.now());
  }

  async #run(): Promise<void> {
    if (this.#closed || this.#round) return;
    const { clock } = this.#options;
    if (this.#timer) clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const force = this.#force;
    this.#force = false;
    this.#forceAt = Infinity;
    const waiters = this.#waiters.splice(0);
    this.#lastRoundAt = clock.now();
    let next = this.#lastRoundAt + MIN_ROUND_INTERVAL;
    this.#round = this.#lookup(this.#options.cache, force)
      .then(
        (result) => {
          next = Math.max(this.#lastRoundAt + MIN_TIMER_GAP, result.refreshAt);
          if (!this.#closed) this.#apply(result);
        },
        // A lookup strategy reports failures in its result; anything thrown is a bug, not a DNS problem.
        (error: unknown) => {
          if (!this.#closed) this.#listener!.error(error instanceof Error ? error : new Error(String(error)));
        },
      )
      // A listener that throws must not stop the refresher: the next round is scheduled regardless.
      .catch(() => {});
    await this.#round;
    this.#round = undefined;
    for (const resolve of waiters) resolve();
    // A refresh that came during the round gets its own round, at least one interval after this
    // one, sooner if the TTLs ask for one before it is due.
    this.#schedule(this.#force ? Math.max(this.#lastRoundAt + MIN_ROUND_INTERVAL, Math.min(this.#forceAt, next)) : next);
  }

  #apply(result: DnsLookupResult): void {
    const listener = this.#listener!;
    const { target, maxStale, clock } = this.#options;
    for (const error of result.errors) {
      if (this.#reported.has(error)) continue;
      this.#reported.add(error);
      listener.error(error);
    }
    // Sorted: a server that shuffles its records must not make the same listing warn again.
    const droppedList = result.dropped.length === 0 ? result.dropped : [...result.dropped].sort();
    const dropped = droppedList.join(', ');
    if (dropped !== '' && dropped !== this.#droppedWarned) {
      listener.warning?.(`${target}: DNS listed addresses that are never dialled, left out: ${describeDropped(droppedList)}`);
    }
    this.#droppedWarned = dropped;
    if (result.endpoints.length > 0) {
      this.#negativeSince = undefined;
      if (result.stale && !this.#staleWarned) listener.warning?.(`${target}: DNS refresh is failing; serving the last answer past its TTL`);
      this.#staleWarned = result.stale;
      this.#emit(result.endpoints);
      return;
    }
    // A failure (no answer, not even a stale one) leaves everything as it is.
    if (!result.negative) return;
    const now = clock.now();
    const first = this.#negativeSince === undefined;
    if (first) this.#negativeSince = now;
    if (!this.#current || this.#current.length === 0) {
      if (first) listener.error(result.negative);
      return;
    }
    if (first) {
      listener.warning?.(
        `${target}: ${result.negative.message}; keeping the last ${this.#current.length} endpoint(s) for up to ${Math.round(maxStale / 1000)} s`,
      );
    } else if (now - this.#negativeSince! >= maxStale) {
      listener.warning?.(`${target}: ${result.negative.message} for ${Math.round(maxStale / 1000)} s; the DNS answer is now empty`);
      this.#emit([]);
    }
  }

  #emit(endpoints: EndpointAddress[]): void {
    const current = this.#current;
    // Small sets are compared as they are; only a large one builds both signatures.
    if (current && (sameSignature(endpoints, current) ?? endpointSignature(endpoints) === endpointSignature(current))) return;
    this.#current = inKeyOrder(endpoints);
    this.#listener!.endpoints(this.#current);
  }
}
