import type { Endpoint } from '../Endpoint.ts';
import { measureAgainAfter } from './measureAgain.ts';

/**
 * A `lagging` endpoint that has given no sample for a while, and has no measured request in
 * flight, is measured again: the next request of the kind the weights follow (`byPointReads`: GETs
 * of one object, else the other short GETs, LISTs and discovery) sends it an exploration copy
 * (`dispatcher/Explore.ts`), whose answer only feeds its estimate, while the caller's own request
 * goes where it was picked.
 *
 * Why paced by time and not by its share: a lagging endpoint's factor is at or near the floor
 * (0.002), and at ~50 requests a second that is no request at all for seconds. `kube-balancer demo`
 * traced it: an apiserver whose point-read estimate rose 6 → 12 → 40 ms in half a second (its
 * peers at 3–5 ms) got no request that would measure it again from 25.9 to 31 s, back only when its
 * estimate aged (`STALE_MS`), and the after-the-restarts max/min was 7.65. A copy half a second
 * after its last sample sees a blip's end within about a second, at any request rate, and never
 * makes a caller wait on the slow endpoint.
 *
 * The wait (`measureAgain.ts`) grows with how long the endpoint has lagged. Each copy is also paid
 * like a hedge — an earned hedge above hedging's reserve, and a unit of the retry budget while it
 * runs — so over time copies are at most the 2 % of answered requests that hedges are earned at,
 * and none when hedging is off (then a caller's request measures it, once its estimate has aged).
 * Its fresh slow samples keep it from aging back into the rotation: a slow endpoint stays at the
 * floor while it is slow.
 */

/** Whether `endpoint` (lagging, as of the last reweigh) is due a re-measure at clock time `now`; `points`: the weights follow GETs of one object. */
export function dueForRemeasure(endpoint: Endpoint, now: number, points: boolean): boolean {
  const estimate = points ? endpoint.latency : endpoint.relative;
  if (!endpoint.lagging || endpoint.state !== 'ready' || endpoint.removed || estimate.inFlight > 0) return false;
  return now - estimate.sampledAt >= measureAgainAfter(estimate, endpoint.laggingSince, now);
}
