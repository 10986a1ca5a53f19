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
