import test from 'ava';
import { withHost } from '../../src/net/headers.ts';

test('adds host to every header shape undici accepts', (t) => {
  t.deepEqual(withHost(null, 'a:1'), { host: 'a:1' });
  t.deepEqual(withHost(undefined, 'a:1'), { host: 'a:1' });
  const alone = Object.freeze({ host: 'a:1' });
  t.is(withHost(null, 'a:1', alone), alone, 'no headers: the shared object the caller passes');
  t.deepEqual(withHost({ accept: 'x' }, 'a:1', alone), { accept: 'x', host: 'a:1' });
  t.deepEqual(withHost({ accept: 'x' }, 'a:1'), { accept: 'x', host: 'a:1' });
  t.deepEqual(withHost(['accept', 'x'], 'a:1'), ['accept', 'x', 'host', 'a:1']);
  t.deepEqual(withHost(new Map([['accept', 'x']]), 'a:1'), ['accept', 'x', 'host', 'a:1']);
  t.deepEqual(withHost(new Map([['accept', ['x', 'y']]]), 'a:1'), ['accept', 'x', 'accept', 'y', 'host', 'a:1']);
});

test("keeps the caller's own host header", (t) => {
  const object = { Host: 'mine' };
  t.is(withHost(object, 'a:1'), object);
  const flat = ['HOST', 'mine'];
  t.is(withHost(flat, 'a:1'), flat);
  const pairs = new Map([['host', 'mine']]);
  t.is(withHost(pairs, 'a:1'), pairs);
});
