// The --verbose leak report: a timer a schedule leaves open is named by where it was made.
import { setImmediate as tick } from 'node:timers/promises';
import test from 'ava';
import { mark, origins, trackResources } from '../../chaos/leaks.ts';

test('a timer made after the mark and still open is reported with its creation frames; cleared, it is not', async (t) => {
  const before = setTimeout(() => {}, 60_000);
  trackResources();
  const since = mark();
  const leaked = setTimeout(() => {}, 60_000);
  // Unref'd (as an HTTP/2 stream's idle timer): it holds nothing, and getActiveResourcesInfo does not count it.
  const unrefd = setTimeout(() => {}, 60_000).unref();
  t.teardown(() => [before, leaked, unrefd].forEach(clearTimeout));
  const found = origins('Timeout', since);
  t.is(found.length, 1, 'only the timer made after the mark');
  t.regex(found[0]!, /leaks\.test\.ts/);
  clearTimeout(leaked);
  // async_hooks emits destroy after the current tick.
  for (let i = 0; i < 5 && origins('Timeout', since).length > 0; i++) await tick();
  t.deepEqual(origins('Timeout', since), []);
  t.deepEqual(origins('NoSuchKind', since), []);
});
