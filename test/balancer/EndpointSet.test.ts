import test from 'ava';
import fc from 'fast-check';
import { OVERPROVISIONING } from '../../src/balancer/Candidates.ts';
import type { Endpoint, EndpointState } from '../../src/balancer/Endpoint.ts';
import { EndpointSet, type PickerOptions } from '../../src/balancer/EndpointSet.ts';
import type { PickRequest } from '../../src/balancer/Picker.ts';
import type { EndpointAddress } from '../../src/resolver/Resolver.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { address, pickerOptions, tally, worstWindow } from '../helpers/endpoints.ts';

const short: PickRequest = { longRunning: false };
const watch: PickRequest = { longRunning: true };

function setOf(addresses: EndpointAddress[], options: Partial<PickerOptions> = {}, clock = new FakeClock()): EndpointSet {
  const set = new EndpointSet(clock, pickerOptions(options));
  set.update(addresses);
  return set;
}

const stateArb = fc.constantFrom<EndpointState>('ready', 'ready', 'ejected', 'draining', 'probing');
const endpointArb = fc.record({ weight: fc.integer({ min: 0, max: 5 }), priority: fc.integer({ min: 0, max: 2 }), state: stateArb });
const requestArb = (set: EndpointSet): fc.Arbitrary<PickRequest> =>
  fc.record({ longRunning: fc.boolean(), exclude: fc.option(fc.subarray(set.list()).map((list) => new Set(list)), { nil: undefined }) });

/** Whether the picker should be in panic mode: no priority level has `threshold` of its endpoints ready. */
function expectPanic(list: Endpoint[], threshold: number): boolean {
  const levels = new Map<number, Endpoint[]>();
  for (const e of list) levels.set(e.priority, [...(levels.get(e.priority) ?? []), e]);
  return threshold > 0 && [...levels.values()].every((level) => level.filter((e) => e.state === 'ready').length < threshold * level.length);
}

test('property: outside panic mode only ready endpoints are picked (a retry with none left: a draining one); in panic mode any endpoint not removed', (t) => {
  fc.assert(
    fc.property(
      fc.array(endpointArb, { minLength: 1, maxLength: 40 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.constantFrom('round-robin' as const, 'least-request' as const),
      fc.integer({ min: 0, max: 1000 }),
      (specs, panicThreshold, policy, seed) => {
        const set = setOf(
          specs.map((s, i) => address(i, { weight: s.weight, priority: s.priority })),
          { panicThreshold, policy },
        );
        const list = set.list();
        specs.forEach((s, i) => (list[i]!.state = s.state));
        set.rebuild();
        const panic = expectPanic(list, panicThreshold);
        const requests = fc.sample(requestArb(set), { numRuns: 30, seed });
        for (const request of requests) {
          const picked = set.pick(request);
          // Outside panic, a retry that tried every ready endpoint may still go to a draining one.
          const readyLeft = list.some((e) => e.state === 'ready' && !request.exclude?.has(e));
          // A retry: something was tried (a watch's may still have an empty set, as SchedulePicker reads it).
          const retry = request.exclude !== undefined && (request.longRunning || request.exclude.size > 0);
          const lastResort = (e: Endpoint): boolean => retry && !readyLeft && e.state === 'draining';
          if (picked === undefined) {
            // Only when nothing is eligible, or everything eligible was excluded.
            const eligible = list.filter((e) => panic || e.state === 'ready' || lastResort(e));
            t.true(eligible.every((e) => request.exclude?.has(e)));
            continue;
          }
          t.false(picked.removed);
          t.false(request.exclude?.has(picked) ?? false, 'a retry never returns to a tried endpoint');
          if (!panic) t.true(picked.state === 'ready' || lastResort(picked), picked.state);
        }
      },
    ),
  );
});

test('with no endpoint ready and panic mode off, a retry still goes to a draining one (the picker had none at all)', (t) => {
  const set = setOf([address(0), address(1), address(2)], { panicThreshold: 0 });
  const [a, b, c] = set.list();
  a!.state = 'draining';
  b!.state = 'draining';
  c!.state = 'probing';
  set.rebuild();
  t.is(set.pick(short), undefined, 'a first attempt goes nowhere');
  t.is(set.pick({ longRunning: false, exclude: new Set([a!]) }), b, 'its retry goes to the other draining one');
  t.is(set.pick({ longRunning: false, exclude: new Set([a!, b!]) }), undefined);
});

test('property: priority order is respected — a level gets traffic only while every lower level is short of 1/1.4 ready', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ priority: fc.integer({ min: 0, max: 3 }), ready: fc.boolean(), weight: fc.integer({ min: 1, max: 4 }) }), {
        minLength: 1,
        maxLength: 24,
      }),
      (specs) => {
        const set = setOf(
          specs.map((s, i) => address(i, { weight: s.weight, priority: s.priority })),
          { panicThreshold: 0 },
        );
        const list = set.list();
        specs.forEach((s, i) => (list[i]!.state = s.ready ? 'ready' : 'ejected'));
        set.rebuild();
        const healthy = (priority: number): boolean => {
          const level = list.filter((e) => e.priority === priority);
          return level.length > 0 && OVERPROVISIONING * level.filter((e) => e.state === 'ready').length >= level.length;
        };
        const picked = new Set<number>();
        for (let k = 0; k < 200; k++) {
          const e = set.pick(k % 7 ? short : watch);
          if (e) picked.add(e.priority);
        }
        for (const priority of picked) {
          for (let lower = 0; lower < priority; lower++) t.false(healthy(lower), `priority ${priority} used while ${lower} is healthy`);
        }
      },
    ),
  );
});

