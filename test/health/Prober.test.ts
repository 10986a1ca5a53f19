import test from 'ava';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { HealthTracker } from '../../src/health/HealthTracker.ts';
import { Prober, type ProbeSettings } from '../../src/health/Prober.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { endpoint } from '../helpers/endpoints.ts';

const INTERVAL = 2_000;
const SETTINGS: ProbeSettings = { path: '/readyz', intervalMs: INTERVAL, timeoutMs: 1_000, headers: {} };

/**
 * A prober over one endpoint on a fake clock, with passive health from a real HealthTracker.
 * random 0.5: the first probe comes at half an interval, each next one exactly an interval later.
 */
function setup() {
  const clock = new FakeClock();
  const target = endpoint(1);
  const health = new HealthTracker(
    { consecutive5xx: 5, baseEjectionMs: 60_000, maxEjectionMs: 300_000, maxEjectionPercent: 100, probes: true },
    clock,
    { changed: () => {}, eject: () => {}, drain: () => {}, restore: () => {} },
    () => [target],
    () => 0.5,
  );
  const probedAt: number[] = [];
  const prober = new Prober(
    SETTINGS,
    clock,
    (probed: Endpoint) => {
      probedAt.push(clock.now());
      // As ProbeSender: the probe's answer moves the progress clock (and is no reason to skip the next probe).
      probed.lastAnswerAt = clock.now();
      return Promise.resolve(probed.state === 'ready' || probed.state === 'draining' ? 'pass' : 'connect');
    },
    () => {},
    () => 0.5,
  );
  prober.add(target);
  /** Moves time on by `ms` in 100 ms steps, letting each probe's continuation (re)schedule the next. */
  const advance = async (ms: number, each?: () => void): Promise<void> => {
    for (let t = 0; t < ms; t += 100) {
      each?.();
      clock.advance(100);
      for (let i = 0; i < 5; i++) await Promise.resolve();
    }
  };
  /** The endpoint sent something now (a response, a piece of a body): its progress clock moves. */
  const answer = (): void => void (target.lastAnswerAt = clock.now());
  return { clock, target, health, prober, probedAt, advance, answer };
}

test('an idle ready endpoint is probed every interval', async (t) => {
  const { prober, probedAt, advance } = setup();
  await advance(20 * INTERVAL);
  t.is(probedAt.length, 20);
  prober.close();
});

test('a ready endpoint that sent anything (its progress clock) within the interval skips its probe, but /readyz is still read every 5 intervals', async (t) => {
  const { prober, probedAt, advance, answer } = setup();
  // A request succeeds every 500 ms: passive health is always fresh.
  let tick = 0;
  await advance(20 * INTERVAL, () => {
    if (tick++ % 5 === 0) answer();
  });
  // 20 intervals: 4 probes (one after every 4 skipped), not 20.
  t.is(probedAt.length, 4);
  for (let i = 1; i < probedAt.length; i++) t.is(probedAt[i]! - probedAt[i - 1]!, 5 * INTERVAL);
  prober.close();
});

test('a success older than one interval does not skip the probe', async (t) => {
  const { clock, prober, probedAt, advance, answer } = setup();
  const start = clock.now();
  answer();
  // The first probe, half an interval later, is skipped; the next, 1.5 intervals after the success, is sent.
  await advance(1.5 * INTERVAL + 100);
  t.deepEqual(probedAt, [start + 1.5 * INTERVAL]);
  prober.close();
});

test('requests in flight and no success for a quarter of the probe timeout: the probe is sent (a black hole may have begun)', async (t) => {
  const { clock, target, prober, probedAt, advance, answer } = setup();
  const start = clock.now();
  // Answers stop 700 ms in, with requests still outstanding; the first probe (at 1,000 ms) comes
  // 300 ms after the last success, more than 250 ms: it is sent, not skipped.
  await advance(700, () => answer());
  target.inFlight = 3;
  await advance(400);
  t.deepEqual(probedAt, [start + INTERVAL / 2]);
  // With nothing in flight the same quiet is an idle endpoint's: the next probe is skipped.
  target.inFlight = 0;
  answer();
  await advance(INTERVAL);
  t.is(probedAt.length, 1);
  prober.close();
});

