/**
 * Bounds retries so that an outage of every apiserver cannot multiply the load:
 * - retries in flight may not exceed `percent` % of the requests in flight plus `min` (Envoy's and
 *   Finagle's defaults: 20 % and 3);
 * - a burst beyond that (one endpoint dies and every request waiting on it fails at once) is paid
 *   from credit that successful requests earn: `percent` % of a retry per success, up to
 *   `MAX_CREDIT`. When nothing succeeds there is no credit, and only the first rule applies.
 */
export class RetryBudget {
  readonly #percent: number;
  readonly #min: number;
  #credit = 0;
  requests = 0;
  retries = 0;
  /** Retries refused, for stats. */
  refused = 0;

  constructor(percent: number, min: number) {
    this.#percent = percent;
    this.#min = min;
  }

  /** A request succeeded: it earns a share of a retry. */
  earn(): void {
    if (this.#credit < MAX_CREDIT) this.#credit = Math.min(MAX_CREDIT, this.#credit + this.#percent / 100);
  }

  tryAcquire(): boolean {
    if (this.retries + 1 <= (this.requests * this.#percent) / 100 + this.#min) {
      this.retries++;
      return true;
    }
    if (this.#credit >= 1) {
      this.#credit -= 1;
      this.retries++;
      return true;
    }
    this.refused++;
    return false;
  }

  release(): void {
    this.retries--;
  }
}

const MAX_CREDIT = 50;
