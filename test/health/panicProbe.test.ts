// Issue 26, "never worse than one connection": in a rolling restart, an apiserver back from its
// restart came back only after two passing probes 2 s apart (draining) or its whole ejection
// (refused connections), while the picker, with fewer than half the endpoints ready, sent callers'
// requests to the out ones anyway (panic). In panic the out endpoints are now probed every ~500 ms
// and one passing probe brings a draining or refused one back. The real EndpointSet (its panic,
// threshold 0.5), HealthTracker and Prober on a fake clock; the probes' answers are set per endpoint.
import test from 'ava';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { EndpointSet } from '../../src/balancer/EndpointSet.ts';
import { HealthTracker, type ProbeResult } from '../../src/health/HealthTracker.ts';
import { Prober, type ProbeSettings } from '../../src/health/Prober.ts';
import { address, pickerOptions } from '../helpers/endpoints.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

const INTERVAL = 2_000;
const SETTINGS: ProbeSettings = { path: '/readyz', intervalMs: INTERVAL, timeoutMs: 1_000, headers: {} };

/**
 * Three endpoints; `answers` says what each one's /readyz answers now (default `pass`). random 0.5:
 * the first regular probe comes at half an interval, each next one exactly an interval later, and
 * the panic schedule's every 500 ms. Ejections last 20 s, far longer than any test here.
 */
function setup() {
  const clock = new FakeClock();
  const set = new EndpointSet(clock, pickerOptions({ panicThreshold: 0.5 }));
  set.update([0, 1, 2].map((i) => address(i)));
  const endpoints = set.list() as [Endpoint, Endpoint, Endpoint];
  const answers = new Map<Endpoint, ProbeResult>();
  const probes: string[] = [];
  const events: string[] = [];
  const name = (e: Endpoint): string => `#${endpoints.indexOf(e)}`;
  // As the Balancer: the prober hears of an endpoint going out once the picker is rebuilt.
  const wentOut = (): void => queueMicrotask(() => prober.wentOut());
  const health = new HealthTracker(
    { consecutive5xx: 5, baseEjectionMs: 20_000, maxEjectionMs: 60_000, maxEjectionPercent: 50, probes: true },
    clock,
    {
      changed: () => set.rebuild(),
      eject: (e, reason) => (events.push(`${clock.now()} eject ${name(e)} ${reason}`), wentOut()),
      drain: (e, reason) => (events.push(`${clock.now()} drain ${name(e)} ${reason}`), wentOut()),
      restore: (e, via) => events.push(`${clock.now()} restore ${name(e)} ${via}`),
    },
    () => set.list(),
    () => 0.5,
    () => set.panic,
  );
  const prober = new Prober(
    SETTINGS,
    clock,
    (e: Endpoint) => {
      probes.push(`${clock.now()} ${name(e)}`);
      return Promise.resolve(answers.get(e) ?? 'pass');
    },
    (e, result, sentAt) => health.probeResult(e, result, sentAt),
    () => 0.5,
    () => set.panic,
  );
  for (const e of endpoints) prober.add(e);
  /** Moves time on by `ms` in 50 ms steps, letting each probe's continuation run. */
  const advance = async (ms: number): Promise<void> => {
    for (let t = 0; t < ms; t += 50) {
      clock.advance(50);
      for (let i = 0; i < 5; i++) await Promise.resolve();
    }
  };
  /** Moves time on until `e` is ready (at most `limit` ms); returns how long that took. */
  const readyIn = async (e: Endpoint, limit = 30_000): Promise<number> => {
    const start = clock.now();
    while (e.state !== 'ready' && clock.now() - start < limit) await advance(50);
    return clock.now() - start;
  };
  return { clock, set, endpoints, answers, probes, events, health, prober, advance, readyIn };
}

