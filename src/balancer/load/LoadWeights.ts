import type { Endpoint } from '../Endpoint.ts';
import { measureAgainAfter } from './measureAgain.ts';

/**
 * Load factors are recomputed at most this often (ms), on an answer, so the picker is rebuilt a few
 * times a second at most, however busy the client, and never by a timer of its own.
 */
export const REWEIGH_MS = 100;

/**
 * Cost ratios (an endpoint's latency over the fastest one's) up to this count as equal: noise
 * between alike apiservers must not move the weights, so equal servers keep exact integer weights
 * and the round robin's exact cycles.
 */
const DEAD_BAND = 1.35;
/**
 * This many ms of an endpoint's excess over the fastest are taken off before the ratio: up to it
 * the endpoint counts as equal, whatever the ratio.
 * Apiservers that answer a GET in about a millisecond differ by whatever the client's own event
 * loop did meanwhile (in `kube-balancer demo` the apiservers share its process: 1.5 against 3 ms
 * for seconds at a time), and ratios of such costs swung the weights (the demo's after-the-restarts
 * max/min 1.4–2.3 with the median-of-three estimate alone). A few ms of difference is noise to a
 * client; a slowdown of 5× of a 1-ms apiserver still shows (1 → 5 ms, factor 0.21), and a slow
 * server's factor hardly moves (20 → 100 ms: 0.006 for 0.005). Added to both sides of the ratio
 * instead, it raised that one to 0.008, and a 5× slower endpoint got a request more in nine
 * seconds at 10 requests a second than the tests allow; kept as a threshold with the ratio as
 * before (a cliff from 1 to 0.013 at 4 ms against 1), the demo's after-the-restarts max/min was 4.23.
 */
const NOISE_MS = 3;
/**
 * Above the dead band the factor is `(DEAD_BAND / ratio)^STEEPNESS`. Two needs fix it: an
 * apiserver 5× slower than the others must get almost nothing while the others have room (factor
 * 0.005, 0.3 % of the traffic among three, so that not even the 99th percentile waits for it), yet
 * when the fast ones are saturated and queueing, at twice its latency, it must take a share near
 * its capacity (factor ≈ 0.2). A power of 4 does both; 3 leaves the slow one 1 % at light load,
 * 5 starves it at saturation (simulated: three servers of 4 slots, 20/20/100 ms).
 */
const STEEPNESS = 4;
/** The smallest factor: an endpoint keeps a trickle of requests that tells when it is fast again. */
const MIN_FACTOR = 0.002;
/**
 * An endpoint that gave no sample for a while is judged less and less by its old one: its excess
 * over the fastest decays with this time constant (ms), so even at one request a second a slow
 * endpoint is tried again within seconds, and comes back if it recovered (or drops again at its
 * next slow answer).
 */
const STALE_MS = 3_000;
/**
 * The longest (ms) an endpoint's last sample keeps it out of the dead band, however slow that sample
 * was (for a lagging endpoint, after its wait to be measured again, up to 4 s: `measureAgain.ts`):
 * its excess over the fastest is clamped at what ages into the band in this time, (DEAD_BAND −
 * 1) × e^(RECOVER_MS / STALE_MS) ≈ 9.8 times the fastest's cost (a ratio of 10.8: the factor is at
 * its floor from a ratio of 6.4 on, so the clamp changes no weight now, only how long the endpoint
 * takes to age back). Unclamped it took ~3 s × ln(excess / 0.35): an endpoint that hardly gets
 * any request after one stray answer stayed out ~11 s after a 31-ms blip beside 1.5-ms peers
 * (`kube-balancer demo` under load: 1 request of 250 there in its last 5 s), ~17 s after a GET
 * that straddled a 2-s pause beside 5-ms ones (test/balancer/load/comeBack.test.ts), and a 100×
 * slow apiserver that recovered came back only after ~17 s: past the 10 s in which it is to be back.
 * The price is the other half of that: with no exploration copies (hedging off, or its credit spent)
 * a sender of a few requests a second tries a still-slow endpoint again sooner (`npm run fleet --
 * --scenario slow-apiserver`, 300 clients, 5 minutes: requests max/min over the apiservers 2.80 →
 * 2.01, round robin's 1.01; the p99 unchanged).
 */
