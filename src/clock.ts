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
