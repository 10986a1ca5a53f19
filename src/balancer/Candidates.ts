import type { Clock } from '../clock.ts';
import { outForRefusals, type Endpoint } from './Endpoint.ts';

/**
 * Envoy's priority overprovisioning factor: a priority level keeps all of its traffic until fewer
 * than 1/1.4 ≈ 71 % of its endpoints are ready, then sheds the missing part to the next level.
 */
export const OVERPROVISIONING = 1.4;

/** Slow start begins at this fraction of the endpoint's weight (Envoy's `min_weight_percent`). */
const SLOW_START_FLOOR = 0.1;

/**
 * Health lowers an endpoint's weight with `weightFactor` in (0, 1]; a smaller factor would make its
 * share zero (or a deadline infinite), which only `state` may do.
 */
const MIN_WEIGHT_FACTOR = 1e-3;

export interface SelectOptions {
  /** Below this fraction of ready endpoints in every priority level, every endpoint is a candidate. */
  panicThreshold: number;
  /** Milliseconds an endpoint ramps up after it became ready; 0 turns slow start off. */
  slowStartMs: number;
}

/**
 * The endpoints a picker may choose from, with each one's share of the traffic: SRV priority levels
 * with Envoy's spill-over, weight-0 endpoints as the backups of their level, panic mode, and slow
 * start. Fixed for one picker snapshot; only the slow-start ramp moves with the clock.
 */
export class Candidates {
  readonly endpoints: readonly Endpoint[];
  /**
   * Steady share of each candidate: `weight × weightFactor × loadFactor`, scaled by its level's load when more
   * than one priority level carries traffic. Only ratios matter.
   */
  readonly weights: Float64Array;
  /**
   * The same shares without `loadFactor`: long-running requests are placed by open streams per unit
   * of these, since latency says nothing about where a watch belongs (Finagle's docs: peak EWMA
   * "breaks down in the presence of long polling"), and watches must not move with every slow patch.
   */
  readonly streamWeights: Float64Array;
  /** Sum of `weights`. */
  readonly total: number;
  /** True when too few endpoints were ready and every endpoint that is not removed is a candidate. */
  readonly panic: boolean;
  /**
   * Usable endpoints that are not candidates (levels the traffic does not reach, weight-0 backups),
   * in order of preference: for a retry that has tried every candidate.
   */
  readonly reserve: readonly Endpoint[];
  /** True while some candidate is in slow start; cleared for good once the last ramp ends. */
  ramping: boolean;
  readonly #clock: Clock;
  readonly #slowStartMs: number;
  /** `readySince` of each candidate still ramping, −Infinity for the others. */
  readonly #since: Float64Array;
  readonly #rampUntil: number;

  private constructor(endpoints: Endpoint[], weights: number[], streamWeights: number[], reserve: Endpoint[], panic: boolean, options: SelectOptions, clock: Clock) {
    this.endpoints = endpoints;
    this.weights = Float64Array.from(weights);
    this.streamWeights = Float64Array.from(streamWeights);
    this.total = weights.reduce((a, b) => a + b, 0);
    this.reserve = reserve;
    this.panic = panic;
    this.#clock = clock;
    this.#slowStartMs = options.slowStartMs;
    this.#since = new Float64Array(endpoints.length).fill(-Infinity);
    let rampUntil = -Infinity;
    if (options.slowStartMs > 0) {
      const now = clock.now();
      endpoints.forEach((endpoint, i) => {
        if (now - endpoint.readySince < options.slowStartMs) {
          this.#since[i] = endpoint.readySince;
          rampUntil = Math.max(rampUntil, endpoint.readySince + options.slowStartMs);
        }
      });
    }
    this.#rampUntil = rampUntil;
    this.ramping = rampUntil > -Infinity;
  }

