/** How often the event loop is sampled, and how many samples are kept (6.4 s of history). */
const TICK_MS = 100;
const SAMPLES = 64;

/**
 * Measures this process's own event-loop lag, so a timeout caused by our stall (a GC pause, a busy
 * CPU) is not blamed on an apiserver. Runs on real time, never on an injected clock: lateness of
 * real timers is what it measures.
 */
export class LagMonitor {
  readonly #at = new Float64Array(SAMPLES);
  readonly #lag = new Float64Array(SAMPLES);
  #next = 0;
  #expected = performance.now() + TICK_MS;
  readonly #timer: NodeJS.Timeout;

  constructor() {
    this.#timer = setInterval(() => this.#tick(), TICK_MS).unref();
  }

  /** The largest lag (ms) seen since `since` (a `performance.now()` time), including the current one. */
  maxSince(since: number): number {
    const now = performance.now();
    let max = Math.max(0, now - this.#expected);
    for (let i = 0; i < SAMPLES; i++) if (this.#at[i]! >= since && this.#lag[i]! > max) max = this.#lag[i]!;
    return max;
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #tick(): void {
    const now = performance.now();
    this.#at[this.#next] = now;
    this.#lag[this.#next] = Math.max(0, now - this.#expected);
    this.#next = (this.#next + 1) % SAMPLES;
    this.#expected = now + TICK_MS;
  }
}
