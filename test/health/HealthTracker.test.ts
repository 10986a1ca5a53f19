import test from 'ava';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import { HealthTracker, type HealthSettings } from '../../src/health/HealthTracker.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

const SETTINGS: HealthSettings = { consecutive5xx: 5, baseEjectionMs: 1000, maxEjectionMs: 30_000, maxEjectionPercent: 50, probes: true };

function setup(settings: Partial<HealthSettings> = {}, count = 3, random = () => 0.5, panic?: (endpoints: Endpoint[]) => boolean) {
  const clock = new FakeClock();
  const endpoints = Array.from({ length: count }, (_, i) => new Endpoint({ address: `10.0.0.${i + 1}`, port: 6443 }, clock.now()));
  const events: string[] = [];
  let changes = 0;
  const health = new HealthTracker(
    { ...SETTINGS, ...settings },
    clock,
    {
      changed: () => changes++,
      eject: (e, reason, ms) => events.push(`eject ${e.address} ${reason} ${Math.round(ms)}`),
      drain: (e, reason) => events.push(`drain ${e.address} ${reason}`),
      restore: (e, via) => events.push(`restore ${e.address} ${via}`),
    },
    () => endpoints,
    random,
    panic && (() => panic(endpoints)),
  );
  return { clock, endpoints, events, health, changes: () => changes };
}

