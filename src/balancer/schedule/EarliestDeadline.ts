import type { Candidates } from '../Candidates.ts';
import type { Endpoint } from '../Endpoint.ts';
import type { Schedule } from './Schedule.ts';

/**
 * Virtual time is moved back to 0 once it passes this, so that deadlines keep ~32 bits of fraction:
 * endpoints whose phases differ by a hair must not swap places through rounding.
 */
const REBASE_AT = 2 ** 20;

/**
 * Earliest deadline first on a binary heap (Envoy's and grpc-go's weighted round robin): each
 * candidate is due every `1/weight` of virtual time; a pick takes the earliest deadline and moves it
 * one period on. O(log N) per pick, for sets too large for the O(N) smooth round robin. Each
 * candidate starts at a random phase of its period (grpc-js), which both desynchronises clients and
 * avoids the burst of equal deadlines that a common start would give.
 */
export class EarliestDeadline implements Schedule {
  readonly #candidates: Candidates;
  readonly #periods: Float64Array;
  /** By candidate index. */
  readonly #deadlines: Float64Array;
  /** Candidate indices in heap order: the earliest deadline at the root. */
  readonly #heap: Int32Array;
  /** Deadline of the last pick: where virtual time stands. */
  #time = 0;

  /** Continues from `previous` when it was an EDF schedule too; new candidates start at a random phase. */
  constructor(candidates: Candidates, previous?: Schedule) {
    const n = candidates.endpoints.length;
    this.#candidates = candidates;
    this.#periods = candidates.weights.map((weight) => 1 / weight);
    this.#deadlines = new Float64Array(n);
    this.#heap = new Int32Array(n);
    // Each endpoint that stays keeps the part of its period still to run; the others start anywhere.
    const phases = new Map<Endpoint, number>();
    if (previous instanceof EarliestDeadline) {
      previous.#candidates.endpoints.forEach((endpoint, i) => {
        phases.set(endpoint, (previous.#deadlines[i]! - previous.#time) / previous.#periods[i]!);
      });
    }
    for (let i = 0; i < n; i++) {
      this.#deadlines[i] = (phases.get(candidates.endpoints[i]!) ?? Math.random()) * this.#periods[i]!;
      this.#heap[i] = i;
    }
    for (let p = (n >> 1) - 1; p >= 0; p--) this.#siftDown(p);
  }

  next(): number {
    const i = this.#heap[0]!;
    this.#advance(i, 0);
    return i;
  }

  nextExcept(exclude: ReadonlySet<Endpoint>): number {
    // A retry is rare: a scan of the heap beats keeping a second structure in step.
    const heap = this.#heap;
    const endpoints = this.#candidates.endpoints;
    let at = -1;
    for (let p = 0; p < heap.length; p++) {
      if (exclude.has(endpoints[heap[p]!]!)) continue;
      if (at < 0 || this.#before(heap[p]!, heap[at]!)) at = p;
    }
    if (at < 0) return -1;
    const i = heap[at]!;
    this.#advance(i, at);
    return i;
  }

  /** Takes candidate `i`, at heap position `at`: virtual time moves to its deadline, which moves a period on. */
  #advance(i: number, at: number): void {
    const candidates = this.#candidates;
    const deadline = this.#deadlines[i]!;
    this.#time = deadline;
    this.#deadlines[i] = deadline + (candidates.ramping ? 1 / candidates.weightAt(i, candidates.now()) : this.#periods[i]!);
    this.#siftDown(at);
    if (deadline > REBASE_AT) this.#rebase();
  }

  #before(a: number, b: number): boolean {
    const da = this.#deadlines[a]!;
    const db = this.#deadlines[b]!;
    return da < db || (da === db && a < b);
  }

  /** `#before` written out: this loop is most of a pick's cost at N = 1000. */
  #siftDown(position: number): void {
    const heap = this.#heap;
    const deadlines = this.#deadlines;
    const n = heap.length;
    const item = heap[position]!;
    const deadline = deadlines[item]!;
    let p = position;
    for (;;) {
      let child = 2 * p + 1;
      if (child >= n) break;
      let c = heap[child]!;
      let dc = deadlines[c]!;
      if (child + 1 < n) {
        const r = heap[child + 1]!;
        const dr = deadlines[r]!;
        if (dr < dc || (dr === dc && r < c)) {
          child++;
          c = r;
          dc = dr;
        }
      }
      if (dc > deadline || (dc === deadline && c > item)) break;
      heap[p] = c;
      p = child;
    }
    heap[p] = item;
  }

  #rebase(): void {
    const time = this.#time;
    for (let i = 0; i < this.#deadlines.length; i++) this.#deadlines[i] = this.#deadlines[i]! - time;
    this.#time = 0;
  }
}
