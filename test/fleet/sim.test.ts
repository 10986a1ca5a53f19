import test from 'ava';
import { RetryAfter } from '../../fleet/server/RetryAfter.ts';
import { seeded } from '../../fleet/sim/random.ts';
import { Scheduler } from '../../fleet/sim/Scheduler.ts';

test('the scheduler runs timers in time order, ties in the order they were set, and skips cleared ones', async (t) => {
  const clock = new Scheduler();
  const seen: string[] = [];
  clock.setTimeout(() => seen.push('b'), 20);
  clock.setTimeout(() => seen.push('a'), 10);
  clock.setTimeout(() => seen.push('c'), 20);
  const cleared = clock.setTimeout(() => seen.push('never'), 15);
  clock.clearTimeout(cleared);
  clock.setTimeout(() => clock.setTimeout(() => seen.push(`d@${clock.now()}`), 5), 30);
  await clock.run(100);
  t.deepEqual(seen, ['a', 'b', 'c', 'd@35']);
  t.is(clock.now(), 100);
});

test('the scheduler keeps time order, ties in insertion order, when most timers are cleared (the heap compacts)', async (t) => {
  const clock = new Scheduler();
  const random = seeded(7);
  const expected: Array<{ at: number; n: number }> = [];
  const seen: number[] = [];
  for (let n = 0; n < 6000; n++) {
    // Whole milliseconds, so that many share a time and insertion order decides.
    const at = Math.floor(random() * 500);
    const timer = clock.setTimeout(() => seen.push(n), at);
    // Two in three cleared: well past the point where the heap drops them.
    if (n % 3 !== 0) clock.clearTimeout(timer);
    else expected.push({ at, n });
  }
  await clock.run(1000);
  expected.sort((a, b) => a.at - b.at || a.n - b.n);
  t.deepEqual(seen, expected.map((e) => e.n));
});

test('the scheduler lets promise continuations run before virtual time moves on', async (t) => {
  const clock = new Scheduler();
  const seen: number[] = [];
  clock.setTimeout(() => {
    clock.touch();
    void Promise.resolve().then(() => clock.setTimeout(() => seen.push(clock.now()), 1));
  }, 10);
  clock.setTimeout(() => seen.push(-clock.now()), 50);
  await clock.run(100);
  t.deepEqual(seen, [11, -50]);
});

test('APF Retry-After: 1 s, doubling under sustained drops up to 32 s, back down by one when they stop', (t) => {
  const tracker = new RetryAfter();
  t.is(tracker.seconds, 1);
  let second = 0;
  for (; second < 200; second++) for (let i = 0; i < 200; i++) tracker.dropped(second * 1000 + i);
  t.is(tracker.seconds, 32);
  // While the heavy seconds are in its window it stays; then fewer drops than retryAfter lower it by one each time.
  for (let s = second; s < second + 30; s += 2) tracker.dropped(s * 1000);
  t.is(tracker.seconds, 32);
  for (let s = second + 30; s < second + 80; s += 2) tracker.dropped(s * 1000);
  t.true(tracker.seconds < 32 && tracker.seconds > 1, `${tracker.seconds}`);
});

test('seeded random is reproducible and spread over [0, 1)', (t) => {
  const a = seeded(1, 2);
  const b = seeded(1, 2);
  const values = Array.from({ length: 1000 }, () => a());
  t.deepEqual(values.slice(0, 5), Array.from({ length: 5 }, () => b()));
  t.true(values.every((v) => v >= 0 && v < 1));
  t.true(Math.abs(values.reduce((x, y) => x + y, 0) / values.length - 0.5) < 0.05);
  t.notDeepEqual(seeded(1, 3)(), seeded(1, 2)());
});
