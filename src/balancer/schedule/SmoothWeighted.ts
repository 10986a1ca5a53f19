import type { Candidates } from '../Candidates.ts';
import type { Endpoint } from '../Endpoint.ts';
import type { Schedule } from './Schedule.ts';

/** A random start replays at most this many picks, so that building stays within milliseconds. */
const MAX_START_PICKS = 1 << 16;

/**
 * nginx's smooth weighted round robin. Each pick adds every candidate's weight to its credit, takes
 * the candidate with the most credit and charges it the total, so credits always sum to 0 and each
 * candidate's credit is how far it is behind its share. O(N) per pick: the fastest and smoothest
 * order for the handful of apiservers a cluster has. Equal weights give plain round robin, in the
 * candidates' order.
 */
export class SmoothWeighted implements Schedule {
  readonly #candidates: Candidates;
  readonly #weights: Float64Array;
  readonly #total: number;
  /** nginx's `current_weight`, in units of weight. */
  readonly #credit: Float64Array;

  /** Continues from `previous` when it was a smooth schedule too; otherwise starts at a random point. */
  constructor(candidates: Candidates, previous?: Schedule) {
    this.#candidates = candidates;
    this.#weights = candidates.weights;
    this.#total = candidates.total;
    this.#credit = new Float64Array(candidates.endpoints.length);
    if (!(previous instanceof SmoothWeighted && this.#carryFrom(previous))) this.#randomStart();
  }

  next(): number {
    return this.#candidates.ramping ? this.#step(undefined) : this.#nextSteady();
  }

  nextExcept(exclude: ReadonlySet<Endpoint>): number {
    return this.#step(exclude);
  }

  /** The hot path: steady weights, nothing excluded. */
  #nextSteady(): number {
    const weights = this.#weights;
    const credit = this.#credit;
    const n = credit.length;
    let best = 0;
    let max = -Infinity;
    for (let i = 0; i < n; i++) {
      const c = credit[i]! + weights[i]!;
      credit[i] = c;
      if (c > max) {
        max = c;
        best = i;
      }
    }
    credit[best] = max - this.#total;
    return best;
  }

  /**
   * The general step: weights read at this moment's slow-start ramp, excluded endpoints left out of
   * the round (nginx does the same with the peers a request has tried), so they earn no credit for it.
   */
  #step(exclude: ReadonlySet<Endpoint> | undefined): number {
    const candidates = this.#candidates;
    const ramping = candidates.ramping;
    const now = ramping ? candidates.now() : 0;
    const credit = this.#credit;
    let best = -1;
    let max = -Infinity;
    let total = 0;
    for (let i = 0; i < credit.length; i++) {
      if (exclude?.has(candidates.endpoints[i]!)) continue;
      const weight = ramping ? candidates.weightAt(i, now) : this.#weights[i]!;
      const c = credit[i]! + weight;
      credit[i] = c;
      total += weight;
      if (c > max) {
        max = c;
        best = i;
      }
    }
    if (best >= 0) credit[best] = max - total;
    return best;
  }

  /**
   * Each endpoint that stays keeps how far behind or ahead it was (its credit, rescaled to the new
   * total weight), so frequent rebuilds (health changing a weight) neither reset the order nor favour
   * anyone; new endpoints start even. An unchanged set continues exactly. Returns false when no
   * candidate was there before.
   */
  #carryFrom(previous: SmoothWeighted): boolean {
    const before = new Map<Endpoint, number>();
    previous.#candidates.endpoints.forEach((endpoint, i) => before.set(endpoint, previous.#credit[i]!));
    const scale = this.#total / previous.#total;
    const credit = this.#credit;
    let sum = 0;
    let kept = 0;
    this.#candidates.endpoints.forEach((endpoint, i) => {
      const c = before.get(endpoint);
      if (c === undefined) return;
      credit[i] = c * scale;
      sum += c * scale;
      kept++;
    });
    if (kept === 0) return false;
    // Departed endpoints took their credit with them; share out the difference so credits sum to 0.
    if (sum !== 0) {
      const shift = sum / credit.length;
      for (let i = 0; i < credit.length; i++) credit[i] = credit[i]! - shift;
    }
    return true;
  }

  /**
   * Starts at a random point of the cycle, reached by replaying picks so that the order from there
   * is SWRR's own, with all its evenness. With integer weights the point is uniform over one cycle.
   */
  #randomStart(): void {
    const picks = Math.floor(Math.random() * Math.min(cycleLength(this.#weights), MAX_START_PICKS));
    for (let k = 0; k < picks; k++) this.#nextSteady();
  }
}

/**
 * Picks after which SWRR repeats: the sum of the weights over their gcd. Non-integer weights never
 * repeat exactly; then the picks it takes the lightest candidate to get one turn.
 */
function cycleLength(weights: Float64Array): number {
  let divisor = 0;
  let sum = 0;
  let integers = true;
  for (const weight of weights) {
    integers &&= Number.isInteger(weight);
    if (integers) divisor = gcd(divisor, weight);
    sum += weight;
  }
  return integers ? sum / divisor : Math.ceil(sum / Math.min(...weights));
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
