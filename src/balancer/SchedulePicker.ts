import type { Candidates } from './Candidates.ts';
import type { Endpoint } from './Endpoint.ts';
import type { Picker, PickRequest, Policy } from './Picker.ts';
import type { Schedule } from './schedule/Schedule.ts';

/**
 * The load-aware pick (`#lessQueued`) leaves the weighted order only for an endpoint with less
 * than 1/`QUEUE_LEAD` of the in-flight requests per unit of weight, each count raised by
 * `QUEUE_FLOOR`: alike endpoints, lightly loaded or saturated, stay in the order's exact cycles
 * (their counts differ by a request or two), while a queue that piles up at one endpoint is
 * bypassed at once. Saturated, a queue bypassed this way still holds about twice the others',
 * enough to keep its server's seats busy: the throughput is whatever every server can serve.
 */
const QUEUE_LEAD = 2;
const QUEUE_FLOOR = 4;

/**
 * Picks from one `Candidates` snapshot: short requests in the schedule's weighted order (or by
 * power of two choices), long-running ones by open streams, retries never on an endpoint tried before.
 */
export class SchedulePicker implements Picker {
  readonly #candidates: Candidates;
  readonly #endpoints: readonly Endpoint[];
  readonly #weights: Float64Array;
  readonly #streamWeights: Float64Array;
  readonly #schedule: Schedule;
  readonly #leastRequest: boolean;
  readonly #loadAware: boolean;
  /** xorshift32 state: `Math.random()` would allocate a heap number per pick. */
  readonly #random = Int32Array.of(Math.floor(Math.random() * 0x7fffffff) | 1);

  constructor(candidates: Candidates, schedule: Schedule, policy: Policy) {
    this.#candidates = candidates;
    this.#endpoints = candidates.endpoints;
    this.#weights = candidates.weights;
    this.#streamWeights = candidates.streamWeights;
    this.#schedule = schedule;
    this.#leastRequest = policy === 'least-request';
    this.#loadAware = policy === 'weighted-round-robin';
  }

