import test from 'ava';
import { LatencyEstimate } from '../../../src/balancer/load/LatencyEstimate.ts';

/** `n` samples of `ms`, one every `gap` ms from `now`; returns the time after the last. */
function feed(estimate: LatencyEstimate, now: number, n: number, ms: number, gap: number): number {
  for (let k = 0; k < n; k++) {
    now += gap;
    estimate.begin(now - ms);
    estimate.end(now, ms, false);
  }
  return now;
}

test('the first sample sets the estimate; it rises within ~300 ms and falls over ~1 s', (t) => {
  const estimate = new LatencyEstimate();
  t.true(Number.isNaN(estimate.value));
  let now = feed(estimate, 0, 1, 20, 5);
  t.is(estimate.value, 20);
  now = feed(estimate, now, 500, 20, 5); // past the first 2 s, where it falls fast too
  now = feed(estimate, now, 60, 100, 5); // 300 ms of a 5× slower server
  t.true(estimate.value > 85, `rose to ${estimate.value}`);
  feed(estimate, now, 60, 20, 5); // 300 ms back to normal
  t.true(estimate.value > 40, `falls more slowly: ${estimate.value}`);
});

test('one stray slow answer among many barely moves it', (t) => {
  const estimate = new LatencyEstimate();
  const now = feed(estimate, 0, 400, 20, 5);
  feed(estimate, now, 1, 60, 5);
  t.true(estimate.value < 23, `${estimate.value}`);
});

test('a censored outcome only raises the estimate: a fast failure never makes an endpoint look fast', (t) => {
  const estimate = new LatencyEstimate();
  estimate.begin(0);
  estimate.end(1, 1, true);
  t.true(Number.isNaN(estimate.value), 'a failure is no first sample');
  let now = feed(estimate, 0, 100, 50, 5);
  estimate.begin(now);
  estimate.end(now + 1, 1, true);
  t.is(Math.round(estimate.value), 50);
  now += 1000;
  estimate.begin(now - 900);
  estimate.end(now, 900, true); // a timeout after 900 ms
  t.is(Math.round(estimate.value), 50, 'one alone is an outlier: the median of the last three leaves it out');
  now += 1000;
  estimate.begin(now - 900);
  estimate.end(now, 900, true); // and another
  t.true(estimate.value > 800);
});

test('silentFor counts from the last answer while requests are in flight, and is 0 when none is', (t) => {
  const estimate = new LatencyEstimate();
  t.is(estimate.silentFor(100), 0);
  estimate.begin(100);
  estimate.begin(110);
  t.is(estimate.silentFor(150), 50);
  estimate.end(160, 60, false);
  t.is(estimate.silentFor(200), 40);
  estimate.end(210, 100, false);
  t.is(estimate.silentFor(300), 0);
});

test("a cold start's slow first answers are forgotten within a second; later on the estimate falls over ~1 s again", (t) => {
  const estimate = new LatencyEstimate();
  let now = feed(estimate, 0, 10, 140, 50); // 500 ms of handshakes and a cold JIT
  now = feed(estimate, now, 50, 20, 20); // then 1 s of 20-ms answers
  t.true(estimate.value < 25, `${estimate.value}`);
  now = feed(estimate, now + 5_000, 20, 140, 20); // much later, a slow patch
  feed(estimate, now, 50, 20, 20);
  t.true(estimate.value > 30, `the fall is slow again: ${estimate.value}`);
});

test('answered tells whether the last timed request to end was answered, not given up on', (t) => {
  const estimate = new LatencyEstimate();
  t.false(estimate.answered);
  estimate.begin(0);
  estimate.end(100, 100, false);
  t.true(estimate.answered);
  estimate.begin(200);
  estimate.end(260, 60, true); // a hedge won and this attempt was aborted
  t.false(estimate.answered, 'a black hole’s requests are given up on');
  t.is(estimate.value, 100, 'and the estimate kept');
  estimate.begin(300);
  estimate.end(400, 100, false);
  t.true(estimate.answered);
});

test('fastFall (a lagging endpoint, re-measured a few times a second): once two fast answers turn the median, it falls as fast as it rises', (t) => {
  const run = (fastFall: boolean): number => {
    const estimate = new LatencyEstimate();
    let now = feed(estimate, 0, 50, 4, 100);
    now = feed(estimate, now, 5, 40, 60); // a few slow answers in a row
    t.true(estimate.value > 30, `${estimate.value}`);
    // Re-measures: 500 ms on, then 100 ms after each fast answer.
    for (const gap of [500, 100, 100, 100]) {
      now += gap;
      estimate.begin(now - 4);
      estimate.end(now, 4, false, fastFall);
    }
    t.is(estimate.newest, 4);
    return estimate.value;
  };
  const slow = run(false);
  const fast = run(true);
  t.true(fast < 10, `fast fall: ${fast}`);
  t.true(slow > 25, `over FALL_MS: ${slow}`);
});