test('property: shares are proportional to weights over long runs, within ±1 in every 10·N window for equal weights', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 60 }), fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 30 }), (n, weights) => {
      // Equal weights, any N (both algorithms): every 10·N window exactly.
      const equal = setOf(Array.from({ length: n }, (_, i) => address(i, { weight: 33 })));
      const endpoints = equal.list();
      const sequence = Array.from({ length: 30 * n }, () => endpoints.indexOf(equal.pick(short)!));
      t.true(worstWindow(sequence, new Array<number>(n).fill(1), 10 * n) <= 1);
      // Any weights: the long-run shares.
      const weighted = setOf(weights.map((weight, i) => address(i, { weight })));
      const total = weights.reduce((a, b) => a + b, 0);
      const picks = 200 * total;
      const counts = tally(picks, () => weighted.pick(short)!);
      weighted.list().forEach((e, i) => t.true(Math.abs((counts.get(e) ?? 0) / picks - weights[i]! / total) < 0.005));
    }),
    { numRuns: 60 },
  );
});

test('property: diff updates keep endpoints, counters and health; removed endpoints are never picked again', (t) => {
  const pool = Array.from({ length: 8 }, (_, i) => i);
  fc.assert(
    fc.property(
      fc.array(fc.subarray(pool, { minLength: 1 }), { minLength: 2, maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 8, maxLength: 8 }),
      (updates, weights) => {
        const clock = new FakeClock();
        const set = new EndpointSet(clock, pickerOptions());
        let previous = new Map<string, Endpoint>();
        let generation = 0;
        for (const update of updates) {
          clock.advance(1000);
          generation++;
          // Give every current endpoint distinctive live state before the update.
          for (const e of set.list()) {
            e.requests = generation * 100;
            e.inFlight = generation;
            e.streams = generation % 3;
            e.failures = generation * 2;
            e.weightFactor = 0.5;
          }
          const kept = new Map([...previous].map(([key, e]) => [key, { e, requests: e.requests, inFlight: e.inFlight, state: e.state }]));
          const { added, removed } = set.update(update.map((i) => address(i, { weight: weights[i] })));
          const now = new Map(set.list().map((e) => [e.key, e]));
          for (const [key, before] of kept) {
            const after = now.get(key);
            if (after) {
              t.is(after, before.e, 'same object: same counters, health and pools');
              t.is(after.requests, before.requests);
              t.is(after.inFlight, before.inFlight);
              t.is(after.state, before.state);
              t.is(after.weightFactor, 0.5);
            } else {
              t.true(before.e.removed);
              t.true(removed.includes(before.e));
              t.is(before.e.inFlight, before.inFlight, 'in-flight requests are still accounted for');
            }
          }
          for (const e of added) {
            t.false(previous.has(e.key));
            t.is(e.requests, 0);
            t.is(e.readySince, generation === 1 ? -Infinity : clock.now(), 'the first set does not slow-start, later ones do');
          }
          for (let k = 0; k < 50; k++) {
            const picked = set.pick(k % 5 ? short : watch)!;
            t.true(now.get(picked.key) === picked, 'only listed endpoints are picked');
          }
          previous = now;
        }
      },
    ),
  );
});