  /**
   * Chooses the candidates among `endpoints` (in their order):
   * - Priority levels, lowest first, each take `min(1, 1.4 × ready/total)` of the traffic that the
   *   levels before them left (Envoy); the loads are normalised when all of them together are short.
   * - Within a level, weight-0 endpoints are used only when no weighted endpoint is usable, and then
   *   as if they had weight 1 (RFC 2782 errata, Go's `net`).
   * - Panic: when no level has `panicThreshold` of its endpoints ready, health is not to be trusted
   *   and every endpoint that is not removed is a candidate, each level weighted by its size, so
   *   weights of different levels (which SRV never compares) do not decide — except endpoints that
   *   refused or never answered a connection (`unreachable`), which no health check misjudged,
   *   unless every endpoint is such. Those stay in the reserve: a retry that tried every candidate
   *   goes there rather than fail (a restarted apiserver serves before a probe restores it). Outside
   *   panic the reserve ends with the endpoints out for refused connections (`outForRefusals`), then
   *   the draining ones: panic would offer them anyway, an apiserver that restarted is draining until
   *   two probes pass, and a retry there that is rejected again leaves the caller the rejection it
   *   had (docs/chaos.md, schedule 95).
   */
  static select(endpoints: Iterable<Endpoint>, options: SelectOptions, clock: Clock): Candidates {
    const listed: Endpoint[] = [];
    let levelsSeen = 0;
    for (const endpoint of endpoints) {
      if (endpoint.removed) continue;
      if (listed.length === 0 || endpoint.priority !== listed[0]!.priority) levelsSeen++;
      listed.push(endpoint);
    }
    if (levelsSeen <= 1) return Candidates.#oneLevel(listed, options, clock);
    const byPriority = new Map<number, Endpoint[]>();
    for (const endpoint of listed) {
      const level = byPriority.get(endpoint.priority);
      if (level) level.push(endpoint);
      else byPriority.set(endpoint.priority, [endpoint]);
    }
    let count = listed.length;
    let levels = [...byPriority.entries()].sort((a, b) => a[0] - b[0]).map(([, level]) => level);
    const ready = levels.map((level) => level.filter((e) => e.state === 'ready'));
    const panic =
      options.panicThreshold > 0 && levels.length > 0 && levels.every((level, k) => ready[k]!.length < options.panicThreshold * level.length);
    if (panic) {
      const reachable = levels.map((level) => level.filter((e) => !e.unreachable)).filter((level) => level.length > 0);
      if (reachable.length > 0) {
        levels = reachable;
        count = reachable.reduce((n, level) => n + level.length, 0);
      }
    }
    const loads = panic ? levels.map((level) => level.length / count) : spill(levels.map((level, k) => ready[k]!.length / level.length));
    const spread = loads.filter((load) => load > 0).length > 1;
    const chosen: Endpoint[] = [];
    const weights: number[] = [];
    const streamWeights: number[] = [];
    const reserve: Endpoint[] = [];
    levels.forEach((level, k) => {
      const load = loads[k]!;
      const usable = panic ? level : ready[k]!;
      const weighted = usable.some((e) => e.weight > 0);
      const members = weighted ? usable.filter((e) => e.weight > 0) : usable;
      if (load <= 0) {
        reserve.push(...members);
      } else {
        const steady = members.map((e) => (weighted ? e.weight : 1) * Math.max(MIN_WEIGHT_FACTOR, e.weightFactor));
        const raw = members.map((e, j) => steady[j]! * Math.max(MIN_WEIGHT_FACTOR, e.loadFactor));
        const sum = raw.reduce((a, b) => a + b, 0);
        const steadySum = steady.reduce((a, b) => a + b, 0);
        members.forEach((e, j) => {
          chosen.push(e);
          // With one level carrying everything, integer weights stay integers: exact ties, exact cycles.
          weights.push(spread ? (load * raw[j]!) / sum : raw[j]!);
          streamWeights.push(spread ? (load * steady[j]!) / steadySum : steady[j]!);
        });
      }
      if (weighted) reserve.push(...usable.filter((e) => e.weight === 0));
    });
    if (panic) reserve.push(...listed.filter((e) => e.unreachable));
    else lastResorts(listed, reserve);
    return new Candidates(chosen, weights, streamWeights, reserve, panic, options, clock);
  }

