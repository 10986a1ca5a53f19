import test from 'ava';
import { Candidates } from '../../src/balancer/Candidates.ts';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import type { Policy } from '../../src/balancer/Picker.ts';
import { SchedulePicker } from '../../src/balancer/SchedulePicker.ts';
import { EarliestDeadline } from '../../src/balancer/schedule/EarliestDeadline.ts';
import { SmoothWeighted } from '../../src/balancer/schedule/SmoothWeighted.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { endpoint, tally } from '../helpers/endpoints.ts';

const schedules = { swrr: SmoothWeighted, edf: EarliestDeadline };

function pickerOver(list: Endpoint[], policy: Policy = 'round-robin', kind: keyof typeof schedules = 'swrr', clock = new FakeClock()): SchedulePicker {
  const candidates = Candidates.select(list, { panicThreshold: 0.5, slowStartMs: 10_000 }, clock);
  return new SchedulePicker(candidates, new schedules[kind](candidates), policy);
}

const short = { longRunning: false };
const watch = { longRunning: true };

/** Opens a long-running request on whatever the picker chooses, as the dispatcher does. */
function openWatch(picker: SchedulePicker): Endpoint {
  const e = picker.pick(watch)!;
  e.streams++;
  return e;
}

for (const kind of ['swrr', 'edf'] as const) {
  test(`${kind}: watches go where the fewest streams are open, however many short requests there are`, (t) => {
    const list = [endpoint(1), endpoint(2), endpoint(3)];
    const picker = pickerOver(list, 'round-robin', kind);
    for (let k = 0; k < 30; k++) {
      openWatch(picker);
      for (let s = 0; s < 100; s++) picker.pick(short)!.requests++;
    }
    t.deepEqual(
      list.map((e) => e.streams),
      [10, 10, 10],
    );
    t.deepEqual(
      list.map((e) => e.requests),
      [1000, 1000, 1000],
    );
  });
}

test('watches follow the weights: open streams per unit of weight are evened out', (t) => {
  const list = [endpoint(1, { weight: 2 }), endpoint(2), endpoint(3)];
  const picker = pickerOver(list);
  for (let k = 0; k < 40; k++) openWatch(picker);
  t.deepEqual(
    list.map((e) => e.streams),
    [20, 10, 10],
  );
});

test('a newcomer with no streams gets the next watches, slow start notwithstanding', (t) => {
  const clock = new FakeClock();
  const list = [endpoint(1), endpoint(2), endpoint(3)];
  list.forEach((e) => (e.streams = 10));
  list.push(endpoint(4, {}, clock.now()));
  const picker = pickerOver(list, 'round-robin', 'swrr', clock);
  for (let k = 0; k < 10; k++) t.is(openWatch(picker), list[3]!);
  t.deepEqual(Array.from({ length: 4 }, () => openWatch(picker).address).sort(), list.map((e) => e.address));
});

test('ties between watches go to a tied endpoint at random, whatever the schedule says', (t) => {
  // The same picker, the same streams everywhere, picked again and again: ties broken by the
  // schedule would give one endpoint every time (a watch pick takes no turn), and clients whose
  // schedules saw the same events would all give the same one.
  const list = [endpoint(1), endpoint(2), endpoint(3)];
  const picker = pickerOver(list);
  const counts = tally(3000, () => picker.pick({ longRunning: true })!);
  for (const e of list) t.true(Math.abs(counts.get(e)! - 1000) < 150, `${list.map((x) => counts.get(x)).join(' ')}`);
});

test('ties between watches: pickers opening their first watches at once spread them', (t) => {
  const firsts = new Set<string>();
  for (let k = 0; k < 60; k++) {
    const list = [endpoint(1), endpoint(2), endpoint(3)];
    const picker = pickerOver(list);
    const order = Array.from({ length: 3 }, () => openWatch(picker).address);
    t.is(new Set(order).size, 3);
    firsts.add(order[0]!);
  }
  t.is(firsts.size, 3, 'clients opening their first watch at once do not all choose the same apiserver');
});

test('picking a watch does not take a short request\'s turn', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3)];
  const picker = pickerOver(list);
  const order = Array.from({ length: 6 }, () => picker.pick(short));
  for (let k = 0; k < 5; k++) openWatch(picker);
  const after = Array.from({ length: 6 }, () => picker.pick(short));
  t.deepEqual(after, order);
});

