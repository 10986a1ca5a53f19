import test from 'ava';
import { certs } from '../../fixtures/certs/index.ts';
import { TlsState } from '../../src/net/TlsState.ts';

const a = { ca: certs.ca, cert: certs.client.cert, key: certs.client.key, rejectUnauthorized: true };
const b = { ...a, cert: certs.rotated.cert, key: certs.rotated.key };

test('the same material (strings or buffers) is no change; new material is a new generation', (t) => {
  const state = new TlsState(a);
  t.false(state.replace({ ...a, ca: Buffer.from(certs.ca), cert: Buffer.from(a.cert) }, state.beginReading()));
  t.is(state.generation, 0);
  t.true(state.replace(b, state.beginReading()));
  t.is(state.generation, 1);
  t.is(state.current, b);
  t.true(state.replace({ ...b, servername: 'kubernetes.default.svc' }, state.beginReading()));
  t.true(state.replace({ ...b, servername: 'kubernetes.default.svc', rejectUnauthorized: false }, state.beginReading()));
  t.true(state.replace({ ...b, servername: 'kubernetes.default.svc', rejectUnauthorized: false, ca: [certs.ca, certs.foreignCa] }, state.beginReading()));
  t.is(state.generation, 4);
});

test('a reading that began before the one in force never switches back, however late it ends', (t) => {
  const state = new TlsState(a);
  const slow = state.beginReading(); // e.g. an exec plugin that takes 10 s on a busy machine
  const rotated = state.beginReading();
  t.true(state.replace(b, rotated));
  t.false(state.replace(a, slow), 'began before the rotation, ended after it');
  t.is(state.current, b);
  t.true(state.replace(a, state.beginReading()), 'a reading begun afterwards is a change like any other');
  t.is(state.generation, 2);
});

test('holds() compares settings not yet validated, with verification on by default', (t) => {
  const state = new TlsState(a);
  const stale = state.beginReading();
  t.true(state.holds({ ca: Buffer.from(certs.ca), cert: a.cert, key: Buffer.from(a.key) }, stale));
  t.false(state.holds({ ca: certs.ca, cert: a.cert, key: a.key, rejectUnauthorized: false }, stale));
  t.false(state.holds({ ca: certs.ca }, stale));
  t.true(state.replace(b, state.beginReading()));
  t.true(state.holds({ ca: certs.ca, cert: a.cert, key: a.key }, stale), 'a stale reading');
});
