// An endpoint back from an ejection, under 'weighted-round-robin', on a fake clock: the real
// EndpointSet and HealthTracker, requests answered in 5 ms. What `kube-balancer demo` met under
// load: a GET that waited out its apiserver's restart (~1 s, answered while the endpoint was still
// ejected) was the last sample of its estimate when it came back, the probation request was no GET,
// and at the weights' floor it got nothing that would have measured it again (1 of 250 requests in
// the demo's last 5 s).
import test from 'ava';
import type { Endpoint } from '../../../src/balancer/Endpoint.ts';
import { EndpointSet } from '../../../src/balancer/EndpointSet.ts';
import { LatencyEstimate } from '../../../src/balancer/load/LatencyEstimate.ts';
import { HealthTracker } from '../../../src/health/HealthTracker.ts';
import { address, pickerOptions } from '../../helpers/endpoints.ts';
import { FakeClock } from '../../helpers/FakeClock.ts';

const SERVICE_MS = 5;
/** A request every 20 ms (the demo's 50 calls/s), 3 in 7 of them timed GETs (its gets among lists, creates, deletes; 7 so that every endpoint gets some). */
const GAP_MS = 20;
const SLOW_START_MS = 1_600; // the demo's at 20 s

function setup() {
  const clock = new FakeClock();
  const set = new EndpointSet(clock, pickerOptions({ policy: 'weighted-round-robin', slowStartMs: SLOW_START_MS }));
  set.update([0, 1, 2].map((i) => address(i)));
  const health = new HealthTracker(
    { consecutive5xx: 5, baseEjectionMs: 1_000, maxEjectionMs: 30_000, maxEjectionPercent: 50, probes: true },
    clock,
    { changed: () => set.rebuild(), eject: () => {}, drain: () => {}, restore: () => {} },
    () => set.list(),
    () => 0.5,
  );
  let n = 0;
  /** Sends the workload for `ms`; returns each endpoint's requests. */
  const run = (ms: number): Map<Endpoint, number> => {
    const counts = new Map<Endpoint, number>(set.list().map((e) => [e, 0]));
    for (const until = clock.now() + ms; clock.now() < until; ) {
      const endpoint = set.pick({ longRunning: false })!;
      counts.set(endpoint, counts.get(endpoint)! + 1);
      const startedAt = n++ % 7 < 3 ? set.timedStart(endpoint) : NaN;
      clock.advance(SERVICE_MS);
      set.shortEnded(endpoint, startedAt, false);
      health.success(endpoint);
      clock.advance(GAP_MS - SERVICE_MS);
    }
    return counts;
  };
  return { clock, set, health, run };
}

test('an endpoint back from an ejection is measured afresh: a GET that waited out its restart does not keep it out of rotation', (t) => {
  const { clock, set, health, run } = setup();
  const [, back] = set.list() as [Endpoint, Endpoint, Endpoint];
  run(3_000);
  t.deepEqual(
    set.list().map((e) => e.loadFactor),
    [1, 1, 1],
    'alike endpoints, alike weights',
  );
  // Two GETs are under way there when its apiserver goes down; they are answered once the
  // apiserver listens again, ~1 s later, while the endpoint is still ejected (two, for the estimate
  // follows the median of its last three samples: one alone would never enter it).
  const stuckSince = set.timedStart(back);
  const alsoStuckSince = set.timedStart(back);
  health.connectFailure(back, 'connect');
  run(1_000);
  set.shortEnded(back, stuckSince, false);
  run(200);
  set.shortEnded(back, alsoStuckSince, false);
  t.true(back.latency.value > 500, `the restart's wait is its latest sample: ${back.latency.value}`);
  // Its probation request (no GET of one object: it gives no sample) brings it back.
  t.is(back.state, 'probing');
  t.is(health.takeProbation(), back);
  clock.advance(SERVICE_MS);
  health.success(back);
  t.is(back.state, 'ready');
  // The demo's "after the restarts": it ramps up over its slow start, then takes its third.
  run(SLOW_START_MS);
  const after = run(3_000);
  const share = after.get(back)! / [...after.values()].reduce((a, b) => a + b, 0);
  t.true(share > 0.28, `its share once its slow start is over: ${share.toFixed(3)} (load factor ${back.loadFactor})`);
  t.is(back.loadFactor, 1);
});