test('exclude: a retry never goes to an endpoint it tried, for short and long-running requests alike', (t) => {
  for (const kind of ['swrr', 'edf'] as const) {
    for (const policy of ['round-robin', 'least-request'] as const) {
      const list = Array.from({ length: 20 }, (_, i) => endpoint(i));
      const picker = pickerOver(list, policy, kind);
      const exclude = new Set(list.slice(0, 19));
      for (let k = 0; k < 50; k++) {
        t.is(picker.pick({ longRunning: false, exclude }), list[19]);
        t.is(picker.pick({ longRunning: true, exclude }), list[19]);
      }
      t.is(picker.pick({ longRunning: false, exclude: new Set(list) }), undefined);
      t.is(picker.pick({ longRunning: true, exclude: new Set(list) }), undefined);
      t.not(picker.pick({ longRunning: false, exclude: new Set() }), undefined, 'an empty set excludes nothing');
    }
  }
});

test('least-request: with no load it is the weighted round robin', (t) => {
  const list = [endpoint(1, { weight: 3 }), endpoint(2), endpoint(3)];
  const picker = pickerOver(list, 'least-request');
  const counts = tally(5000, () => picker.pick(short)!);
  t.deepEqual(
    list.map((e) => counts.get(e)),
    [3000, 1000, 1000],
  );
});

test('least-request: a busy endpoint is avoided, in proportion to its weight', (t) => {
  const list = [endpoint(1), endpoint(2), endpoint(3)];
  list[0]!.inFlight = 50;
  const picker = pickerOver(list, 'least-request');
  const counts = tally(3000, () => picker.pick(short)!);
  t.is(counts.get(list[0]!), undefined, 'the second choice is always another endpoint, and both others are idle');
  t.true(Math.abs(counts.get(list[1]!)! - 1500) < 200, String(counts.get(list[1]!)));
  // A heavy endpoint with proportionally more requests in flight is not "busier".
  const weighted = [endpoint(1, { weight: 4 }), endpoint(2)];
  weighted[0]!.inFlight = 4;
  weighted[1]!.inFlight = 1;
  const even = pickerOver(weighted, 'least-request');
  const split = tally(5000, () => even.pick(short)!);
  t.is(split.get(weighted[0]!), 4000, '4 / 4 = 1 / 1: a tie, so the round robin decides');
});

test('least-request keeps load even when requests pile up', (t) => {
  const list = Array.from({ length: 10 }, (_, i) => endpoint(i));
  const picker = pickerOver(list, 'least-request', 'edf');
  // Requests that never finish: in-flight counts must stay level.
  for (let k = 0; k < 1000; k++) picker.pick(short)!.inFlight++;
  const inFlight = list.map((e) => e.inFlight);
  t.true(Math.max(...inFlight) - Math.min(...inFlight) <= 2, String(inFlight));
});

test('least-request ramps a slow-starting endpoint like round robin does', (t) => {
  const clock = new FakeClock();
  const list = [endpoint(1), endpoint(2), endpoint(3, {}, clock.now())];
  const picker = pickerOver(list, 'least-request', 'swrr', clock);
  const counts = tally(2100, () => picker.pick(short)!);
  // Weights 1, 1, 0.1: the newcomer gets 1/21 of the requests, give or take the random start.
  t.true(Math.abs(counts.get(list[2]!)! - 100) <= 1);
});

test('exclude: once every candidate was tried, a retry goes to a weight-0 backup, then to the next priority level', (t) => {
  const [a, b, backup, next] = [endpoint(1), endpoint(2), endpoint(3, { weight: 0 }), endpoint(4, { priority: 1 })];
  const picker = pickerOver([a, b, backup, next]);
  t.deepEqual([...new Set(Array.from({ length: 20 }, () => picker.pick(short)!.address))].sort(), [a.address, b.address]);
  t.is(picker.pick({ longRunning: false, exclude: new Set([a, b]) }), backup);
  t.is(picker.pick({ longRunning: true, exclude: new Set([a, b]) }), backup);
  t.is(picker.pick({ longRunning: false, exclude: new Set([a, b, backup]) }), next);
  t.is(picker.pick({ longRunning: false, exclude: new Set([a, b, backup, next]) }), undefined);
});