test('open watches are not requests waiting for an answer: an endpoint holding only watches still skips its probe after a success', async (t) => {
  const { clock, target, prober, probedAt, advance, answer } = setup();
  const start = clock.now();
  // Three watches open for the whole run (long-running: counted in inFlight and in streams).
  target.inFlight = 3;
  target.streams = 3;
  // A success 800 ms before the probe falls due: fresh, though far older than a quarter of the probe timeout.
  await advance(200);
  answer();
  await advance(INTERVAL);
  t.deepEqual(probedAt, [], 'the probe at 1,000 ms is skipped');
  // One short request outstanding with the same quiet: this probe is sent.
  target.inFlight = 4;
  answer();
  await advance(INTERVAL);
  t.deepEqual(probedAt, [start + 1.5 * INTERVAL]);
  prober.close();
});

test('an endpoint back for less than an interval is probed however fresh its success: a probation request does not prove /readyz passes', async (t) => {
  const { clock, target, prober, probedAt, advance, answer } = setup();
  const start = clock.now();
  // Restored (its probation request succeeded) 200 ms before the first tick, then busy and answering.
  await advance(300);
  target.readySince = clock.now();
  await advance(2 * INTERVAL, () => answer());
  t.deepEqual(probedAt, [start + INTERVAL / 2], 'the first tick probes it; the next, an interval after its return, skips');
  prober.close();
});

test('ejected and draining endpoints are probed every interval, however fresh their last success', async (t) => {
  for (const state of ['ejected', 'draining'] as const) {
    const { target, prober, probedAt, advance, answer } = setup();
    let tick = 0;
    await advance(10 * INTERVAL, () => {
      if (tick++ % 5 === 0) answer();
      target.state = state;
    });
    t.is(probedAt.length, 10, state);
    prober.close();
  }
});

test('the endpoints of one balancer share one timer: each is probed at every tick, and a probe still under way is not sent again', async (t) => {
  const clock = new FakeClock();
  const targets = [endpoint(1), endpoint(2), endpoint(3)];
  const probed: string[] = [];
  let slow: (() => void) | undefined;
  const prober = new Prober(
    SETTINGS,
    clock,
    (target: Endpoint) => {
      probed.push(target.address);
      // The third endpoint's first probe hangs until released.
      if (target === targets[2] && slow === undefined) return new Promise((resolve) => (slow = () => resolve('pass')));
      return Promise.resolve('pass');
    },
    () => {},
    () => 0.5,
  );
  for (const target of targets) prober.add(target);
  t.is(clock.pending, 1, 'one timer for three endpoints');
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  clock.advance(INTERVAL / 2);
  await settle();
  t.deepEqual(probed, ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  t.is(clock.pending, 1);
  clock.advance(INTERVAL);
  await settle();
  t.deepEqual(probed.slice(3), ['10.0.0.1', '10.0.0.2'], 'the hanging probe is not doubled');
  slow!();
  await settle();
  clock.advance(INTERVAL);
  await settle();
  t.deepEqual(probed.slice(5), ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  prober.remove(targets[0]!);
  prober.remove(targets[1]!);
  prober.remove(targets[2]!);
  t.is(clock.pending, 0, 'no timer once no endpoint is left');
  prober.close();
});

test('probeNow sends a probe at once, out of turn, one at a time per endpoint, and leaves the schedule as it was', async (t) => {
  const clock = new FakeClock();
  const target = endpoint(1);
  const probedAt: number[] = [];
  let answer: (result: 'pass') => void = () => {};
  const results: string[] = [];
  const prober = new Prober(
    SETTINGS,
    clock,
    () => {
      probedAt.push(clock.now());
      return new Promise((resolve) => (answer = resolve));
    },
    (_e, result) => results.push(result),
    () => 0.5,
  );
  t.false(prober.probeNow(target), 'an endpoint it does not probe: nothing sent');
  prober.add(target);
  const start = clock.now();
  clock.advance(100);
  t.true(prober.probeNow(target));
  t.deepEqual(probedAt, [start + 100], 'sent at once');
  t.false(prober.probeNow(target), 'not while one is under way');
  answer('pass');
  await Promise.resolve();
  await Promise.resolve();
  t.deepEqual(results, ['pass'], 'its result goes where a scheduled probe’s goes');
  clock.advance(INTERVAL / 2 - 100);
  t.deepEqual(probedAt, [start + 100, start + INTERVAL / 2], 'the scheduled probe still comes at its time');
  prober.close();
  t.false(prober.probeNow(target), 'closed: nothing sent');
});
