/**
 * The `Retry-After` one APF priority level puts on its 429s, as kube-apiserver computes it since
 * 1.28 (k8s.io/apiserver pkg/util/flowcontrol/dropped_requests_tracker.go; summarised in
 * ../shared/research/landscape-2026.md, "APF 429 semantics"): it starts at 1 s; when a new second
 * with drops begins, the drops of the previous `retryAfter` seconds decide — at least
 * 3 × retryAfter doubles it (capped at 32 s, at most once per retryAfter seconds), fewer than
 * retryAfter lowers it by one.
 */
export class RetryAfter {
  #seconds = 1;
  #lastRaised = -Infinity;
  /** Drops per whole second, newest last: [second, count]. */
  readonly #history: Array<[number, number]> = [];
  #current = -1;
  #currentCount = 0;

  /** Seconds to send with the next 429. */
  get seconds(): number {
    return this.#seconds;
  }

  /** A request was rejected at virtual time `nowMs`. */
  dropped(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    if (second === this.#current) {
      this.#currentCount++;
      return;
    }
    if (this.#current >= 0) this.#history.push([this.#current, this.#currentCount]);
    this.#current = second;
    this.#currentCount = 1;
    const keep = Math.min(2 * this.#seconds, MAX_SECONDS);
    while (this.#history.length > 0 && second - this.#history[0]![0] > keep) this.#history.shift();
    this.#update(second);
  }

  #update(second: number): void {
    let drops = 0;
    for (let i = this.#history.length - 1; i >= 0; i--) {
      const [at, count] = this.#history[i]!;
      if (second - at > this.#seconds) break;
      if (at < second) drops += count;
    }
    if (second - this.#lastRaised >= this.#seconds && drops >= 3 * this.#seconds) {
      this.#seconds = Math.min(MAX_SECONDS, this.#seconds * 2);
      this.#lastRaised = second;
    } else if (drops < this.#seconds && this.#seconds > 1) {
      this.#seconds--;
    }
  }
}

const MAX_SECONDS = 32;
