import test from 'ava';
import fc from 'fast-check';
import { Candidates } from '../../../src/balancer/Candidates.ts';
import { EarliestDeadline } from '../../../src/balancer/schedule/EarliestDeadline.ts';
import { FakeClock } from '../../helpers/FakeClock.ts';
import { candidatesOf, endpoint, worstWindow } from '../../helpers/endpoints.ts';

const run = (schedule: EarliestDeadline, picks: number): number[] => Array.from({ length: picks }, () => schedule.next());

const weightsOf = (min: number, max: number): fc.Arbitrary<number[]> =>
  fc.array(fc.oneof(fc.integer({ min: 1, max: 10 }), fc.double({ min: 0.01, max: 100, noNaN: true })), { minLength: min, maxLength: max });

test('equal weights are round robin over a shuffled order: each N consecutive picks hold every candidate once', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 200 }), fc.constantFrom(1, 33, 0.25), (n, weight) => {
      const weights = new Array<number>(n).fill(weight);
      const sequence = run(new EarliestDeadline(candidatesOf(weights)), 12 * n);
      for (let k = 0; k + n <= sequence.length; k += Math.max(1, n >> 3)) t.is(new Set(sequence.slice(k, k + n)).size, n);
      t.is(worstWindow(sequence, weights, 10 * n), 0);
    }),
    { numRuns: 50 },
  );
});

test('any weights: in every 10·N window each candidate is within (1 − p) + p·(N − 1) of its share p', (t) => {
  // Between two picks, every candidate has had each deadline before the later one and none after,
  // give or take the one at the boundary: that bounds the error of the window, for any phases.
  fc.assert(
    fc.property(weightsOf(1, 60), (weights) => {
      const n = weights.length;
      const total = weights.reduce((a, b) => a + b, 0);
      const sequence = run(new EarliestDeadline(candidatesOf(weights)), 30 * n);
      const window = 10 * n;
      const counts = new Array<number>(n).fill(0);
      for (let k = 0; k < sequence.length; k++) {
        counts[sequence[k]!]!++;
        if (k >= window) counts[sequence[k - window]!]!--;
        if (k < window - 1) continue;
        counts.forEach((count, i) => {
          const p = weights[i]! / total;
          t.true(Math.abs(count - window * p) <= 1 - p + p * (n - 1) + 1e-9);
        });
      }
    }),
    { numRuns: 60 },
  );
});

test('over long runs the shares converge on the weights', (t) => {
  fc.assert(
    fc.property(weightsOf(17, 60), (weights) => {
      const total = weights.reduce((a, b) => a + b, 0);
      const picks = 400 * weights.length;
      const counts = new Array<number>(weights.length).fill(0);
      for (const i of run(new EarliestDeadline(candidatesOf(weights)), picks)) counts[i]!++;
      counts.forEach((count, i) => t.true(Math.abs(count / picks - weights[i]! / total) < 0.01));
    }),
    { numRuns: 30 },
  );
});

test('two schedules over the same set start at different points', (t) => {
  fc.assert(
    fc.property(weightsOf(2, 60), (weights) => {
      // Long enough for the lightest candidate to come round twice, or the starts could look alike.
      const picks = Math.ceil((2 * weights.reduce((a, b) => a + b, 0)) / Math.min(...weights));
      const starts = new Set(Array.from({ length: 48 }, () => run(new EarliestDeadline(candidatesOf(weights)), picks).join()));
      t.true(starts.size > 1);
    }),
    { numRuns: 50 },
  );
});

test('a rebuilt schedule over the same candidates continues where the old one was', (t) => {
  const candidates = candidatesOf(Array.from({ length: 40 }, (_, i) => 1 + (i % 7)));
  let schedule = new EarliestDeadline(candidates);
  const reference = new EarliestDeadline(candidates, schedule);
  const rebuilt: number[] = [];
  for (let k = 0; k < 2000; k++) {
    if (k % 13 === 0) schedule = new EarliestDeadline(candidates, schedule);
    rebuilt.push(schedule.next());
  }
  t.deepEqual(rebuilt, run(reference, rebuilt.length));
});

test('an endpoint that stays keeps its place when others join; newcomers start at a random phase', (t) => {
  const list = Array.from({ length: 20 }, (_, i) => endpoint(i));
  const select = (): Candidates => Candidates.select(list, { panicThreshold: 0.5, slowStartMs: 0 }, new FakeClock());
  const before = new EarliestDeadline(select());
  const order = run(before, 20);
  list.push(endpoint(20), endpoint(21));
  const after = new EarliestDeadline(select(), before);
  const next = run(after, 22);
  // The 20 old endpoints come round in the same order; the two new ones slot in somewhere.
  t.deepEqual(
    next.filter((i) => i < 20),
    order,
  );
  t.deepEqual(new Set(next).size, 22);
});

test('nextExcept skips excluded candidates and answers −1 when all are excluded', (t) => {
  const candidates = candidatesOf(Array.from({ length: 30 }, () => 1));
  const schedule = new EarliestDeadline(candidates);
  const excluded = new Set(candidates.endpoints.slice(0, 29));
  for (let k = 0; k < 10; k++) t.is(schedule.nextExcept(excluded), 29);
  t.is(schedule.nextExcept(new Set(candidates.endpoints)), -1);
  const counts = new Array<number>(30).fill(0);
  for (let k = 0; k < 3000; k++) counts[schedule.next()]!++;
  t.true(counts.every((count) => Math.abs(count - 100) <= 11), 'the retries do not upset the order for long');
});

test('virtual time is rebased without changing the order', (t) => {
  // Tiny weights make each pick move virtual time far: 2^20 is passed within a few hundred picks.
  const weights = Array.from({ length: 20 }, (_, i) => (i % 2 ? 0.001 : 0.002));
  const candidates = Candidates.select(
    weights.map((weight, i) => {
      const e = endpoint(i, { weight: 1 });
      e.weightFactor = weight;
      return e;
    }),
    { panicThreshold: 0.5, slowStartMs: 0 },
    new FakeClock(),
  );
  const sequence = run(new EarliestDeadline(candidates), 30_000);
  t.is(worstWindow(sequence, [...candidates.weights], 300) <= 2, true);
});