const RECOVER_MS = 10_000;
const MAX_EXCESS = (DEAD_BAND - 1) * Math.exp(RECOVER_MS / STALE_MS);
/**
 * The noise margin (ms), dead band and steepness when the weights follow the `relative` estimates
 * (LISTs, writes, discovery; see `byPointReads`). Those are noisier than GETs of one object: each
 * answer is rescaled by its class's running mean, and a client that sends no GET of one object is
 * often one whose requests differ in cost within a class (a LIST of an empty namespace and of a
 * full one). Sequential `/version` GETs of ~1 ms on a busy test machine gave sustained costs of
 * 2–8 ms on alike endpoints; with the point reads' margin and band (3 ms, 1.35) the weights swung
 * (weight 3 of 3/1/1 got 273/114/113 of 500 instead of 300/100/100), and with a band of 2.5 still
 * 303/101/96. So: 10 ms, a band of 2 and a steeper slope, so that a 5× slower endpoint at 20 ms
 * still gets almost nothing at light load (20 → 100 ms: (2 / 5)^9, the floor), while saturated
 * its queue settles where it takes a share near its capacity. Those estimates also follow a median
 * of seven and rise over a second (`Endpoint.relative`), and are judged finely only after 16 answers and
 * a second (grossly from the 6th, `RELATIVE_COLD_NOISE_MS`). The price: a 1-ms discovery GET that turns 5 ms moves nothing.
 */
const RELATIVE_NOISE_MS = 10;
/**
 * Answers an endpoint's `relative` estimate needs before it is judged: a client's first requests
 * (its handshakes, a cold JIT) took 18–20 ms on two endpoints against 4 on the third, ~40 requests in.
 */
const RELATIVE_MIN_SAMPLES = 16;
/**
 * Nor before its first sample is this old (ms): a cold client's first second is slow and uneven
 * everywhere, and the `relative` estimate, which rises and falls over a second, would carry it.
 */
const RELATIVE_WARM_MS = 1_000;
/**
 * Before that, an endpoint is judged on gross differences only: after this many answers, with this
 * many ms off its excess. A saturated or light client's first second at plain round robin sent a
 * 100-ms server a third of its LISTs (on the fake clock 28 in the first second at 110 req/s, 3.5 %
 * of the next ten seconds' requests with the trickle after: the p99 was that server's); a cold
 * start's unevenness (18–20 ms against 4) stays inside the margin.
 */
const RELATIVE_COLD_SAMPLES = 6;
const RELATIVE_COLD_NOISE_MS = 20;
const RELATIVE_BAND = 2;
const RELATIVE_STEEPNESS = 9;
const RELATIVE_MAX_EXCESS = (RELATIVE_BAND - 1) * Math.exp(RECOVER_MS / STALE_MS);
/**
 * Requests in flight with none finishing for this many times the latency estimate, plus
 * `STALL_MS`: the endpoint stopped answering, and the time it has been silent is its cost until
 * it answers again. The margin keeps a pause of our own event loop (which delays every answer
 * alike, but not every endpoint's in the same window) from passing for a silent endpoint.
 */
const STALL_RATIO = 2;
export const STALL_MS = 250;

/**
 * How long (ms) timed requests may be in flight at an endpoint with none finishing before it has
 * stalled, given its latency estimate `ms`. Also the stall watch's test (`health/StallWatch.ts`).
 */
export function stallMs(ms: number): number {
  return STALL_RATIO * ms + STALL_MS;
}
/**
 * An endpoint is judged by its latency once it has answered this many timed requests: before that,
 * one answer that happened to be slow (a 6-ms GET beside 2-ms ones) would be all the evidence.
 */
