import test from 'ava';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { STALL_WATCH_MS, StallWatch } from '../../src/health/StallWatch.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { endpoint } from '../helpers/endpoints.ts';

/**
 * Three endpoints that have each answered timed GETs in 5 ms, and a watch over them on a fake
 * clock whose `suspect` records the endpoint and time and says the probe went out.
 */
function setup() {
  const clock = new FakeClock();
  const endpoints = [endpoint(1), endpoint(2), endpoint(3)];
  const suspected: Array<{ key: string; at: number }> = [];
  const watch = new StallWatch(
    clock,
    () => endpoints,
    (e: Endpoint) => {
      suspected.push({ key: e.key, at: clock.now() });
      return true;
    },
  );
  /** A timed request starts at `e`, as the balancer starts one (estimate, then watch). */
  const start = (e: Endpoint): void => {
    e.latency.begin(clock.now());
    watch.started(clock.now());
  };
  /** A timed request at `e` ends, answered after `ms`. */
  const end = (e: Endpoint, ms: number): void => {
    e.latency.end(clock.now(), ms, false);
    watch.ended(clock.now());
  };
  // Warm: 20 answers of 5 ms each, 50 ms apart, on every endpoint.
  for (let i = 0; i < 20; i++) {
    for (const e of endpoints) start(e);
    clock.advance(5);
    for (const e of endpoints) end(e, 5);
    clock.advance(45);
  }
  return { clock, endpoints, suspected, watch, start, end };
}

test('the watch is armed only while timed requests are in flight, and a lone GET clears it as it ends', (t) => {
  const { clock, endpoints, watch, start, end } = setup();
  clock.advance(10 * STALL_WATCH_MS);
  t.false(watch.armed, 'idle: no timer');
  t.is(clock.pending, 0);
  start(endpoints[0]!);
  t.true(watch.armed, 'a timed request in flight arms it');
  t.is(clock.pending, 1, 'one timer, however many requests');
  start(endpoints[1]!);
  t.is(clock.pending, 1);
  clock.advance(3);
  end(endpoints[0]!, 3);
  t.true(watch.armed, 'still one in flight');
  end(endpoints[1]!, 3);
  t.false(watch.armed, 'the last of a lone spell ended: cleared at once, no look that finds nothing');
  t.is(clock.pending, 0);
});

test('a steady client keeps one timer that looks at most every period, and stops when all is quiet', (t) => {
  const { clock, endpoints, suspected, watch, start, end } = setup();
  // One GET every 10 ms for 2 s, each answered in 2 ms: spells closer than a period apart.
  let looks = 0;
  const armedBefore = (): boolean => watch.armed;
  for (let i = 0; i < 200; i++) {
    start(endpoints[i % 3]!);
    clock.advance(2);
    end(endpoints[i % 3]!, 2);
    if (!armedBefore()) looks++;
    clock.advance(8);
  }
  t.true(looks <= 2000 / STALL_WATCH_MS + 2, `re-armed ${looks} times in 2 s: per period, not per request`);
  t.deepEqual(suspected, [], 'nothing stalled');
  clock.advance(2 * STALL_WATCH_MS);
  t.false(watch.armed, 'quiet: the next look stopped it');
  t.is(clock.pending, 0);
});

test('an endpoint whose timed requests stall is suspected (probed at once), one that answers steadily is not', (t) => {
  const { clock, endpoints, suspected, start, end } = setup();
  const [hole, steady] = endpoints as [Endpoint, Endpoint, Endpoint];
  const t0 = clock.now();
  // The hole takes 4 GETs and answers none; the steady one always has 2 in flight, one answered every 5 ms.
  for (let i = 0; i < 4; i++) start(hole);
  start(steady);
  start(steady);
  for (let ms = 0; ms < 500; ms += 5) {
    clock.advance(5);
    end(steady, 10);
    start(steady);
  }
  t.deepEqual(
    suspected.map((s) => s.key),
    [hole.key],
    'the silent endpoint only, once',
  );
  const after = suspected[0]!.at - t0;
  // A stall is 2 × 5 ms + 250 ms of silence; a look is due as it begins.
  t.true(after > 260 && after <= 262, `suspected ${after} ms after its last answer`);
  // Still silent: suspected again only once its silence has doubled.
  end(steady, 10);
  end(steady, 10);
  clock.advance(600);
  t.deepEqual(
    suspected.map((s) => s.key),
    [hole.key, hole.key],
    'once more after its silence doubled',
  );
  // Looks are at least 50 ms apart, however close the doubling is.
  t.true(suspected[1]!.at - t0 >= 2 * after && suspected[1]!.at - t0 <= 2 * after + 50, `not before, and soon after it doubled (${suspected[1]!.at - t0} ms)`);
});

test('a slow endpoint that answers one of its requests every 100 ms (its estimate) is never suspected', (t) => {
  const { clock, endpoints, suspected, start, end } = setup();
  const slow = endpoints[2]!;
  // It turns slow: its answers take 100 ms from now on, and it keeps 4 in flight for 3 s.
  for (let i = 0; i < 4; i++) start(slow);
  for (let ms = 0; ms < 3_000; ms += 100) {
    clock.advance(100);
    end(slow, 400);
    start(slow);
  }
  t.deepEqual(suspected, []);
  t.true(slow.latency.value > 100, 'its estimate followed it');
});

test('an endpoint that is not ready is left to health', (t) => {
  const { clock, endpoints, suspected, watch, start } = setup();
  const [ejected, hole] = endpoints as [Endpoint, Endpoint, Endpoint];
  ejected.state = 'ejected';
  start(ejected);
  start(hole);
  clock.advance(2_000);
  t.deepEqual(
    suspected.map((s) => s.key),
    [hole.key, hole.key, hole.key],
    'the ready one, at 2x silences; the ejected one never',
  );
  t.true(watch.armed);
});

test('a look that comes late (our own stall) waits once for what the stall left unread', (t) => {
  const fake = new FakeClock();
  // A clock that can jump ahead without running timers: its timers fire late, as in a stalled event loop.
  let lag = 0;
  const clock = { now: () => fake.now() + lag, setTimeout: fake.setTimeout.bind(fake), clearTimeout: fake.clearTimeout.bind(fake) };
  const e = endpoint(1);
  const suspected: string[] = [];
  const watch = new StallWatch(clock, () => [e], (s) => suspected.push(s.key) > 0);
  for (let i = 0; i < 10; i++) {
    e.latency.begin(clock.now());
    fake.advance(5);
    e.latency.end(clock.now(), 5, false);
  }
  e.latency.begin(clock.now());
  watch.started(clock.now());
  lag = 400;
  fake.advance(STALL_WATCH_MS);
  t.deepEqual(suspected, [], 'the look that came 400 ms late put itself off');
  // The answer that sat unread during the stall is read first.
  e.latency.end(clock.now(), 5, false);
  watch.ended(clock.now());
  fake.advance(1);
  t.deepEqual(suspected, [], 'and then found it answered');
  t.false(watch.armed, 'nothing in flight: stopped');
});

test('close() releases the timer, and the watch arms no more', (t) => {
  const { clock, endpoints, watch, start } = setup();
  start(endpoints[0]!);
  t.is(clock.pending, 1);
  watch.close();
  t.is(clock.pending, 0);
  start(endpoints[1]!);
  t.is(clock.pending, 0);
  t.false(watch.armed);
});
