import test from 'ava';
import { PROBE_MS, probeDue } from '../../../src/balancer/load/LoadWeights.ts';
import { endpoint } from '../../helpers/endpoints.ts';

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
