import type { Clock } from '../clock.ts';

/** Credit older than this expires (Finagle's retry budget TTL). */
const WINDOW_SECONDS = 10;

/**
 * Bounds retries so that an outage of every apiserver cannot multiply the load:
 * - retries in flight may not exceed `percent` % of the requests in flight plus `min` (Envoy's and
 *   Finagle's defaults: 20 % and 3);
 * - a burst beyond that (an endpoint dies and every request waiting on it fails at once) is paid
 *   from credit that successful requests earned in the last 10 s: `percent` % of a retry each
 *   (Finagle's deposit rule, counting successes only). When nothing succeeds there is no credit,
 *   and the first rule alone applies.
 */
export class RetryBudget {
  readonly #percent: number;
  readonly #min: number;
  readonly #clock: Clock;
  /** Credit deposited per second, a ring over the window; `#second` is the newest slot's second. */
  readonly #credit = new Array<number>(WINDOW_SECONDS).fill(0);
  #second = 0;
  requests = 0;
  /** The short requests among them (the rest are watches and other long-running requests). */
  shortRequests = 0;
  retries = 0;
  /** Retries refused, for stats. */
  refused = 0;

  constructor(percent: number, min: number, clock: Clock) {
    this.#percent = percent;
    this.#min = min;
    this.#clock = clock;
    this.#second = Math.floor(clock.now() / 1000);
  }

  /** A request succeeded (at clock time `now`): it earns a share of a retry. */
  earn(now: number): void {
    this.#roll(now);
    this.#credit[this.#second % WINDOW_SECONDS]! += this.#percent / 100;
  }

  tryAcquire(): boolean {
    if (this.retries + 1 <= (this.requests * this.#percent) / 100 + this.#min || this.#spendCredit()) {
      this.retries++;
      return true;
    }
    this.refused++;
    return false;
  }

  release(): void {
    this.retries--;
  }

  /** Credit available now, for stats. */
  get credit(): number {
    this.#roll(this.#clock.now());
    return this.#credit.reduce((a, b) => a + b, 0);
  }

  #spendCredit(): boolean {
    if (this.credit < 1) return false;
    // Oldest credit first, so fresh credit lasts longest.
    let owed = 1;
    for (let i = 1; i <= WINDOW_SECONDS && owed > 0; i++) {
      const slot = (this.#second + i) % WINDOW_SECONDS;
      const take = Math.min(owed, this.#credit[slot]!);
      this.#credit[slot]! -= take;
      owed -= take;
    }
    return true;
  }

  /** Clears the slots of seconds that passed since the last call. */
  #roll(nowMs: number): void {
    const now = Math.floor(nowMs / 1000);
    for (let s = this.#second + 1; s <= now && s <= this.#second + WINDOW_SECONDS; s++) this.#credit[s % WINDOW_SECONDS] = 0;
    this.#second = Math.max(this.#second, now);
  }
}
