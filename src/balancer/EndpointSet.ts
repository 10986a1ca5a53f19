import { systemClock, type Clock } from '../clock.ts';
import { LAST_RESORT, type EndpointAddress } from '../resolver/Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { Candidates } from './Candidates.ts';
import { Endpoint } from './Endpoint.ts';
import { ClassCosts } from './load/ClassCosts.ts';
import { byPointReads, OWN_LAG_WINDOW_MS, REWEIGH_MS, reweigh } from './load/LoadWeights.ts';
import { dueForRemeasure } from './load/remeasure.ts';
import type { Picker, PickRequest, Policy } from './Picker.ts';
import { fromReserve, SchedulePicker } from './SchedulePicker.ts';
import { EarliestDeadline } from './schedule/EarliestDeadline.ts';
import type { Schedule } from './schedule/Schedule.ts';
import { SmoothWeighted } from './schedule/SmoothWeighted.ts';

/**
 * Up to this many candidates, smooth weighted round robin (O(N) per pick); above, earliest deadline
 * first (O(log N)). `npm run bench -- picker`: both ~10-20 ns at N = 3-10, about even at 16 (~30 ns),
 * SWRR 2-3× slower from 24 on (150 ns at 100, 2 µs at 1000). Up to the crossing SWRR is preferred for
 * its smoother order with one heavy endpoint (EDF sends the light ones in bursts when deadlines meet).
 */
export const SMOOTH_MAX_CANDIDATES = 16;

/** The largest lag (ms) of this process's event loop since a `performance.now()` time. */
interface OwnLag {
  maxSince(since: number): number;
}

export interface PickerOptions {
  policy: Policy;
  /** Milliseconds over which an endpoint that joined or came back ramps to full weight; 0: off. */
  slowStartMs: number;
  /** Fraction of ready endpoints (per priority level) below which panic mode picks among all. */
  panicThreshold: number;
}

interface EndpointSetChange {
  added: Endpoint[];
  removed: Endpoint[];
}

const none: Picker = { pick: () => undefined };

/** With no candidate at all, only retries are served, from `reserve`, as `SchedulePicker` serves them once every candidate was tried. */
function reserveOnly(reserve: readonly Endpoint[]): Picker {
  return { pick: ({ longRunning, exclude }) => (longRunning || (exclude?.size ?? 0) > 0 ? fromReserve(reserve, exclude) : undefined) };
}

/**
 * The endpoints the resolver currently lists, with their live state, and the picker over them.
 * Updates are applied as diffs: an endpoint listed before and after keeps its counters and pools.
 */
export class EndpointSet {
  readonly #clock: Clock;
  readonly #options: PickerOptions;
  readonly #endpoints = new Map<string, Endpoint>();
  #picker: Picker = none;
  #candidates: Candidates | undefined;
  /** The last schedule, carried into the next so that a rebuild continues the order. */
  #schedule: Schedule | undefined;
  #known = false;
  /**
   * Set once the set has held an endpoint other than the last resort: from then on, new endpoints
   * slow-start. (Requests that went to the configured server while discovery was under way give
   * the first apiservers found nothing to be shielded from.)
   */
  #warm = false;
  /** Whether endpoints' weights follow their load (`'weighted-round-robin'`). */
  readonly #loadAware: boolean;
  #reweighedAt = -Infinity;
  /** The lagging endpoints, as of the last reweigh, that exploration copies measure (`load/remeasure.ts`): usually none. */
  #laggards: Endpoint[] = [];
  /** Whether the weights followed GETs of one object at the last reweigh (`byPointReads`): then those measure, else the other short GETs. */
  #byPoints = false;
  /** The scale on which every other short request's latency compares endpoints (`Endpoint.relative`). */
  readonly #classes = new ClassCosts();

  /** How late our own event loop ran (health/LagMonitor): latency differences up to it are ours, not the endpoints'. */
  readonly #ownLag: OwnLag | undefined;

  /**
   * `options`: the balancer's (validated, with its defaults); `ownLag`: see `reweigh`, heeded on the
   * system clock only (the lag is real time: a fake clock's simulations keep their exact figures).
   */
  constructor(clock: Clock, options: PickerOptions, ownLag?: OwnLag) {
    this.#clock = clock;
    this.#ownLag = clock === systemClock ? ownLag : undefined;
    this.#options = { policy: options.policy, slowStartMs: options.slowStartMs, panicThreshold: options.panicThreshold };
    this.#loadAware = this.#options.policy === 'weighted-round-robin';
  }

  /** True once the resolver has produced a first set. */
  get known(): boolean {
    return this.#known;
  }

  /** True while too few endpoints are ready and every endpoint that is not removed is picked from. */
  get panic(): boolean {
    return this.#candidates?.panic ?? false;
  }

  get size(): number {
    return this.#endpoints.size;
  }