  /**
   * `select` for endpoints of one priority level (a cluster's apiservers, almost always): the same
   * choice without the per-level maps and arrays. One level carrying traffic takes all of it, so
   * weights are its members' raw ones (no spread to scale by); it carries none when nothing in it
   * is ready (outside panic).
   */
  static #oneLevel(level: Endpoint[], options: SelectOptions, clock: Clock): Candidates {
    let ready = 0;
    for (const endpoint of level) if (endpoint.state === 'ready') ready++;
    const panic = options.panicThreshold > 0 && level.length > 0 && ready < options.panicThreshold * level.length;
    let usable: Endpoint[];
    if (panic) {
      usable = level.filter((e) => !e.unreachable);
      if (usable.length === 0) usable = level;
    } else {
      usable = ready === level.length ? level : level.filter((e) => e.state === 'ready');
    }
    const chosen: Endpoint[] = [];
    const weights: number[] = [];
    const streamWeights: number[] = [];
    const reserve: Endpoint[] = [];
    let weighted = false;
    for (const endpoint of usable) if (endpoint.weight > 0) weighted = true;
    for (const endpoint of usable) {
      if (weighted && endpoint.weight === 0) continue;
      const steady = (weighted ? endpoint.weight : 1) * Math.max(MIN_WEIGHT_FACTOR, endpoint.weightFactor);
      chosen.push(endpoint);
      weights.push(steady * Math.max(MIN_WEIGHT_FACTOR, endpoint.loadFactor));
      streamWeights.push(steady);
    }
    if (weighted) for (const endpoint of usable) if (endpoint.weight === 0) reserve.push(endpoint);
    if (panic && usable !== level) for (const endpoint of level) if (endpoint.unreachable) reserve.push(endpoint);
    if (!panic && ready < level.length) lastResorts(level, reserve);
    return new Candidates(chosen, weights, streamWeights, reserve, panic, options, clock);
  }

  /**
   * True when `other` would pick exactly as this one: the same candidates in the same order with
   * the same shares, the same reserve and panic, and neither in slow start (a ramp reads the clock).
   */
  sameAs(other: Candidates): boolean {
    if (this.ramping || other.ramping || this.panic !== other.panic) return false;
    const n = this.endpoints.length;
    if (other.endpoints.length !== n || other.reserve.length !== this.reserve.length) return false;
    for (let i = 0; i < n; i++) {
      if (this.endpoints[i] !== other.endpoints[i] || this.weights[i] !== other.weights[i] || this.streamWeights[i] !== other.streamWeights[i]) return false;
    }
    for (let i = 0; i < this.reserve.length; i++) if (this.reserve[i] !== other.reserve[i]) return false;
    return true;
  }

  /** The clock, for a pick while `ramping`; clears `ramping` once every ramp is over. */
  now(): number {
    const now = this.#clock.now();
    if (now >= this.#rampUntil) this.ramping = false;
    return now;
  }

  /**
   * Candidate `i`'s weight at time `now`: from 10 % of its steady weight when it became ready,
   * linearly to 100 % after `slowStartMs`. Read per pick, so the ramp follows the clock even when
   * requests are rare.
   */
  weightAt(i: number, now: number): number {
    const weight = this.weights[i]!;
    const elapsed = now - this.#since[i]!;
    if (elapsed >= this.#slowStartMs) return weight;
    return weight * (SLOW_START_FLOOR + ((1 - SLOW_START_FLOOR) * Math.max(0, elapsed)) / this.#slowStartMs);
  }
}

/** Envoy's priority load: each level takes its health, up to what the levels before it left over. */
function spill(readyFractions: number[]): number[] {
  let left = 1;
  const loads = readyFractions.map((fraction) => {
    const load = Math.min(left, Math.min(1, OVERPROVISIONING * fraction));
    left -= load;
    return load;
  });
  const carried = 1 - left;
  return carried > 0 && left > 1e-12 ? loads.map((load) => load / carried) : loads;
}

/** Outside panic, what a retry that tried every candidate may still use: refused ones first, then draining ones. */
function lastResorts(endpoints: readonly Endpoint[], reserve: Endpoint[]): void {
  for (const endpoint of endpoints) if (outForRefusals(endpoint)) reserve.push(endpoint);
  for (const endpoint of endpoints) if (endpoint.state === 'draining') reserve.push(endpoint);
}
