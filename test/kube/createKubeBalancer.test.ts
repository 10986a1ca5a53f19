// The kubeconfig's credentials are read once a second at most, in the balancer's own time.
import test from 'ava';
import { cachedFor } from '../../src/kube/createKubeBalancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

test('one reading serves for the TTL of options.clock time, then the next call reads again; a failed reading is not kept', async (t) => {
  const clock = new FakeClock();
  let reads = 0;
  let fail = false;
  const credentials = cachedFor(1_000, clock, () => {
    reads++;
    return fail ? Promise.reject(new Error('exec plugin failed')) : Promise.resolve({ authorization: `Bearer ${reads}` });
  });
  t.deepEqual(await credentials(), { authorization: 'Bearer 1' });
  clock.advance(999);
  t.deepEqual(await credentials(), { authorization: 'Bearer 1' });
  clock.advance(1);
  t.deepEqual(await credentials(), { authorization: 'Bearer 2' });

  clock.advance(1_000);
  fail = true;
  await t.throwsAsync(credentials(), { message: 'exec plugin failed' });
  fail = false;
  t.deepEqual(await credentials(), { authorization: 'Bearer 4' }, 'read again at once');
  t.is(reads, 4);
});

test('a first answer given up front serves for the TTL before anything is read', async (t) => {
  const clock = new FakeClock();
  let reads = 0;
  const credentials = cachedFor(
    1_000,
    clock,
    () => Promise.resolve({ authorization: `Bearer ${++reads}` }),
    { authorization: 'Bearer 0' },
  );
  clock.advance(999);
  t.deepEqual(await credentials(), { authorization: 'Bearer 0' });
  t.is(reads, 0);
  clock.advance(1);
  t.deepEqual(await credentials(), { authorization: 'Bearer 1' });
});
