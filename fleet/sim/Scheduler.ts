import type { Clock, ClockTimer } from '../../src/clock.ts';

/** One scheduled callback; also the `ClockTimer` handle the library holds. */
interface Event {
  at: number;
  seq: number;
  run: (() => void) | undefined;
}

/**
 * Virtual time: a binary min-heap of events ordered by (time, insertion), and the `Clock` every
 * simulated balancer runs on. Time moves only from event to event, so ten simulated minutes take
 * as long as their events take to run.
 *
 * The library's resolver and prober are async (DnsResolver, DnsCache, Prober await promises the
 * simulation resolves). Their continuations are microtasks, which a synchronous loop would never
 * let run; so whenever an event may have resolved such a promise (`touch()`), the loop yields to
 * the microtask queue before virtual time moves past the current millisecond. A continuation thus
 * runs less than 1 ms of virtual time late, which no modelled behaviour can tell from on time.
 */
export class Scheduler implements Clock {
  #now = 0;
  #seq = 0;
  #heap: Event[] = [];
  /** Drains still owed: a touch asks for a few, so that chains longer than one drain finish too. */
  #owed = 0;
  /** Events run so far (for the speed report). */
  events = 0;

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    return this.at(this.#now + (ms > 0 ? ms : 0), callback);
  }

  clearTimeout(timer: ClockTimer): void {
    (timer as Event).run = undefined;
  }

  /** Runs `callback` at virtual time `at` (ms). The handle can be passed to `clearTimeout`. */
  at(at: number, callback: () => void): ClockTimer {
    const event: Event = { at, seq: this.#seq++, run: callback };
    const heap = this.#heap;
    let i = heap.length;
    heap.push(event);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (p.at < at || (p.at === at && p.seq < event.seq)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = event;
    return event;
  }

  /** Marks that a promise the library awaits was settled: let microtasks run before time moves on. */
  touch(): void {
    this.#owed = DRAINS_PER_TOUCH;
  }

  /** Runs events in order until virtual time `until` (ms); the clock ends at `until`. */
  async run(until: number): Promise<void> {
    const heap = this.#heap;
    let millisecond = Math.floor(this.#now);
    while (heap.length > 0) {
      const next = heap[0]!;
      if (next.at > until) break;
      if (this.#owed > 0 && next.at >= millisecond + 1) {
        this.#owed--;
        millisecond = Math.floor(next.at);
        await drainMicrotasks();
        continue; // the continuations may have scheduled something sooner
      }
      this.#pop();
      const run = next.run;
      if (run === undefined) continue;
      next.run = undefined;
      if (next.at > this.#now) {
        this.#now = next.at;
        millisecond = Math.floor(next.at);
      }
      this.events++;
      run();
    }
    while (this.#owed > 0) {
      this.#owed--;
      await drainMicrotasks();
    }
    this.#now = Math.max(this.#now, until);
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    const n = heap.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n) {
        const a = heap[l]!;
        const b = heap[r]!;
        if (b.at < a.at || (b.at === a.at && b.seq < a.seq)) c = r;
      }
      const child = heap[c]!;
      if (last.at < child.at || (last.at === child.at && last.seq < child.seq)) break;
      heap[i] = child;
      i = c;
    }
    heap[i] = last;
  }
}

/**
 * Lets queued microtasks, and the ones they queue in turn, run, this many hops deep. A probe's
 * continuation needs two or three; the deepest chain in the library (a DNS answer through DnsCache,
 * srvLookup and DnsResolver to the endpoint set) about twenty, which the drains a touch asks for
 * cover, a millisecond of virtual time apart at most.
 */
const DRAIN_HOPS = 8;
const DRAINS_PER_TOUCH = 4;
const RESOLVED = Promise.resolve();

async function drainMicrotasks(): Promise<void> {
  for (let i = 0; i < DRAIN_HOPS; i++) await RESOLVED;
}
