// BodyTimers, unit level on a fake clock: one clock timer for every running response, each failing
// exactly its own `ms` after its last chunk, never while its reader is paused.
import test from 'ava';
import { BodyTimers, type BodyTimer } from '../../src/dispatcher/BodyTimer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

function response(clock: FakeClock) {
  const reader: { paused: boolean; bodyTimer: BodyTimer | undefined } = { paused: false, bodyTimer: undefined };
  const result: { reader: typeof reader; failedAt?: number; error?: Error; abort(reason: Error): void } = {
    reader,
    abort(reason) {
      result.failedAt = clock.now();
      result.error = reason;
    },
  };
  return result;
}

test('responses of different timeouts share one clock timer, and each fails exactly its own ms after its last chunk', (t) => {
  const clock = new FakeClock();
  const timers = new BodyTimers(clock);
  const long = response(clock);
  const short = response(clock);
  const quiet = response(clock);
  timers.start(300_000, long.reader, long, clock.now());
  clock.advance(10);
  timers.start(5_000, short.reader, short, clock.now());
  clock.advance(10);
  const stopped = timers.start(100, quiet.reader, quiet, clock.now());
  t.is(clock.pending, 1, 'one clock timer for three responses');
  stopped.stop();
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

test('a paused reader never times out; its resume starts the wait afresh; close() leaves no clock timer', (t) => {
  const clock = new FakeClock();
  const timers = new BodyTimers(clock);
  const paused = response(clock);
  timers.start(1_000, paused.reader, paused, clock.now());
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
  const open = response(clock);
  timers.start(1_000, open.reader, open, clock.now());
  t.is(clock.pending, 1);
  timers.close();
  t.is(clock.pending, 0);
  clock.advance(10_000);
  t.is(open.failedAt, undefined);
});
