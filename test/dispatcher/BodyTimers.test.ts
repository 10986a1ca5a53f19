// BodyTimers, unit level on a fake clock: one clock timer for every running response, each failing
// exactly its own `ms` after its last chunk, never while its reader is paused.
import test from 'ava';
import { BodyTimer, BodyTimers } from '../../src/dispatcher/BodyTimer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

/** A response as an attempt is one: its own timer. */
class Response extends BodyTimer {
  readonly reader: { paused: boolean; bodyTimer: BodyTimer | undefined } = { paused: false, bodyTimer: undefined };
  failedAt: number | undefined;
  error: Error | undefined;
  readonly #clock: FakeClock;

  constructor(clock: FakeClock) {
    super();
    this.#clock = clock;
  }

  abort(reason: Error): void {
    this.failedAt = this.#clock.now();
    this.error = reason;
  }
}

function response(clock: FakeClock): Response {
  return new Response(clock);
}

test('responses of different timeouts share one clock timer, and each fails exactly its own ms after its last chunk', (t) => {
  const clock = new FakeClock();
  const timers = new BodyTimers(clock);
  const long = response(clock);
  const short = response(clock);
  const quiet = response(clock);
  timers.start(long, 300_000, clock.now());
  clock.advance(10);
  timers.start(short, 5_000, clock.now());
  clock.advance(10);
  timers.start(quiet, 100, clock.now());
  t.is(clock.pending, 1, 'one clock timer for three responses');
  quiet.stop();
  t.is(quiet.reader.bodyTimer, undefined);
  clock.advance(4_000);
  short.reader.bodyTimer!.touch();
  clock.advance(4_999);
  t.is(short.failedAt, undefined, 'data restarted the wait');
  clock.advance(1);
  t.is(short.failedAt, 1_000_000 + 10 + 10 + 4_000 + 5_000);
  t.is((short.error as { code?: string }).code, 'UND_ERR_BODY_TIMEOUT');
  t.is(long.failedAt, undefined);
  clock.advance(300_000 - 9_020 - 1);
  t.is(long.failedAt, undefined, 'not yet due at 299,999 ms');
  clock.advance(1);
  t.is(long.failedAt, 1_300_000);
  t.is(quiet.failedAt, undefined, 'a stopped timer never fires');
});

test('a paused reader never times out; its resume starts the wait afresh', (t) => {
  const clock = new FakeClock();
  const timers = new BodyTimers(clock);
  const paused = response(clock);
  timers.start(paused, 1_000, clock.now());
  paused.reader.paused = true;
  clock.advance(10_500);
  t.is(paused.failedAt, undefined);
  paused.reader.paused = false;
  paused.reader.bodyTimer!.touch();
  const resumedAt = clock.now();
  clock.advance(999);
  t.is(paused.failedAt, undefined);
  clock.advance(1);
  t.is(paused.failedAt, resumedAt + 1_000);
});

test('close() is graceful: running timers still fire, responses that begin after it are timed, and the clock timer goes with the last', (t) => {
  const clock = new FakeClock();
  const timers = new BodyTimers(clock);
  timers.close();
  t.is(clock.pending, 0, 'nothing running: nothing armed');

  const open = response(clock);
  const ends = response(clock);
  timers.start(open, 1_000, clock.now());
  timers.start(ends, 5_000, clock.now());
  timers.close();
  t.is(clock.pending, 1, 'still timing the bodies in flight');
  const closedAt = clock.now();
  clock.advance(1_000);
  t.is(open.failedAt, closedAt + 1_000, 'a silent body in flight at close() still fails');
  t.is(clock.pending, 1);
  ends.stop();
  t.is(clock.pending, 0, 'the last one out clears the clock timer');

  // Headers of a request in flight may arrive after close(): its body is timed, then nothing is left.
  const late = response(clock);
  timers.start(late, 2_000, clock.now());
  t.is(clock.pending, 1);
  clock.advance(2_000);
  t.is(late.failedAt, closedAt + 3_000);
  t.is(clock.pending, 0);
  const stopped = response(clock);
  timers.start(stopped, 2_000, clock.now());
  stopped.stop();
  t.is(clock.pending, 0, 'a response ending before its timeout leaves no clock timer once closed');
});