test('an endpoint that never left, after one stray answer far slower than its peers: its weight does not move', (t) => {
  const { clock, set, run } = setup();
  const [, blipped] = set.list() as [Endpoint, Endpoint, Endpoint];
  run(3_000);
  // One GET there is answered in 2 s (a pause of that apiserver, or of ours that only its request
  // straddled); the others keep answering in 5 ms. The median of the last three samples leaves it out.
  const since = set.timedStart(blipped);
  run(2_000);
  set.shortEnded(blipped, since, false);
  for (let k = 0; k < 30; k++) {
    run(100);
    t.is(blipped.loadFactor, 1, `${(k + 1) * 100} ms after the stray answer (its estimate ${blipped.latency.value.toFixed(1)} ms)`);
  }
  t.true(clock.now() > since);
});

test('an endpoint that never left, after two slow answers far slower than its peers: back within 10 s, however slow they were', (t) => {
  const { clock, set, run } = setup();
  const [, blipped] = set.list() as [Endpoint, Endpoint, Endpoint];
  run(3_000);
  // Two GETs there wait out a 2-s pause of that apiserver; the others keep answering in 5 ms.
  const since = set.timedStart(blipped);
  const alsoSince = set.timedStart(blipped);
  run(2_000);
  set.shortEnded(blipped, since, false);
  run(100);
  set.shortEnded(blipped, alsoSince, false);
  const blippedAt = clock.now();
  run(200);
  t.true(blipped.loadFactor < 0.003, `at the floor at once: ${blipped.loadFactor}`);
  // At the floor it is hardly picked, so nothing measures it again: it comes back by aging alone.
  // Unclamped, its estimate (~120× its peers') aged into the dead band only after ~3 s × ln(120 / 0.35) ≈ 17 s.
  run(10_100 - (clock.now() - blippedAt));
  t.is(blipped.loadFactor, 1, `10.1 s after the slow answers (its estimate ${blipped.latency.value.toFixed(1)} ms)`);
  const after = run(3_000);
  const share = after.get(blipped)! / [...after.values()].reduce((a, b) => a + b, 0);
  t.true(share > 0.28, `its share over the next 3 s: ${share.toFixed(3)}`);
});

test("a 429's rest is no coming back: the estimate is kept", (t) => {
  const { set, health, run } = setup();
  const [, throttled] = set.list() as [Endpoint, Endpoint, Endpoint];
  run(3_000);
  const samples = throttled.latency.samples;
  t.true(samples > 0);
  const value = throttled.latency.value;
  health.throttled(throttled, 1_000);
  run(1_000);
  t.is(throttled.state, 'ready');
  t.true(throttled.latency.samples >= samples, `no restart: the samples of before still count (${samples} → ${throttled.latency.samples})`);
  t.false(Number.isNaN(throttled.latency.value));
  t.true(throttled.latency.samples > samples || throttled.latency.value === value);
});

test('LatencyEstimate.restart: the estimate starts over, and a request sent before gives no sample when it ends', (t) => {
  const estimate = new LatencyEstimate();
  let now = 0;
  for (let k = 0; k < 20; k++) {
    now += 20;
    estimate.begin(now - SERVICE_MS);
    estimate.end(now, SERVICE_MS, false);
  }
  t.is(Math.round(estimate.value), SERVICE_MS);
  estimate.begin(now); // under way across the restart
  now += 500;
  estimate.restart(now);
  t.true(Number.isNaN(estimate.value));
  t.is(estimate.samples, 0);
  t.is(estimate.inFlight, 1, 'what is in flight stays counted');
  now += 500;
  estimate.end(now, 1_000, false);
  t.true(Number.isNaN(estimate.value), 'sent before the restart: no sample');
  t.is(estimate.inFlight, 0);
  t.is(estimate.silentFor(now), 0);
  estimate.begin(now);
  estimate.end(now + 3, 3, false);
  t.is(estimate.value, 3, 'the first sample after the restart sets it, as a new endpoint’s');
  t.is(estimate.samples, 1);
});
