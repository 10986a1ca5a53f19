import test from 'ava';
import { Candidates, type SelectOptions } from '../../src/balancer/Candidates.ts';
import type { Endpoint, EndpointState } from '../../src/balancer/Endpoint.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { endpoint } from '../helpers/endpoints.ts';

const options: SelectOptions = { panicThreshold: 0.5, slowStartMs: 10_000 };

function select(endpoints: Endpoint[], overrides: Partial<SelectOptions> = {}, clock = new FakeClock()): Candidates {
  return Candidates.select(endpoints, { ...options, ...overrides }, clock);
}

/** Each candidate's share of the traffic, by address, rounded to 3 decimals. */
function shares(candidates: Candidates): Record<string, number> {
  return Object.fromEntries(candidates.endpoints.map((e, i) => [e.address, Math.round((1000 * candidates.weights[i]!) / candidates.total) / 1000]));
}

function withStates(endpoints: Endpoint[], states: EndpointState[]): Endpoint[] {
  endpoints.forEach((e, i) => (e.state = states[i] ?? 'ready'));
  return endpoints;
}

test('only ready endpoints are candidates, weighted by weight × weightFactor', (t) => {
  const list = withStates(
    [endpoint(1, { weight: 3 }), endpoint(2), endpoint(3), endpoint(4), endpoint(5), endpoint(6)],
    ['ready', 'ready', 'ready', 'ejected', 'draining', 'probing'],
  );
  list[1]!.weightFactor = 0.5;
  const candidates = select(list);
  t.false(candidates.panic);
  t.deepEqual(candidates.endpoints, list.slice(0, 3));
  t.deepEqual([...candidates.weights], [3, 0.5, 1]);
  t.is(candidates.total, 4.5);
});

test('panic mode leaves out endpoints that refused or never answered a connection, unless all did', (t) => {
  const list = withStates([endpoint(1), endpoint(2), endpoint(3)], ['ready', 'ejected', 'draining']);
  list[1]!.unreachable = true;
  const panic = select(list);
  t.true(panic.panic);
  t.deepEqual(panic.endpoints.map((e) => e.address), ['10.0.0.1', '10.0.0.3'], 'the draining one may be a misjudged health check; the refused one is not');
  for (const e of list) {
    e.state = 'ejected';
    e.unreachable = true;
  }
  t.deepEqual(select(list).endpoints.map((e) => e.address), ['10.0.0.1', '10.0.0.2', '10.0.0.3'], 'every endpoint down: try them all');
});

test('removed endpoints are never candidates, not even in panic mode', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3)];
  list[0]!.removed = true;
  t.deepEqual(select(list).endpoints, list.slice(1));
  withStates(list, ['ready', 'ejected', 'ejected']);
  const panic = select(list);
  t.true(panic.panic);
  t.deepEqual(panic.endpoints, list.slice(1));
});

test('weight 0 is a backup within its priority: used only when no weighted endpoint is ready, then evenly', (t) => {
  const list = [endpoint(1, { weight: 0 }), endpoint(2, { weight: 5 }), endpoint(3, { weight: 0 }), endpoint(4, { weight: 5 })];
  t.deepEqual(shares(select(list)), { '10.0.0.2': 0.5, '10.0.0.4': 0.5 });
  withStates(list, ['ready', 'ejected', 'ready', 'ready']);
  t.deepEqual(shares(select(list)), { '10.0.0.4': 1 });
  withStates(list, ['ready', 'ejected', 'ready', 'ejected']);
  t.deepEqual(shares(select(list, { panicThreshold: 0 })), { '10.0.0.1': 0.5, '10.0.0.3': 0.5 });
});

