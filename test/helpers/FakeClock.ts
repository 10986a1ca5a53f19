import type { Clock, ClockTimer } from '../../src/clock.ts';

interface Scheduled {
  at: number;
  seq: number;
  callback: () => void;
}

/** A manual clock: time moves only through `advance`, which runs due timers in order. */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Map<ClockTimer, Scheduled>();

  constructor(start = 1_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    const handle = {};
    this.#timers.set(handle, { at: this.#now + Math.max(0, ms), seq: this.#seq++, callback });
    return handle;
  }

  clearTimeout(timer: ClockTimer): void {
    this.#timers.delete(timer);
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: [ClockTimer, Scheduled] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= end && (!next || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].seq < next[1].seq))) next = entry;
      }
      if (!next) break;
      this.#timers.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].callback();
    }
    this.#now = end;
  }
}