test('a connection failure ejects at once; the ejection doubles per ejection in a row, capped', (t) => {
  const { clock, endpoints, events, health } = setup();
  const e = endpoints[0]!;
  const lengths: number[] = [];
  for (let i = 0; i < 7; i++) {
    health.connectFailure(e, 'connect');
    t.is(e.state, 'ejected');
    lengths.push(Number(events.at(-1)!.split(' ').at(-1)));
    clock.advance(lengths.at(-1)!);
    t.is(e.state, 'probing');
  }
  // random() = 0.5 → jitter factor 1.0
  t.deepEqual(lengths, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
});

test('ejection jitter stays within ±20 %', (t) => {
  for (const r of [0, 0.999]) {
    const { endpoints, events, health } = setup({}, 3, () => r);
    health.connectFailure(endpoints[0]!, 'tls');
    const ms = Number(events[0]!.split(' ').at(-1));
    t.true(ms >= 800 && ms <= 1200, `${ms}`);
  }
});

test('exactly one probation request brings an endpoint back, then it slow-starts', (t) => {
  const { clock, endpoints, events, health } = setup();
  const e = endpoints[1]!;
  health.connectFailure(e, 'connect');
  t.is(health.takeProbation(), undefined, 'nothing to probe while ejected');
  clock.advance(1000);
  t.is(e.state, 'probing');
  t.is(health.takeProbation(), e);
  t.is(health.takeProbation(), undefined, 'only one probation request at a time');
  health.success(e);
  t.is(e.state, 'ready');
  t.is(e.readySince, clock.now());
  t.deepEqual(events, ['eject 10.0.0.2 connect 1000', 'restore 10.0.0.2 probation']);
});

test('a failed probation ejects again for longer; an aborted one lets the next request try', (t) => {
  const { clock, endpoints, events, health } = setup();
  const e = endpoints[0]!;
  health.connectFailure(e, 'connect');
  clock.advance(1000);
  t.is(health.takeProbation(), e);
  health.releaseProbation(e);
  t.is(health.takeProbation(), e);
  health.serverError(e);
  t.is(e.state, 'ejected');
  t.is(events.at(-1), 'eject 10.0.0.1 failures 2000');
});

test('consecutive 5xx eject after the threshold; a success resets the count', (t) => {
  const { endpoints, health } = setup();
  const e = endpoints[0]!;
  for (let i = 0; i < 4; i++) health.serverError(e);
  health.success(e);
  for (let i = 0; i < 4; i++) health.serverError(e);
  t.is(e.state, 'ready');
  health.serverError(e);
  t.is(e.state, 'ejected');
});

test('5xx ejections never take out more than maxEjectionPercent; connection failures still do', (t) => {
  const { endpoints, health } = setup({ consecutive5xx: 1 });
  const [a, b, c] = endpoints as [Endpoint, Endpoint, Endpoint];
  health.serverError(a);
  health.serverError(b);
  health.serverError(c);
  t.deepEqual(endpoints.map((e) => e.state), ['ejected', 'ready', 'ready'], '1 of 3 is 33 %; 2 of 3 would be 67 %');
  health.connectFailure(b, 'connect');
  t.is(b.state, 'ejected');
});

test('429 halves the share and rests the endpoint for its Retry-After, without probation or slow start', (t) => {
  const { clock, endpoints, events, health } = setup();
  const e = endpoints[2]!;
  const readySince = e.readySince;
  health.throttled(e, 3000);
  t.is(e.state, 'ejected');
  t.is(e.weightFactor, 0.5);
  clock.advance(2999);
  t.is(e.state, 'ejected');
  clock.advance(1);
  t.is(e.state, 'ready');
  t.is(e.readySince, readySince);
  health.throttled(e, undefined);
  t.is(e.weightFactor, 0.25);
  clock.advance(1000);
  t.is(e.state, 'ready', 'no Retry-After: one second');
  for (let i = 0; i < 15; i++) health.success(e);
  t.is(e.weightFactor, 1);
  t.deepEqual(events, ['eject 10.0.0.3 throttled 3000', 'restore 10.0.0.3 retry-after', 'eject 10.0.0.3 throttled 1000', 'restore 10.0.0.3 retry-after']);
  for (let i = 0; i < 10; i++) health.throttled(e, 0);
  t.is(e.weightFactor, 0.1, 'never below 10 %');
});

test('a failing probe drains; two passing probes bring it back', (t) => {
  const { endpoints, events, health } = setup();
  const e = endpoints[0]!;
  health.probeResult(e, 'fail');
  t.is(e.state, 'draining');
  health.probeResult(e, 'pass');
  t.is(e.state, 'draining');
  health.probeResult(e, 'fail');
  health.probeResult(e, 'pass');
  t.is(e.state, 'draining', 'the passes must be consecutive');
  health.probeResult(e, 'pass');
  t.is(e.state, 'ready');
  t.deepEqual(events, ['drain 10.0.0.1 probe', 'restore 10.0.0.1 probe']);
});

test('a failing probe drains an ejected or probing endpoint too: it answers, not ready (a restarted apiserver), and only passing probes bring it back, not a probation request', (t) => {
  const { clock, endpoints, events, health } = setup();
  const [a, b] = endpoints;
  health.connectFailure(a!, 'connect');
  health.probeResult(a!, 'fail');
  t.is(a!.state, 'draining');
  clock.advance(60_000);
  t.is(a!.state, 'draining', 'no ejection timer left to put it in probation');
  t.is(health.takeProbation(), undefined);
  health.connectFailure(b!, 'connect');
  clock.advance(1000);
  t.is(b!.state, 'probing');
  health.probeResult(b!, 'fail');
  t.is(b!.state, 'draining');
  health.probeResult(a!, 'pass');
  health.probeResult(a!, 'pass');
  t.is(a!.state, 'ready');
  t.deepEqual(events, ['eject 10.0.0.1 connect 1000', 'drain 10.0.0.1 probe', 'eject 10.0.0.2 connect 1000', 'drain 10.0.0.2 probe', 'restore 10.0.0.1 probe']);
});

test('a probe with no answer ejects; after the ejection one passing probe brings it back', (t) => {
  const { clock, endpoints, events, health } = setup();
  const e = endpoints[0]!;
  health.probeResult(e, 'unreachable');
  t.is(e.state, 'ejected');
  health.probeResult(e, 'pass');
  t.is(e.state, 'ejected', 'the ejection time is served first');
  clock.advance(1000);
  health.probeResult(e, 'pass');
  t.is(e.state, 'ready');
  t.deepEqual(events, ['eject 10.0.0.1 unreachable 1000', 'restore 10.0.0.1 probe']);
});

test('a shutdown 429 drains until probes pass; without probes it rests like an ejection', (t) => {
  const withProbes = setup();
  withProbes.health.shuttingDown(withProbes.endpoints[0]!, 5000);
  t.is(withProbes.endpoints[0]!.state, 'draining');
  const without = setup({ probes: false });
  without.health.shuttingDown(without.endpoints[0]!, 5000);
  t.is(without.endpoints[0]!.state, 'ejected');
  without.clock.advance(5000);
  t.is(without.endpoints[0]!.state, 'probing');
});

test('a long healthy stretch forgives earlier ejections', (t) => {
  const { clock, endpoints, events, health } = setup();
  const e = endpoints[0]!;
  health.connectFailure(e, 'connect');
  clock.advance(1000);
  health.takeProbation();
  health.success(e);
  clock.advance(4 * 30_000 + 1);
  health.connectFailure(e, 'connect');
  t.is(events.at(-1), 'eject 10.0.0.1 connect 1000');
});

test('close() and forget() leave no timer behind', (t) => {
  const { clock, endpoints, health } = setup();
  health.connectFailure(endpoints[0]!, 'connect');
  health.throttled(endpoints[1]!, 1000);
  t.is(clock.pending, 2);
  health.forget(endpoints[0]!);
  t.is(clock.pending, 1);
  health.close();
  t.is(clock.pending, 0);
});

test('a probation request still running when a probe restores the endpoint does not block the next probation', (t) => {
  const { clock, endpoints, health } = setup();
  const e = endpoints[0]!;
  health.connectFailure(e, 'connect');
  clock.advance(1000);
  t.is(health.takeProbation(), e);
  health.probeResult(e, 'pass');
  t.is(e.state, 'ready');
  health.success(e); // the probation request ends while ready
  for (let i = 0; i < 5; i++) health.serverError(e);
  t.is(e.state, 'ejected');
  clock.advance(2000);
  t.is(e.state, 'probing');
  t.is(health.takeProbation(), e);
});

test('a 429 from an endpoint out of reach proves it reachable', (t) => {
  const { clock, endpoints, health } = setup();
  const e = endpoints[0]!;
  health.connectFailure(e, 'connect');
  t.true(e.unreachable);
  clock.advance(1000);
  t.is(health.takeProbation(), e);
  health.throttled(e, 1000);
  t.is(e.state, 'ejected');
  t.false(e.unreachable);
});

test('requests that end on a removed endpoint bring it back into neither health nor probation', (t) => {
  const { clock, endpoints, events, health, changes } = setup({ consecutive5xx: 1 });
  const e = endpoints[0]!;
  e.removed = true;
  health.forget(e);
  health.connectFailure(e, 'connect');
  health.serverError(e);
  health.throttled(e, 1000);
  health.shuttingDown(e, 1000);
  health.success(e);
  t.is(e.state, 'ready');
  t.is(clock.pending, 0);
  t.deepEqual(events, []);
  t.is(changes(), 0);
  t.is(health.takeProbation(), undefined);
});

test('an endpoint ejected for a refused connection stays ejected by that verdict when it also goes silent', (t) => {
  const { endpoints, events, health } = setup();
  const e = endpoints[0]!;
  health.connectFailure(e, 'connect');
  health.probeResult(e, 'unreachable');
  health.connectFailure(e, 'unreachable');
  t.deepEqual(events, ['eject 10.0.0.1 connect 1000']);
});

test('inferred verdicts (silence, probe timeouts, 5xx runs) share maxEjectionPercent and never take the last endpoint out', (t) => {
  const { endpoints, health } = setup({ consecutive5xx: 1 }, 4);
  const [a, b, c, d] = endpoints as [Endpoint, Endpoint, Endpoint, Endpoint];
  health.probeResult(a, 'unreachable');
  health.silent(b);
  t.deepEqual([a.state, b.state], ['ejected', 'ejected'], 'two of four: 50 %');
  health.serverError(c);
  health.connectFailure(c, 'unreachable');
  health.silent(c);
  t.is(c.state, 'ready', 'a third would be 75 %');
  // Proven and stated verdicts need no cap: they take out the rest.
  health.connectFailure(c, 'connect');
  health.shuttingDown(d, undefined);
  t.deepEqual([c.state, d.state], ['ejected', 'draining']);
  const all = setup({ maxEjectionPercent: 100 }, 2);
  all.health.probeResult(all.endpoints[0]!, 'unreachable');
  all.health.probeResult(all.endpoints[1]!, 'unreachable');
  all.health.silent(all.endpoints[1]!);
  t.deepEqual(
    all.endpoints.map((e) => e.state),
    ['ejected', 'ready'],
    'even at 100 %, silence never ejects every endpoint: when all look silent the fault is likely the probe or this client',
  );
});

test('a recovering share moves with each success; the picker is rebuilt at most every 100 ms, and once it is whole', (t) => {
  const { clock, endpoints, health, changes } = setup();
  const e = endpoints[0]!;
  health.throttled(e, 1000);
  clock.advance(1000);
  const before = changes();
  for (let i = 0; i < 5; i++) health.success(e);
  t.is(changes() - before, 1);
  t.true(Math.abs(e.weightFactor - 0.75) < 1e-9);
  clock.advance(99);
  health.success(e);
  t.is(changes() - before, 1);
  clock.advance(1);
  health.success(e);
  t.is(changes() - before, 2);
  for (let i = 0; i < 3; i++) health.success(e);
  t.is(e.weightFactor, 1);
  t.is(changes() - before, 3, 'rebuilt once whole');
});

test('an endpoint ejected for refused connections comes back on a passing probe only while no endpoint is ready', (t) => {
  const { endpoints, events, health } = setup({ maxEjectionPercent: 100 }, 2);
  const [a, b] = endpoints as [Endpoint, Endpoint];
  health.connectFailure(a, 'connect');
  health.probeResult(a, 'pass');
  t.is(a.state, 'ejected', 'another is ready: the ejection is served first');
  health.shuttingDown(b, 5000);
  t.is(b.state, 'draining');
  health.probeResult(a, 'pass');
  t.is(a.state, 'ready', 'none ready: the passing probe brings it back');
  health.connectFailure(b, 'connect');
  health.probeResult(b, 'pass');
  t.is(b.state, 'ejected', 'a is ready again');
  t.deepEqual(events, ['eject 10.0.0.1 connect 1000', 'drain 10.0.0.2 shutdown', 'restore 10.0.0.1 probe', 'eject 10.0.0.2 connect 1000']);
});

test('in panic, an answer to a request sent after an endpoint went out for a 429 ends its rest; one sent before, or outside panic, does not', (t) => {
  const underHalfReady = (all: Endpoint[]) => all.filter((e) => e.state === 'ready').length * 2 < all.length;
  const { clock, endpoints, events, health } = setup({}, 3, () => 0.5, underHalfReady);
  const [a, b, c] = endpoints as [Endpoint, Endpoint, Endpoint];
  health.throttled(a, 60_000);
  const beforeB = clock.now();
  clock.advance(10);
  health.success(a, clock.now(), clock.now());
  t.is(a.state, 'ejected', 'outside panic (two of three ready) its rest runs on');
  health.throttled(b, 60_000);
  health.throttled(c, 60_000);
  health.success(b, clock.now(), beforeB);
  t.is(b.state, 'ejected', 'a request sent before its 429: stale');
  health.success(b, clock.now());
  t.is(b.state, 'ejected', 'a request whose sending time is unknown proves nothing');
  clock.advance(10);
  health.success(b, clock.now(), clock.now() - 5);
  t.is(b.state, 'ready', 'sent after, in panic: back at once');
  t.true(b.weightFactor < 1, 'its share stays reduced');
  t.is(c.state, 'ejected');
  t.deepEqual(events.slice(-1), ['restore 10.0.0.2 answer']);
});