test('property: two balancers over the same set start at different points', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 40 }), (n) => {
      const addresses = Array.from({ length: n }, (_, i) => address(i));
      const firsts = new Set(Array.from({ length: 48 }, () => setOf(addresses).pick(short)!.key));
      t.true(firsts.size > 1);
    }),
    { numRuns: 40 },
  );
});

test('the first pick of many balancers is spread over every endpoint', (t) => {
  const addresses = [address(1), address(2), address(3)];
  const firsts = tally(3000, () => setOf(addresses).pick(short)!.key);
  for (const count of firsts.values()) t.true(Math.abs(count - 1000) < 170, String([...firsts.values()]));
});

test('equal SRV weights (CoreDNS 33/33/33) are plain round robin', (t) => {
  const set = setOf([address(1, { weight: 33 }), address(2, { weight: 33 }), address(3, { weight: 33 })]);
  const order = Array.from({ length: 9 }, () => set.pick(short)!.key);
  t.deepEqual(order.slice(3), [...order.slice(0, 3), ...order.slice(0, 3)]);
  t.is(new Set(order.slice(0, 3)).size, 3);
});

test('weight 0 endpoints take traffic only once no weighted endpoint of their priority is ready', (t) => {
  const set = setOf([address(1, { weight: 0 }), address(2, { weight: 10 }), address(3, { weight: 10 })], { panicThreshold: 0 });
  const [backup, a, b] = set.list();
  t.false(new Set(Array.from({ length: 100 }, () => set.pick(short))).has(backup));
  a!.state = 'ejected';
  set.rebuild();
  t.deepEqual(new Set(Array.from({ length: 100 }, () => set.pick(short))), new Set([b]));
  b!.state = 'draining';
  set.rebuild();
  t.deepEqual(new Set(Array.from({ length: 100 }, () => set.pick(short))), new Set([backup]));
});

test('slow start (fake clock): a joining endpoint ramps from 10 % to full weight; the first set starts at full weight', (t) => {
  const clock = new FakeClock();
  const set = setOf([address(1), address(2), address(3)], {}, clock);
  const [a, b, c] = set.list();
  const share = (picks: number): number[] => {
    const counts = tally(picks, () => set.pick(short)!);
    return set.list().map((e) => counts.get(e) ?? 0);
  };
  t.deepEqual(share(3000), [1000, 1000, 1000]);
  clock.advance(60_000);
  set.update([a!, b!, c!, address(4)]);
  const d = set.list()[3]!;
  t.is(d.readySince, clock.now());
  // Weights 1, 1, 1, 0.1 while time stands still.
  const start = share(3100);
  t.true(Math.abs(start[3]! - 100) <= 1, String(start));
  clock.advance(5_000); // 0.1 + 0.9 × 0.5 = 0.55
  const middle = share(3550);
  t.true(Math.abs(middle[3]! - 550) <= 2, String(middle));
  clock.advance(5_000);
  const end = share(4000);
  t.deepEqual(end, [1000, 1000, 1000, 1000]);
});

