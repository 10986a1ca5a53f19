import test from 'ava';
import { certs } from '../../fixtures/certs/index.ts';
import { TlsState } from '../../src/net/TlsState.ts';

const a = { ca: certs.ca, cert: certs.client.cert, key: certs.client.key, rejectUnauthorized: true };
const b = { ...a, cert: certs.rotated.cert, key: certs.rotated.key };

test('the same material (strings or buffers) is no change; new material is a new generation', (t) => {
  const state = new TlsState(a);
  t.false(state.replace({ ...a, ca: Buffer.from(certs.ca), cert: Buffer.from(a.cert) }, 0));
  t.is(state.generation, 0);
  t.true(state.replace(b, 0));
  t.is(state.generation, 1);
  t.is(state.current, b);
  t.true(state.replace({ ...b, servername: 'kubernetes.default.svc' }, 5000));
  t.true(state.replace({ ...b, servername: 'kubernetes.default.svc', rejectUnauthorized: false }, 10_000));
  t.true(state.replace({ ...b, servername: 'kubernetes.default.svc', rejectUnauthorized: false, ca: [certs.ca, certs.foreignCa] }, 15_000));
  t.is(state.generation, 4);
});

test('a reading that brings back the material just switched away from is stale for 2 s', (t) => {
  const state = new TlsState(a);
  t.true(state.replace(b, 1000));
  t.false(state.replace(a, 2500), 'began before the rotation, ended after it');
  t.is(state.current, b);
  t.true(state.replace(a, 3000), 'after 2 s it is a change like any other');
  t.is(state.generation, 2);
});

test('holds() compares settings not yet validated, with verification on by default', (t) => {
  const state = new TlsState(a);
  t.true(state.holds({ ca: Buffer.from(certs.ca), cert: a.cert, key: Buffer.from(a.key) }, 0));
  t.false(state.holds({ ca: certs.ca, cert: a.cert, key: a.key, rejectUnauthorized: false }, 0));
  t.false(state.holds({ ca: certs.ca }, 0));
  t.true(state.replace(b, 1000));
  t.true(state.holds({ ca: certs.ca, cert: a.cert, key: a.key }, 2500), 'a stale reading');
});
