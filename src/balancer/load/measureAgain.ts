import type { LatencyEstimate } from './LatencyEstimate.ts';

/**
 * How long (ms) after its last sample a `lagging` endpoint waits to be measured again: by an
 * exploration copy of a GET (`remeasure.ts`), and by a caller's request once its estimate has aged
 * (`LoadWeights.reweigh`) where there is no copy (hedging off, a client that only writes or sends
 * heavy LISTs): then a caller pays for each such measure with a slow answer.
 *
 * The wait grows with how long the endpoint has lagged: a quarter of that, from `MEASURE_AGAIN_MS` to
 * `MAX_MEASURE_AGAIN_MS`. A copy is extra load on an apiserver that may be slow for being loaded, and a
 * fixed half-second sent a still-slow 100-ms endpoint ~1.5 copies a second, for good (simulated at
 * 10 requests a second: 13 % of the client's requests); a caller's LIST, aged back every ~1.8 s,
 * put 0.5 % of a 110-requests-a-second client's LISTs on a 5× slower apiserver for good, the light
 * load's p99 (`npm run bench -- compare`, slow-lists-light: 1.11–1.13× a Pool's). So a brief
 * slowness is measured again twice a second, a lasting one every few seconds, and a recovered
 * endpoint is seen within about a quarter of its slow spell.
 */
const MEASURE_AGAIN_MS = 500;
const MAX_MEASURE_AGAIN_MS = 4_000;
/**
 * After an answer that was fast (under half the estimate) the next measure is due after this long
 * (ms) instead: the estimate follows the median of its last samples, so it takes more fast answers
 * to believe the first, and a recovered endpoint is back a tenth of a second later, not seconds.
 */
const CONFIRM_MS = 100;

/** The wait (ms) after `estimate`'s last sample before a lagging endpoint (lagging since `laggingSince`) is measured again, at clock time `now`. */
export function measureAgainAfter(estimate: LatencyEstimate, laggingSince: number, now: number): number {
  return 2 * estimate.newest < estimate.value ? CONFIRM_MS : Math.min(MAX_MEASURE_AGAIN_MS, Math.max(MEASURE_AGAIN_MS, (now - laggingSince) / 4));
}