test('priority levels: the lowest takes everything while at least 1/1.4 of it is ready, then spills (Envoy)', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3), endpoint(4, { priority: 1 }), endpoint(5, { priority: 1 })];
  t.deepEqual(shares(select(list)), { '10.0.0.1': 0.333, '10.0.0.2': 0.333, '10.0.0.3': 0.333 });
  // 2 of 3 ready: health min(1, 1.4 × 2/3) = 93.3 %, the other 6.7 % spill to priority 1.
  withStates(list, ['ejected', 'ready', 'ready', 'ready', 'ready']);
  t.deepEqual(shares(select(list)), { '10.0.0.2': 0.467, '10.0.0.3': 0.467, '10.0.0.4': 0.033, '10.0.0.5': 0.033 });
  // 1 of 3: 46.7 % stays, 53.3 % spills.
  withStates(list, ['ejected', 'ejected', 'ready', 'ready', 'ready']);
  t.deepEqual(shares(select(list)), { '10.0.0.3': 0.467, '10.0.0.4': 0.267, '10.0.0.5': 0.267 });
  // None ready at priority 0: priority 1 takes all, and no panic since it is healthy.
  withStates(list, ['ejected', 'ejected', 'ejected', 'ready', 'ready']);
  const failover = select(list);
  t.false(failover.panic);
  t.deepEqual(shares(failover), { '10.0.0.4': 0.5, '10.0.0.5': 0.5 });
});

test('priority numbers are ordered numerically and weights only compare within a level', (t) => {
  const list = [endpoint(1, { priority: 10, weight: 65535 }), endpoint(2, { priority: 2, weight: 1 }), endpoint(3, { priority: 2, weight: 3 })];
  t.deepEqual(shares(select(list)), { '10.0.0.2': 0.25, '10.0.0.3': 0.75 });
  withStates(list, ['ready', 'ejected', 'ready']);
  // 1 of 2 ready: 70 % stays on priority 2, 30 % goes to priority 10, whatever its weight.
  t.deepEqual(shares(select(list)), { '10.0.0.3': 0.7, '10.0.0.1': 0.3 });
});

test('when every level together is short, loads are normalised', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3), endpoint(4, { priority: 1 }), endpoint(5, { priority: 1 }), endpoint(6, { priority: 1 })];
  // 2/3 ready in each: 93.3 % + 6.7 %: nothing to normalise.
  withStates(list, ['ejected', 'ready', 'ready', 'ejected', 'ready', 'ready']);
  t.deepEqual(shares(select(list)), { '10.0.0.2': 0.467, '10.0.0.3': 0.467, '10.0.0.5': 0.033, '10.0.0.6': 0.033 });
  // 1/2 ready at 0, 1/4 ready at 1 (no panic: level 0 is at the threshold): 70 % + 30 %.
  const more = [endpoint(1), endpoint(2), ...[3, 4, 5, 6].map((i) => endpoint(i, { priority: 1 }))];
  withStates(more, ['ready', 'ejected', 'ready', 'ejected', 'ejected', 'ejected']);
  t.deepEqual(shares(select(more)), { '10.0.0.1': 0.7, '10.0.0.3': 0.3 });
});

test('panic mode: fewer than panicThreshold ready → every endpoint not removed, whatever its state', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3), endpoint(4)];
  withStates(list, ['ready', 'ejected', 'draining', 'probing']);
  const panic = select(list);
  t.true(panic.panic);
  t.deepEqual(panic.endpoints, list);
  withStates(list, ['ready', 'ready', 'ejected', 'ejected']);
  const half = select(list);
  t.false(half.panic, 'exactly the threshold is not panic');
  t.deepEqual(half.endpoints, list.slice(0, 2));
  withStates(list, ['ejected', 'ejected', 'ejected', 'ejected']);
  t.deepEqual(select(list).endpoints, list, 'none ready: all of them rather than nothing');
  t.deepEqual(select(list, { panicThreshold: 0 }).endpoints, [], 'panicThreshold 0 turns panic off');
  withStates(list, ['ready', 'ready', 'ready', 'ejected']);
  t.true(select(list, { panicThreshold: 1 }).panic, 'panicThreshold 1: panic unless every endpoint is ready');
});

test('panic with priorities: only when no level has enough ready; levels then count by size', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3), endpoint(4, { priority: 1 })];
  // 1 of 4 ready overall, but priority 1 is fully ready: it takes the traffic, no panic.
  withStates(list, ['ejected', 'ejected', 'ejected', 'ready']);
  t.false(select(list).panic);
  // Both levels below 50 %: panic; priority 0 has 3 of the 4 endpoints, so 75 % of the traffic.
  withStates(list, ['ready', 'ejected', 'ejected', 'ejected']);
  const panic = select(list);
  t.true(panic.panic);
  t.deepEqual(shares(panic), { '10.0.0.1': 0.25, '10.0.0.2': 0.25, '10.0.0.3': 0.25, '10.0.0.4': 0.25 });
});