test('slow start is read at every pick, so it ramps at one request a second too', (t) => {
  const clock = new FakeClock();
  const set = setOf([address(1), address(2), address(3)], {}, clock);
  set.update([...set.list(), address(4)]);
  const d = set.list()[3]!;
  const perSecond: number[] = [];
  for (let second = 0; second < 14; second++) {
    let count = 0;
    // 40 requests spread over the second.
    for (let k = 0; k < 40; k++) {
      if (set.pick(short) === d) count++;
      clock.advance(25);
    }
    perSecond.push(count);
  }
  const ramp = perSecond.slice(0, 10);
  t.true(ramp[0]! <= 3, String(perSecond));
  t.true(ramp.reduce((a, b) => a + b, 0) < 10 * 10 * 0.8, `below its full share while ramping: ${perSecond.join()}`);
  t.true(ramp[9]! >= ramp[0]!, String(perSecond));
  t.deepEqual(perSecond.slice(11), [10, 10, 10], 'full share once the ramp is over');
});

test('slow start applies again to an endpoint that comes back (readySince set by health)', (t) => {
  const clock = new FakeClock();
  const set = setOf([address(1), address(2)], {}, clock);
  const [a, b] = set.list();
  b!.state = 'ejected';
  set.rebuild();
  clock.advance(30_000);
  b!.state = 'ready';
  b!.readySince = clock.now();
  set.rebuild();
  const counts = tally(1100, () => set.pick(short)!);
  t.true(Math.abs(counts.get(b!)! - 100) <= 1);
  t.true(Math.abs(counts.get(a!)! - 1000) <= 1);
  clock.advance(10_000);
  const later = tally(1000, () => set.pick(short)!);
  t.is(later.get(b!), 500);
});

test('slowStartMs 0 turns slow start off', (t) => {
  const clock = new FakeClock();
  const set = setOf([address(1)], { slowStartMs: 0 }, clock);
  set.update([address(1), address(2)]);
  const counts = tally(1000, () => set.pick(short)!.key);
  t.deepEqual([...counts.values()], [500, 500]);
});

test('panic mode and recovery (fake clock): spread over all, then back to the ready ones, ramping', (t) => {
  const clock = new FakeClock();
  const set = setOf([address(1), address(2), address(3), address(4)], {}, clock);
  const list = set.list();
  const keys = (picks: number): Record<string, number> => Object.fromEntries(tally(picks, () => set.pick(short)!.address));
  // Three of four ejected: 25 % ready < 50 %. Health is not trusted; all four share the load.
  for (const e of list.slice(1)) e.state = 'ejected';
  set.rebuild();
  t.deepEqual(keys(400), { '10.0.0.1': 100, '10.0.0.2': 100, '10.0.0.3': 100, '10.0.0.4': 100 });
  t.is(set.pick(watch)?.removed, false);
  // Two come back a second later: 3 of 4 ready, no panic; the two returning ones slow-start.
  clock.advance(1_000);
  for (const e of list.slice(1, 3)) {
    e.state = 'ready';
    e.readySince = clock.now();
  }
  set.rebuild();
  const recovering = keys(1200);
  t.is(recovering['10.0.0.4'], undefined, 'the still-ejected endpoint gets nothing');
  t.true(Math.abs(recovering['10.0.0.1']! - 1000) <= 2, JSON.stringify(recovering));
  clock.advance(10_000);
  t.deepEqual(keys(300), { '10.0.0.1': 100, '10.0.0.2': 100, '10.0.0.3': 100 });
  // Exactly half ready is not panic.
  list[2]!.state = 'draining';
  set.rebuild();
  t.deepEqual(keys(300), { '10.0.0.1': 150, '10.0.0.2': 150 });
  // panicThreshold 0: with nothing ready, nothing is picked.
  const strict = setOf([address(1)], { panicThreshold: 0 }, clock);
  strict.list()[0]!.state = 'ejected';
  strict.rebuild();
  t.is(strict.pick(short), undefined);
});