  list(): Endpoint[] {
    return [...this.#endpoints.values()];
  }

  pick(request: PickRequest): Endpoint | undefined {
    return this.#picker.pick(request);
  }

  /**
   * The steady share of every endpoint that takes traffic now (weight × health factor, scaled by its
   * priority level's load); endpoints that take none (ejected, draining, idle priority levels,
   * weight-0 backups) are absent. For decisions outside the hot path, such as moving watches.
   */
  shares(): Map<Endpoint, number> {
    const shares = new Map<Endpoint, number>();
    const candidates = this.#candidates;
    candidates?.endpoints.forEach((endpoint, i) => shares.set(endpoint, candidates.streamWeights[i]!));
    return shares;
  }

  /**
   * A request that feeds the latency estimate (a short GET of one object) goes to `endpoint` at
   * clock time `now` (read here if not given); returns it, for `shortEnded`.
   */
  timedStart(endpoint: Endpoint, now = this.#clock.now()): number {
    endpoint.latency.begin(now);
    return now;
  }

  /** Whether endpoints' weights follow their load (`'weighted-round-robin'`). */
  get loadAware(): boolean {
    return this.#loadAware;
  }

  /** A short request of class `loadClass` (`load/requestClass.ts`) goes to `endpoint` at `now`; for `shortEnded`. */
  classStart(endpoint: Endpoint, now = this.#clock.now()): number {
    endpoint.relative.begin(now);
    return now;
  }

  /**
   * A short request ended; a timed one (`startedAt` from `timedStart`, or from `classStart` with its
   * `loadClass`; else NaN) feeds the estimate
   * (`censored`: without an answer that measures serving time, see `LatencyEstimate.end`), at clock
   * time `now` (read here if not given). At most every `REWEIGH_MS` the load factors are
   * recomputed, and the picker rebuilt if one moved: the hot path stays a schedule step, and no
   * timer runs.
   */
  shortEnded(endpoint: Endpoint, startedAt: number, censored: boolean, now = this.#clock.now(), loadClass?: string): void {
    if (startedAt === startedAt) {
      if (loadClass === undefined) endpoint.latency.end(now, now - startedAt, censored, endpoint.lagging);
      else this.#classEnded(endpoint, loadClass, now - startedAt, censored, now);
    }
    if (!this.#loadAware || now - this.#reweighedAt < REWEIGH_MS) return;
    this.#reweighedAt = now;
    const all = this.list();
    this.#byPoints = byPointReads(all);
    if (reweigh(all, now, this.#ownLag?.maxSince(performance.now() - OWN_LAG_WINDOW_MS) ?? 0, this.#byPoints)) this.rebuild();
    this.#laggards = all.filter((e) => e.lagging);
  }

  /**
   * The lagging endpoint a short GET picked for `picked` is to measure by an exploration copy
   * (`dispatcher/Explore.ts`), if any: `picked` itself when it lags (a caller's GET then waits for
   * another endpoint), else one due a re-measure (`load/remeasure.ts`) if the request is of the kind
   * the weights follow, whose copy's answer feeds the estimate they read. `timed`: a GET of one
   * object; else a LIST or discovery GET of `loadClass`, copied only if light (`ClassCosts.copies`).
   * Asked per such request: the list is usually empty, and then no clock is read.
   */
  toMeasure(picked: Endpoint, timed: boolean, loadClass?: string): Endpoint | undefined {
    let endpoint: Endpoint | undefined;
    if (picked.lagging) endpoint = picked;
    else if (timed === this.#byPoints && this.#laggards.length > 0) {
      const now = this.#clock.now();
      endpoint = this.#laggards.find((e) => dueForRemeasure(e, now, timed));
    }
    return endpoint && (timed || this.#classes.copies(loadClass!)) ? endpoint : undefined;
  }

  #classEnded(endpoint: Endpoint, loadClass: string, ms: number, censored: boolean, now: number): void {
    const rescaled = this.#classes.rescale(loadClass, ms, censored);
    if (rescaled === rescaled) endpoint.relative.end(now, rescaled, censored);
    else endpoint.relative.cancel(now);
  }

  update(addresses: readonly EndpointAddress[]): EndpointSetChange {
    this.#known = true;
    const next = new Map<string, EndpointAddress>();
    for (const address of addresses) next.set(endpointKey(address), address);
    const added: Endpoint[] = [];
    const removed: Endpoint[] = [];
    for (const [key, endpoint] of this.#endpoints) {
      if (!next.has(key)) {
        endpoint.removed = true;
        this.#endpoints.delete(key);
        removed.push(endpoint);
      }
    }
    for (const [key, address] of next) {
      const existing = this.#endpoints.get(key);
      if (existing) {
        existing.relisted(address);
      } else {
        // The first endpoints have no traffic to be shielded from: a cold client starts at full weight.
        const endpoint = new Endpoint(address, this.#warm ? this.#clock.now() : -Infinity, key);
        this.#endpoints.set(key, endpoint);
        added.push(endpoint);
      }
    }
    if (addresses.some((a) => a.source !== LAST_RESORT)) this.#warm = true;
    this.rebuild();
    return { added, removed };
  }

  /** Rebuilds the picker; call after any change of state, weight, `weightFactor` or `readySince`. */
  rebuild(): void {
    const candidates = Candidates.select(this.#endpoints.values(), this.#options, this.#clock);
    // Half the rebuilds change nothing a pick reads (an ejected endpoint turning to probing, `npm
    // run fleet`): the picker and its schedule go on as they were.
    if (this.#candidates?.sameAs(candidates)) return;
    this.#candidates = candidates;
    if (candidates.endpoints.length === 0) {
      // No endpoint takes traffic, but a retry may still have its last resorts (a draining endpoint).
      this.#picker = candidates.reserve.length === 0 ? none : reserveOnly(candidates.reserve);
      return;
    }
    this.#schedule =
      candidates.endpoints.length <= SMOOTH_MAX_CANDIDATES
        ? new SmoothWeighted(candidates, this.#schedule)
        : new EarliestDeadline(candidates, this.#schedule);
    this.#picker = new SchedulePicker(candidates, this.#schedule, this.#options.policy);
  }
}
