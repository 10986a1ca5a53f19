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
  t.deepEqual(withHost(new Map([['host', 'mine']]), 'a:1'), ['host', 'mine']);
});

test('a one-shot iterable of pairs is read once, into the flat copy returned, whether or not it names a host', (t) => {
  function* pairs(host?: string): Generator<[string, string]> {
    yield ['accept', 'x'];
    if (host) yield ['Host', host];
  }
  for (const [headers, expected] of [
    [pairs(), ['accept', 'x', 'host', 'a:1']],
    [pairs('mine'), ['accept', 'x', 'Host', 'mine']],
    [new Map([['host', 'mine']]).entries(), ['host', 'mine']],
  ] as const) {
    const out = withHost(headers, 'a:1');
    t.deepEqual(out, expected);
    t.deepEqual(withHost(out, 'a:1'), expected, 'the copy serves again');
  }
});
