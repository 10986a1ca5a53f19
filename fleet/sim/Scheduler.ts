import type { Clock, ClockTimer } from '../../src/clock.ts';

/** One scheduled callback; also the `ClockTimer` handle the library holds (clearing it empties `run`). */
interface Event {
  run: (() => void) | undefined;
}

/**
 * Virtual time: a 4-ary min-heap of events ordered by (time, insertion), and the `Clock` every
 * simulated balancer runs on. Time moves only from event to event, so ten simulated minutes take
 * as long as their events take to run.
 *
 * The heap keeps its keys (time, insertion number) in typed arrays beside the events: with 5,000
 * clients it holds ~100,000 events, and comparing keys in place, rather than through one object per
 * event scattered over the heap, keeps each push and pop within a few cache lines. Four children
 * per node, not two: half the levels for ~100,000 events, and a node's children share a cache line.
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
  #size = 0;
  #events: Array<Event | undefined> = [];
  #at = new Float64Array(1024);
  #order = new Float64Array(1024);
  /** Cleared events still in the heap (a cleared timer stays until its time, unless the heap is compacted). */
  #cleared = 0;
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
    const event = timer as Event;
    if (event.run === undefined) return; // it ran, or was cleared before
    event.run = undefined;
    if (++this.#cleared > COMPACT_MIN && this.#cleared * 2 > this.#size) this.#compact();
  }

  /** Runs `callback` at virtual time `at` (ms). The handle can be passed to `clearTimeout`. */
  at(at: number, callback: () => void): ClockTimer {
    const event: Event = { run: callback };
    const seq = this.#seq++;
    if (this.#size === this.#at.length) this.#grow();
    const keys = this.#at;
    const order = this.#order;
    const events = this.#events;
    let i = this.#size++;
    // Every event already queued was inserted earlier: at an equal time, the new one goes after it.
    while (i > 0) {
      const parent = (i - 1) >> 2;
      if (keys[parent]! <= at) break;
      keys[i] = keys[parent]!;
      order[i] = order[parent]!;
      events[i] = events[parent];
      i = parent;
    }
    keys[i] = at;
    order[i] = seq;
    events[i] = event;
    return event;
  }

  /** Marks that a promise the library awaits was settled: let microtasks run before time moves on. */
  touch(): void {
    this.#owed = DRAINS_PER_TOUCH;
  }

  /** Runs events in order until virtual time `until` (ms); the clock ends at `until`. */
  async run(until: number): Promise<void> {
    let millisecond = Math.floor(this.#now);
    while (this.#size > 0) {
      const at = this.#at[0]!;
      if (at > until) break;
      if (this.#owed > 0 && at >= millisecond + 1) {
        this.#owed--;
        millisecond = Math.floor(at);
        await drainMicrotasks();
        continue; // the continuations may have scheduled something sooner
      }
      const next = this.#pop();
      const run = next.run;
      if (run === undefined) {
        this.#cleared--;
        continue;
      }
      next.run = undefined;
      if (at > this.#now) {
        this.#now = at;
        millisecond = Math.floor(at);
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

  /** Removes and returns the first event. */
  #pop(): Event {
    const events = this.#events;
    const first = events[0]!;
    const n = --this.#size;
    const last = events[n]!;
    const lastAt = this.#at[n]!;
    const lastSeq = this.#order[n]!;
    events[n] = undefined;
    if (n > 0) this.#siftDown(0, lastAt, lastSeq, last);
    return first;
  }

  /**
   * Drops the cleared events and rebuilds the heap from what is left. Most timers are cleared
   * before they fire (every request's timeout, when its answer comes), and with 5,000 clients they
   * outnumbered the live events: a heap twice as deep, and a pop for each. The order of the live
   * events is their (time, insertion) keys', so compacting changes nothing else.
   */
  #compact(): void {
    const keys = this.#at;
    const order = this.#order;
    const events = this.#events;
    let n = 0;
    for (let i = 0; i < this.#size; i++) {
      const event = events[i]!;
      if (event.run === undefined) continue;
      keys[n] = keys[i]!;
      order[n] = order[i]!;
      events[n++] = event;
    }
    for (let i = n; i < this.#size; i++) events[i] = undefined;
    this.#size = n;
    this.#cleared = 0;
    for (let i = (n - 2) >> 2; i >= 0; i--) this.#siftDown(i, keys[i]!, order[i]!, events[i]!);
  }

  /** Puts the event with keys (at, seq) at position `i` or below, moving smaller children up. */
  #siftDown(start: number, at: number, seq: number, event: Event): void {
    const keys = this.#at;
    const order = this.#order;
    const events = this.#events;
    const n = this.#size;
    let i = start;
    for (;;) {
      const first = 4 * i + 1;
      if (first >= n) break;
      // The smallest of up to four children, which sit side by side (one or two cache lines of keys).
      let c = first;
      let cAt = keys[first]!;
      const last = first + 3 < n ? first + 3 : n - 1;
      for (let k = first + 1; k <= last; k++) {
        const kAt = keys[k]!;
        if (kAt < cAt || (kAt === cAt && order[k]! < order[c]!)) {
          c = k;
          cAt = kAt;
        }
      }
      if (at < cAt || (at === cAt && seq < order[c]!)) break;
      keys[i] = cAt;
      order[i] = order[c]!;
      events[i] = events[c];
      i = c;
    }
    keys[i] = at;
    order[i] = seq;
    events[i] = event;
  }

  #grow(): void {
    const keys = new Float64Array(this.#at.length * 2);
    keys.set(this.#at);
    this.#at = keys;
    const order = new Float64Array(this.#order.length * 2);
    order.set(this.#order);
    this.#order = order;
  }
}

/**
 * Lets queued microtasks, and the ones they queue in turn, run, this many hops deep. A probe's
 * continuation needs two or three; the deepest chain in the library (a DNS answer through DnsCache,
 * srvLookup and DnsResolver to the endpoint set) about twenty, which the drains a touch asks for
 * cover, a millisecond of virtual time apart at most.
 */
const DRAIN_HOPS = 8;
/** Below this many cleared events the heap is not worth compacting. */
const COMPACT_MIN = 1024;
const DRAINS_PER_TOUCH = 4;
const RESOLVED = Promise.resolve();

async function drainMicrotasks(): Promise<void> {
  for (let i = 0; i < DRAIN_HOPS; i++) await RESOLVED;
}