const MIN_SAMPLES = 5;
/**
 * An endpoint whose cost (before it ages) is this many times the fastest one's or more is
 * `lagging`: its undecayed factor is (1.35 / 2.5)^4 ≈ 0.085 or less, a few per cent of the traffic
 * among three at most, so a pick there is the trickle that watches for its recovery. Saturated, a
 * slow endpoint's cost settles near twice the queueing fast ones' (factor ≈ 0.2, a share near its
 * capacity), so its picks there stay real requests. Simulated (20/20/100 ms, 4 slots each), with
 * 3 a busy machine's stalls (40 ms every 300 ms) still left 0.6 % of the callers waiting on the slow
 * one (0.09 % with 2.5); with 2 the saturated throughput fell to 0.937–0.944 of the capacities
 * (0.947–0.949 with 2.5, 0.949–0.951 with no copies). Only a cost of answers lags: an endpoint that
 * stopped answering (stalled, or its last timed request given up on) is hedging's business, and a
 * copy sent there would only hang.
 */
const LAG_RATIO = 2.5;
/**
 * How far back (ms) our own event-loop lag counts as noise (`reweigh`'s `ownLagMs`): an estimate
 * falls with a time constant of `FALL_MS` (1 s), so a sample our stall delayed weighs for about two.
 */
export const OWN_LAG_WINDOW_MS = 2_000;
/** Factors that moved by less than this ratio do not rebuild the picker. */
const NOTABLE = 1.1;

/**
 * Requests in flight that count as no queue: an endpoint's cost is its latency estimate times
 * `(inFlight + QUEUE_SLACK) / (load + QUEUE_SLACK)` when that is below 1, `load` being the in-flight
 * count its samples saw (`LatencyEstimate.load`). Saturated, latency is queueing (Little's law: it
 * grows with the requests waiting), so an endpoint whose queue has drained since its samples is
 * cheaper now than they say; without this its factor stayed low for the ~1-s fall of the estimate
 * while its queue was empty and its slots idle — the weights swung between alike endpoints a
 * busy machine made a little unequal. Simulated (three 4-slot servers, 64 at once): 20/20/22 ms
 * 0.957 → 0.986 of the capacities, 20/20/25 0.948 → 0.985 (least-request 0.985, round robin
 * 0.932/0.842), 20/20/20 with 40-ms stalls every 300 ms 0.928 → 0.963 (round robin 0.960),
 * 20/20/100 0.948 → 0.976; at light load (a request or two in flight) the slack keeps the factor
 * within 0.86–1, inside the dead band, and the 20/20/100 light-load p99 is unchanged (21.4 ms).
 * 4 and 16 did about as well saturated, 16 worse with the slow server (0.963). It only ever lowers
 * a cost: a growing queue shows in the samples themselves (they rise fast), and a silent endpoint's
 * in-flight count only grows.
 */
const QUEUE_SLACK = 8;

function drained(inFlight: number, load: number): number {
  return load === load ? Math.min(1, (inFlight + QUEUE_SLACK) / (load + QUEUE_SLACK)) : 1;
}

/**
 * Whether the weights are to follow the endpoints' `latency` (GETs of one object) rather than their
 * `relative` estimates (every other short request, `ClassCosts`): when two ready endpoints or more
 * are judged by it. Of one kind for all, since the two scales do not compare; GETs of one object
 * first, the same request on every endpoint and no rescaling.
 */
export function byPointReads(endpoints: readonly Endpoint[]): boolean {
  let judged = 0;
  for (const endpoint of endpoints) if (endpoint.state === 'ready' && endpoint.latency.samples >= MIN_SAMPLES && ++judged >= 2) return true;
  return false;
}

/**
 * Sets `loadFactor` (and `lagging`) of every endpoint from its `latency` estimate (or its
 * `relative` one, see `byPointReads`), relative to the fastest ready endpoint; an endpoint with no
 * estimate yet keeps factor 1. Returns true when some factor moved notably (the picker is to be
 * rebuilt; `lagging` is read per request, not by it).
 * `ownLagMs`: how late this process's own event loop ran lately (`OWN_LAG_WINDOW_MS`). An answer
 * waits for a stalled or CPU-starved loop before it is timed, so every sample carries up to that
 * much of ours, unevenly: it widens the noise margin. Without it a starved `kube-balancer proxy`
 * (three alike apiservers, its answers 30–1,400 ms late) read its own queueing as the apiservers'
 * latency and spread its requests 2.3–2.4× max/min.
 * `points`: `byPointReads(all)`, when the caller has it already (the exploration copies read it too).
 */
