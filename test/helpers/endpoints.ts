import { Candidates, type SelectOptions } from '../../src/balancer/Candidates.ts';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import type { PickerOptions } from '../../src/balancer/EndpointSet.ts';
import type { Clock } from '../../src/clock.ts';
import { defaultOptions } from '../../src/options/BalancerOptions.ts';
import type { EndpointAddress } from '../../src/resolver/Resolver.ts';
import { FakeClock } from './FakeClock.ts';

/** `10.0.x.y:6443`, the i-th test address. */
export function address(i: number, extra: Partial<EndpointAddress> = {}): EndpointAddress {
  return { address: `10.0.${(i >> 8) & 255}.${i & 255}`, port: 6443, ...extra };
}

/** An endpoint that has been ready forever (no slow start), unless `readySince` says otherwise. */
export function endpoint(i: number, extra: Partial<EndpointAddress> = {}, readySince = -Infinity): Endpoint {
  return new Endpoint(address(i, extra), readySince);
}

/** Ready endpoints with these weights, as candidates of one priority level. */
export function candidatesOf(weights: readonly number[], options: Partial<SelectOptions> = {}, clock: Clock = new FakeClock()): Candidates {
  return Candidates.select(
    weights.map((weight, i) => endpoint(i, { weight })),
    { panicThreshold: 0.5, slowStartMs: 0, ...options },
    clock,
  );
}

/** A balancer's picker options left at their defaults, with `options` over them. */
export function pickerOptions(options: Partial<PickerOptions> = {}): PickerOptions {
  return { policy: defaultOptions.policy, slowStartMs: defaultOptions.slowStartMs, panicThreshold: defaultOptions.panicThreshold, ...options };
}

/** How often each endpoint was picked in `picks` calls. */
export function tally<T>(picks: number, pick: () => T): Map<T, number> {
  const counts = new Map<T, number>();
  for (let k = 0; k < picks; k++) {
    const picked = pick();
    counts.set(picked, (counts.get(picked) ?? 0) + 1);
  }
  return counts;
}

/**
 * The largest |count − ideal| of any candidate in any window of `window` consecutive picks of
 * `sequence`, where ideal = window × weight / total.
 */
export function worstWindow(sequence: readonly number[], weights: readonly number[], window: number): number {
  const total = weights.reduce((a, b) => a + b, 0);
  const counts = new Array<number>(weights.length).fill(0);
  let worst = 0;
  for (let k = 0; k < sequence.length; k++) {
    counts[sequence[k]!]!++;
    if (k >= window) counts[sequence[k - window]!]!--;
    if (k >= window - 1) {
      for (let i = 0; i < weights.length; i++) worst = Math.max(worst, Math.abs(counts[i]! - (window * weights[i]!) / total));
    }
  }
  return worst;
}
