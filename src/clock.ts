/**
 * Time as the balancer sees it. Everything that waits or measures (slow start, ejection, probes, DNS
 * TTLs) goes through one `Clock`, so tests can drive it with a fake one.
 */
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Like `setTimeout`, but the returned handle never keeps the process alive. */
  setTimeout(callback: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

export type ClockTimer = object;

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/**
 * The wait before retrying after `failures` failures in a row: `baseMs` doubling up to `maxMs`, then a
 * random point in the upper half of that, so that clients which failed together do not retry in step,
 * at the cap included.
 */
export function jitteredBackoff(failures: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 16));
  return ceiling * (0.5 + 0.5 * random());
}

/**
 * A one-shot timer patient with our own stalls. A timer that fires late (GC, a busy CPU) runs before
 * the I/O that came meanwhile is read, so what it would conclude then (an endpoint silent, a request
 * waiting too long, a probe unanswered) may be our stall rather than theirs. Fired `lateMs()` or
 * more after it was due, it waits once more, 1 ms, so that its callback sees what came meanwhile.
 */
export class PatientTimer {
  readonly #clock: Clock;
  readonly #callback: (now: number) => void;
  readonly #lateMs: () => number;
  readonly #fire = (): void => this.#fired();
  #timer: ClockTimer | undefined;
  #dueAt = 0;
  /** The firing due now was put off once already. */
  #deferred = false;

  /** `callback` gets the clock time it runs at. */
  constructor(clock: Clock, callback: (now: number) => void, lateMs: () => number) {
    this.#clock = clock;
    this.#callback = callback;
    this.#lateMs = lateMs;
  }

  get armed(): boolean {
    return this.#timer !== undefined;
  }

  /** When it is due to fire (clock ms); meaningful while `armed`. */
  get dueAt(): number {
    return this.#dueAt;
  }

  /** Fires in `ms` from `now` (rearmed if it was armed). */
  arm(ms: number, now = this.#clock.now()): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#deferred = false;
    this.#dueAt = now + ms;
    this.#timer = this.#clock.setTimeout(this.#fire, ms);
  }

  clear(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #fired(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    if (!this.#deferred && now - this.#dueAt >= this.#lateMs()) {
      this.#deferred = true;
      this.#dueAt = now + 1;
      this.#timer = this.#clock.setTimeout(this.#fire, 1);
      return;
    }
    this.#deferred = false;
    this.#callback(now);
  }
}