test('in panic, a draining endpoint whose /readyz passes is back within a second, on one passing probe', async (t) => {
  const { set, endpoints, answers, events, health, prober, advance, readyIn, clock } = setup();
  const [a, b] = endpoints;
  await advance(1_100); // past the first regular tick (1 s): the next comes at 3 s
  answers.set(a, 'fail');
  answers.set(b, 'fail');
  health.shuttingDown(a, undefined);
  health.shuttingDown(b, undefined);
  await advance(50);
  t.true(set.panic, 'one of three ready: panic');
  // a's apiserver restarted and its /readyz passes; b still shuts down.
  answers.set(a, 'pass');
  const ms = await readyIn(a);
  t.true(ms <= 1_000, `back in ${ms} ms (before: two passing probes 2 s apart, ~4 s)`);
  t.regex(events.at(-1)!, /restore #0 probe$/);
  t.is(b.state, 'draining', 'a failing /readyz keeps it out, panic or not');
  t.false(set.panic, 'two of three ready: no panic');
  prober.close();
  t.is(clock.pending, 0, 'close clears both timers');
});

test('outside panic, the 2-s cadence and the two passing probes stay', async (t) => {
  const { set, endpoints, answers, probes, health, prober, advance, readyIn } = setup();
  const [a] = endpoints;
  await advance(1_100);
  answers.set(a, 'fail');
  health.shuttingDown(a, undefined);
  await advance(50);
  t.false(set.panic, 'two of three ready');
  answers.set(a, 'pass');
  const from = probes.length;
  const ms = await readyIn(a);
  // Regular ticks at 3 s and 5 s: the first pass leaves it draining, the second brings it back.
  t.true(ms >= 3_500, `back in ${ms} ms`);
  const times = probes
    .slice(from)
    .filter((p) => p.endsWith('#0'))
    .map((p) => Number(p.split(' ')[0]));
  t.deepEqual(
    times.slice(1).map((time, i) => time - times[i]!),
    [INTERVAL],
    'two probes of it, an interval apart, none out of turn',
  );
  prober.close();
});

test('in panic, an endpoint ejected for refused connections comes back on a passing probe before its ejection ends', async (t) => {
  const { set, endpoints, answers, events, health, prober, advance, readyIn } = setup();
  const [a, b] = endpoints;
  await advance(1_100);
  answers.set(a, 'fail');
  health.shuttingDown(a, undefined); // #0 drains for its shutdown
  answers.set(b, 'connect');
  health.connectFailure(b, 'connect'); // #1 crashed: ejected for 20 s
  await advance(50);
  t.true(set.panic);
  await advance(1_000);
  t.is(b.state, 'ejected', 'refused: still out');
  answers.set(b, 'pass'); // #1 restarted
  const ms = await readyIn(b);
  t.true(ms <= 1_000, `back in ${ms} ms, not after its 20-s ejection`);
  t.regex(events.at(-1)!, /restore #1 probe$/);
  prober.close();
});

test('in panic, a crash-looping apiserver (accepts, fails /readyz) is never restored, and the panic schedule stops with the panic', async (t) => {
  const { set, endpoints, answers, probes, health, prober, advance, clock } = setup();
  const [a, b] = endpoints;
  await advance(1_100);
  answers.set(a, 'fail');
  answers.set(b, 'fail');
  health.shuttingDown(a, undefined);
  health.shuttingDown(b, undefined);
  await advance(10_000);
  t.is(a.state, 'draining');
  t.is(b.state, 'draining');
  const inPanic = probes.filter((p) => p.endsWith('#0')).length;
  t.true(inPanic >= 15, `${inPanic} probes of #0 in 10 s of panic`);
  // #1 comes back: out of panic, #0 is probed at the regular cadence only.
  answers.set(b, 'pass');
  await advance(1_000);
  t.is(b.state, 'ready');
  t.false(set.panic);
  const from = probes.length;
  await advance(10_000);
  const after = probes.slice(from).filter((p) => p.endsWith('#0')).length;
  t.is(after, 5, 'one every 2 s');
  t.is(a.state, 'draining');
  prober.close();
  t.is(clock.pending, 0);
});

test('in panic, a pass from a probe sent before the endpoint went out does not bring it back', (t) => {
  const { set, endpoints, health, clock, prober } = setup();
  const [a, b] = endpoints;
  const sentAt = clock.now();
  clock.advance(10);
  health.shuttingDown(b, undefined);
  health.shuttingDown(a, undefined);
  t.true(set.panic);
  health.probeResult(a, 'pass', sentAt);
  t.is(a.state, 'draining', 'the probe was sent before the shutdown');
  health.probeResult(a, 'pass', clock.now());
  t.is(a.state, 'ready', 'one sent since');
  prober.close();
});
