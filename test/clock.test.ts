import test from 'ava';
import { PatientTimer, type Clock, type ClockTimer } from '../src/clock.ts';

/** A clock whose timers fire only when the test says, at whatever time it has set: a late timer is one fired after its due time. */
class HandClock implements Clock {
  time = 0;
  readonly due: Array<{ handle: ClockTimer; at: number; callback: () => void }> = [];
  now(): number {
    return this.time;
  }
  setTimeout(callback: () => void, ms: number): ClockTimer {
    const handle = {};
    this.due.push({ handle, at: this.time + ms, callback });
    return handle;
  }
  clearTimeout(timer: ClockTimer): void {
    const i = this.due.findIndex((t) => t.handle === timer);
    if (i >= 0) this.due.splice(i, 1);
  }
  /** Fires the oldest timer at `time` (late if after its due time). */
  fireAt(time: number): void {
    this.time = time;
    this.due.shift()!.callback();
  }
}

/** A timer put off when 50 ms late or more, on a `HandClock`; `calls`: the times its callback ran at. */
function patient(): { clock: HandClock; calls: number[]; timer: PatientTimer } {
  const clock = new HandClock();
  const calls: number[] = [];
  return { clock, calls, timer: new PatientTimer(clock, (now) => calls.push(now), () => 50) };
}

test('a timer fired on time calls back at once, with the time it ran at', (t) => {
  const { clock, calls, timer } = patient();
  timer.arm(100);
  t.true(timer.armed);
  t.is(timer.dueAt, 100);
  clock.fireAt(149);
  t.deepEqual(calls, [149]);
  t.false(timer.armed);
});

test('a timer fired late by lateMs or more waits 1 ms once, so that what came meanwhile is read first, then calls back', (t) => {
  const { clock, calls, timer } = patient();
  timer.arm(100);
  clock.fireAt(150);
  t.deepEqual(calls, [], 'put off');
  t.true(timer.armed);
  t.is(timer.dueAt, 151);
  t.is(clock.due[0]!.at, 151);
  // Late again (the stall goes on): it is not put off twice.
  clock.fireAt(400);
  t.deepEqual(calls, [400]);
  t.false(timer.armed);
});

test('rearming forgets a deferral, and clear stops it', (t) => {
  const { clock, calls, timer } = patient();
  timer.arm(100);
  clock.fireAt(200);
  timer.arm(10, 200);
  t.is(clock.due.length, 1, 'the deferred firing was replaced');
  clock.fireAt(300);
  t.deepEqual(calls, [], 'late again: put off again, as the firing is a new one');
  clock.fireAt(301);
  t.deepEqual(calls, [301]);
  timer.arm(10);
  timer.clear();
  t.false(timer.armed);
  t.is(clock.due.length, 0);
});
