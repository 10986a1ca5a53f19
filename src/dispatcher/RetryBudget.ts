/**
 * Retries in flight may not exceed `percent` of the requests in flight plus `min` (Envoy's and
 * Finagle's defaults: 20 % and 3), so an outage of every apiserver cannot multiply the load.
 */
export class RetryBudget {
  readonly #percent: number;
  readonly #min: number;
  requests = 0;
  retries = 0;
  /** Retries refused by the budget, for stats. */
  exhausted = 0;

  constructor(percent: number, min: number) {
    this.#percent = percent;
    this.#min = min;
  }

  tryAcquire(): boolean {
    if (this.retries + 1 > (this.requests * this.#percent) / 100 + this.#min) {
      this.exhausted++;
      return false;
    }
    this.retries++;
    return true;
  }

  release(): void {
    this.retries--;
  }
}