  pick(request: PickRequest): Endpoint | undefined {
    const exclude = request.exclude;
    if (request.longRunning) return this.#fewestStreams(exclude) ?? this.#fromReserve(exclude);
    if (exclude !== undefined && exclude.size > 0) {
      const i = this.#schedule.nextExcept(exclude);
      return i < 0 ? this.#fromReserve(exclude) : this.#endpoints[i];
    }
    if (this.#leastRequest) return this.#lessLoaded();
    if (this.#loadAware) return this.#lessQueued();
    return this.#endpoints[this.#schedule.next()];
  }

  /**
   * A retry that has tried every candidate may still go to a usable endpoint that takes no traffic
   * of its own: the next priority level, a weight-0 backup (Envoy's retry priority does the same).
   */
  #fromReserve(exclude: ReadonlySet<Endpoint> | undefined): Endpoint | undefined {
    return fromReserve(this.#candidates.reserve, exclude);
  }

  /**
   * A watch stays open for minutes, so counting requests says nothing about where watches are: place
   * it where open streams per unit of weight would be fewest (with equal weights, simply the fewest
   * streams); ties go to one of the tied endpoints at random. Not to the weighted order's next:
   * clients whose schedules saw the same events (an apiserver leaving, coming back) break ties alike,
   * and a fleet then piles the watches of a departed apiserver onto one of the others (`npm run
   * fleet`: 1/3 : 2/3 instead of even). Slow start does not apply: an apiserver that just came back
   * holds no watches, and filling it is the point.
   */
  #fewestStreams(exclude: ReadonlySet<Endpoint> | undefined): Endpoint | undefined {
    const endpoints = this.#endpoints;
    const weights = this.#streamWeights;
    let best = -1;
    let ties = 0;
    for (let i = 0; i < endpoints.length; i++) {
      const endpoint = endpoints[i]!;
      if (exclude?.has(endpoint)) continue;
      if (best < 0) {
        best = i;
        ties = 1;
        continue;
      }
      const mine = (endpoint.streams + 1) * weights[best]!;
      const theirs = (endpoints[best]!.streams + 1) * weights[i]!;
      if (mine > theirs) continue;
      if (mine === theirs) {
        // Reservoir sampling: each of the tied endpoints ends up chosen with equal chance.
        if (this.#nextRandom(++ties) !== 0) continue;
      } else {
        ties = 1;
      }
      best = i;
    }
    return best < 0 ? undefined : endpoints[best];
  }

  /**
   * Power of two choices: the weighted order's next endpoint against one other drawn at random; the
   * random one wins only with fewer in-flight requests per unit of weight. When load is even (or
   * light) this is exactly the weighted round robin, without the unevenness of two random draws.
   */
  #lessLoaded(): Endpoint {
    const endpoints = this.#endpoints;
    const a = this.#schedule.next();
    if (endpoints.length === 1) return endpoints[a]!;
    const b = this.#other(a);
    const ea = endpoints[a]!;
    const eb = endpoints[b]!;
    const now = this.#candidates.ramping ? this.#candidates.now() : 0;
    return eb.inFlight * this.#weightAt(a, now) < ea.inFlight * this.#weightAt(b, now) ? eb : ea;
  }

  /**
   * The load-aware policy's pick: the weighted order's next endpoint, unless one other drawn at
   * random has far fewer short requests in flight per unit of weight (`QUEUE_LEAD`). The weights follow latency, which takes answers to learn
   * (a second or two for LISTs, writes and discovery, compared per class) and compares nothing while
   * every endpoint is queueing; in-flight counts are there from the first request: saturated, a
   * slow endpoint's requests pile up and the random choice goes elsewhere (issue 27: LISTs only,
   * 0.53 of the capacities on real sockets with the weights alone). Sequential requests (none
   * in flight) and even load keep the weighted order exactly; an endpoint the weights put near 0
   * stays out at light load, though it has fewer in flight than a busy fast one.
   * Only short requests count: a watch is no load to compare.
   */
  #lessQueued(): Endpoint {
    const endpoints = this.#endpoints;
    const a = this.#schedule.next();
    if (endpoints.length === 1) return endpoints[a]!;
    const b = this.#other(a);
    const ea = endpoints[a]!;
    const eb = endpoints[b]!;
    const fa = ea.latency.inFlight + ea.relative.inFlight;
    const fb = eb.latency.inFlight + eb.relative.inFlight;
    if (fb >= fa) return ea;
    const now = this.#candidates.ramping ? this.#candidates.now() : 0;
    return (fb + QUEUE_FLOOR) * QUEUE_LEAD * this.#weightAt(a, now) < (fa + QUEUE_FLOOR) * this.#weightAt(b, now) ? eb : ea;
  }

  /** An index other than `a`, drawn at random (two endpoints or more): the second of two choices. */
  #other(a: number): number {
    const b = this.#nextRandom(this.#endpoints.length - 1);
    return b >= a ? b + 1 : b;
  }

  /** Candidate `i`'s weight at clock time `now` (read only while some candidate ramps up from slow start). */
  #weightAt(i: number, now: number): number {
    return this.#candidates.ramping ? this.#candidates.weightAt(i, now) : this.#weights[i]!;
  }

  /**
   * A pseudo-random integer in [0, below) for below ≤ 65536: xorshift32, its top 16 bits scaled by
   * a multiplication instead of a division (Lemire). Enough to draw the second choice.
   */
  #nextRandom(below: number): number {
    let x = this.#random[0]!;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#random[0] = x;
    return ((x >>> 16) * below) >>> 16;
  }
}

/** The first of `reserve` a retry has not tried (`exclude`); none for a first attempt. */
export function fromReserve(reserve: readonly Endpoint[], exclude: ReadonlySet<Endpoint> | undefined): Endpoint | undefined {
  return exclude === undefined ? undefined : reserve.find((endpoint) => !exclude.has(endpoint));
}
