import test from 'ava';
import type { Endpoint } from '../../../src/balancer/Endpoint.ts';
import { EndpointSet } from '../../../src/balancer/EndpointSet.ts';
import { PROBE_MS, probeDue } from '../../../src/balancer/load/LoadWeights.ts';
import { address, endpoint, pickerOptions } from '../../helpers/endpoints.ts';
import { FakeClock } from '../../helpers/FakeClock.ts';

/** Three ready endpoints; the last one down-weighted, its last timed request `ago` ms before `now`. */
function three(now: number, ago: number) {
  const endpoints = [endpoint(0), endpoint(1), endpoint(2)];
  for (const e of endpoints) {
    e.latency.begin(now - 10);
    e.latency.end(now - 5, 5, false);
  }
  const slow = endpoints[2]!;
  slow.loadFactor = 0.005;
  slow.latency.startedAt = now - ago;
  return { endpoints, slow };
}

test('a down-weighted endpoint with nothing timed for PROBE_MS is due a probe, once', (t) => {
  const now = 100_000;
  const { endpoints, slow } = three(now, PROBE_MS);
  t.is(probeDue(endpoints, now), slow);
  t.is(probeDue(endpoints, now + 1), undefined, 'handed out: not again until PROBE_MS later, even if it went to an untimed request');
  t.is(probeDue(endpoints, now + PROBE_MS), slow);
});

test('no probe for an endpoint at full weight, tried recently, with a request in flight, or not ready', (t) => {
  const now = 100_000;
  t.is(probeDue(three(now, PROBE_MS - 1).endpoints, now), undefined, 'tried recently');
  const full = three(now, PROBE_MS);
  full.slow.loadFactor = 1;
  t.is(probeDue(full.endpoints, now), undefined, 'full weight: the round robin gives it its turns');
  const busy = three(now, PROBE_MS);
  busy.slow.latency.begin(now - PROBE_MS);
  t.is(probeDue(busy.endpoints, now), undefined, 'its last probe has not come back');
  const ejected = three(now, PROBE_MS);
  ejected.slow.state = 'ejected';
  t.is(probeDue(ejected.endpoints, now), undefined, 'health decides for an endpoint that is not ready');
});

test('through the EndpointSet: the probe goes to the next idempotent short request that is no retry, never to a write', (t) => {
  const clock = new FakeClock();
  const set = new EndpointSet(clock, pickerOptions({ slowStartMs: 0 }));
  set.update([address(0), address(1), address(2)]);
  const [fast, other, slow] = set.list() as [Endpoint, Endpoint, Endpoint];
  // Ten lone answers each, 20 ms from two endpoints, 100 ms from the third, 150 ms apart.
  for (let k = 0; k < 10; k++) {
    for (const e of [fast, other, slow]) {
      const at = clock.now();
      set.timedStart(e, at);
      set.shortEnded(e, at, false, at + (e === slow ? 100 : 20));
    }
    clock.advance(150);
  }
  t.true(slow.loadFactor < 0.01, `factor ${slow.loadFactor}`);
  // Writes use up whatever turn the round robin still owed the slow one from before.
  for (let k = 0; k < 50; k++) set.pick({ longRunning: false });
  clock.advance(PROBE_MS);
  const at = clock.now();
  set.timedStart(fast, at);
  set.shortEnded(fast, at, false, at + 20); // an answer: the factors are looked at again, the probe is due
  const writes = Array.from({ length: 20 }, () => set.pick({ longRunning: false }));
  t.false(writes.includes(slow), 'a write (not idempotent) is never the probe');
  t.not(set.pick({ longRunning: false, idempotent: true, exclude: new Set([fast]) }), slow, 'nor a retry');
  t.is(set.pick({ longRunning: false, idempotent: true }), slow);
  t.not(set.pick({ longRunning: false, idempotent: true }), slow, 'one probe');
});