export function reweigh(all: readonly Endpoint[], now: number, ownLagMs = 0, points = byPointReads(all)): boolean {
  const list: Endpoint[] = [];
  const costs: number[] = [];
  /** Since when each cost holds: the last sample, or now for a silence. */
  const since: number[] = [];
  /** Whether each cost is of answers (its last timed request was answered, none is stalled): only those may lag. */
  const answers: boolean[] = [];
  /** The ms taken off each endpoint's excess (its estimate's noise margin). */
  const noises: number[] = [];
  let best = Infinity;
  for (const endpoint of all) {
    const estimate = points ? endpoint.latency : endpoint.relative;
    const warm = estimate.samples >= RELATIVE_MIN_SAMPLES && now - estimate.sampledSince >= RELATIVE_WARM_MS;
    const value = points ? (estimate.samples >= MIN_SAMPLES ? estimate.value : NaN) : estimate.samples >= RELATIVE_COLD_SAMPLES ? estimate.value : NaN;
    noises.push(points ? NOISE_MS : warm ? RELATIVE_NOISE_MS : RELATIVE_COLD_NOISE_MS);
    let cost = value * drained(estimate.inFlight, estimate.load);
    let at = estimate.sampledAt;
    let answered = estimate.answered;
    // A silence is told by GETs of one object only: a LIST may take seconds anywhere.
    const silent = endpoint.latency.silentFor(now);
    const stalled = endpoint.latency.samples >= MIN_SAMPLES ? silent > stallMs(endpoint.latency.value) : false;
    if (value === value && stalled) {
      cost = points ? silent : cost * (silent / endpoint.latency.value);
      at = now;
      answered = false;
    }
    list.push(endpoint);
    costs.push(cost);
    since.push(at);
    answers.push(answered);
    if (endpoint.state === 'ready' && cost < best) best = cost;
  }
  let changed = false;
  list.forEach((endpoint, i) => {
    let factor = 1;
    const cost = costs[i]!;
    const judged = cost === cost && best < Infinity && best > 0;
    const noise = noises[i]! + ownLagMs;
    const lagging = judged && answers[i]! && cost - noise >= LAG_RATIO * best;
    if (lagging && !endpoint.lagging) endpoint.laggingSince = now;
    endpoint.lagging = lagging;
    if (judged) {
      // A lagging endpoint's estimate starts to age only once it is due to be measured again, and
      // ages ten times as fast once its newest answer would not lag: the callers' next requests,
      // not the median's slow memory, tell whether it recovered.
      const estimate = points ? endpoint.latency : endpoint.relative;
      const wait = lagging ? measureAgainAfter(estimate, endpoint.laggingSince, now) : 0;
      const stale = lagging && estimate.newest - noise < LAG_RATIO * best ? STALE_MS / 10 : STALE_MS;
      const excess = Math.min(Math.max(0, cost - best - noise), (points ? MAX_EXCESS : RELATIVE_MAX_EXCESS) * best) * Math.exp(-Math.max(0, now - since[i]! - wait) / stale);
      const ratio = 1 + excess / best;
      const band = points ? DEAD_BAND : RELATIVE_BAND;
      if (ratio > band) factor = Math.max(MIN_FACTOR, (band / ratio) ** (points ? STEEPNESS : RELATIVE_STEEPNESS));
    }
    const old = endpoint.loadFactor;
    if (factor === old) return;
    const moved = factor === 1 || factor > old * NOTABLE || factor * NOTABLE < old;
    if (!moved) return;
    endpoint.loadFactor = factor;
    changed = true;
  });
  return changed;
}