test('slow start: from 10 % at readySince, linearly to full weight after slowStartMs', (t) => {
  const clock = new FakeClock(1_000_000);
  const list = [endpoint(1, { weight: 2 }), endpoint(2, { weight: 2 }, clock.now())];
  const candidates = select(list, {}, clock);
  t.true(candidates.ramping);
  t.is(candidates.weightAt(0, clock.now()), 2);
  t.is(candidates.weightAt(1, clock.now()), 0.2);
  t.is(candidates.weightAt(1, clock.now() + 5_000), 1.1);
  t.is(candidates.weightAt(1, clock.now() + 10_000), 2);
  t.is(candidates.weightAt(1, clock.now() - 5), 0.2, 'a readySince in the future counts as just now');
  clock.advance(9_999);
  candidates.now();
  t.true(candidates.ramping);
  clock.advance(1);
  t.is(candidates.now(), 1_010_000);
  t.false(candidates.ramping, 'once the ramp is over the clock is no longer read');
  t.is(candidates.weights[1], 2, 'steady weights never include the ramp');
});

test('slow start is off with slowStartMs 0, and endpoints ready long enough do not ramp', (t) => {
  const clock = new FakeClock(1_000_000);
  t.false(select([endpoint(1, {}, clock.now())], { slowStartMs: 0 }, clock).ramping);
  t.false(select([endpoint(1, {}, clock.now() - 10_000)], {}, clock).ramping);
  t.true(select([endpoint(1, {}, clock.now() - 9_999)], {}, clock).ramping);
});

test('a weightFactor of 0 is taken as a tiny share, never as infinite or negative', (t) => {
  const list = [endpoint(1), endpoint(2)];
  list[0]!.weightFactor = 0;
  const candidates = select(list);
  t.true(candidates.weights[0]! > 0 && candidates.weights[0]! < 0.01);
});

test('sameAs: an ejected endpoint turning to probing changes nothing a pick reads; a weight, a member or a ramp does', (t) => {
  const list = withStates([endpoint(1), endpoint(2), endpoint(3)], ['ready', 'ready', 'ejected']);
  const before = select(list);
  list[2]!.state = 'probing';
  t.true(select(list).sameAs(before));
  list[1]!.loadFactor = 0.5;
  t.false(select(list).sameAs(before));
  list[1]!.loadFactor = 1;
  list[2]!.state = 'ready';
  t.false(select(list).sameAs(before));
  const clock = new FakeClock();
  const ramping = [endpoint(1), endpoint(2, {}, clock.now())];
  t.false(select(ramping, {}, clock).sameAs(select(ramping, {}, clock)));
});

test('one priority level is chosen as the general rule would: a second, idle level only adds its members to the reserve, before the draining ones', (t) => {
  const level = withStates([endpoint(1, { weight: 2 }), endpoint(2, { weight: 0 }), endpoint(3), endpoint(4)], ['ready', 'ready', 'draining', 'ready']);
  level[3]!.weightFactor = 0.5;
  level[3]!.loadFactor = 0.25;
  const one = select(level);
  const backup = endpoint(9, { priority: 1 });
  const two = select([...level, backup]);
  t.deepEqual(one.endpoints.map((e) => e.address), ['10.0.0.1', '10.0.0.4']);
  t.deepEqual([...one.weights], [2, 0.125]);
  t.deepEqual([...one.streamWeights], [2, 0.5]);
  t.deepEqual(one.endpoints, two.endpoints);
  t.deepEqual([...one.weights], [...two.weights]);
  t.deepEqual([...one.streamWeights], [...two.streamWeights]);
  t.deepEqual(one.reserve.map((e) => e.address), ['10.0.0.2', '10.0.0.3']);
  t.deepEqual(two.reserve.map((e) => e.address), ['10.0.0.2', '10.0.0.9', '10.0.0.3']);
});
