// Saturated, latency is queueing: an endpoint whose queue drained since its latency samples is
// judged by its in-flight count too (`reweigh`'s QUEUE_SLACK), so alike endpoints that a busy
// machine makes a little unequal do not idle one of them while the others queue.
import test from 'ava';
import { simulate } from '../../helpers/loadSimulation.ts';

/** Requests completed from 2 s on, over 8 s, ÷ the sum of the capacities. */
function saturated(serviceMs: number[], policy: 'weighted-round-robin' | 'least-request'): number {
  const sim = simulate({ serviceMs, concurrency: 64, picker: { policy } });
  const from = sim.clock.now() + 2_000;
  sim.run(10_000);
  const ideal = serviceMs.reduce((sum, ms) => sum + 4_000 / ms, 0);
  return sim.done.filter((d) => d.at >= from).length / 8 / ideal;
}

test('saturated, one endpoint 10–25 % slower than its peers: the load-aware default keeps ≥ 0.975 of the capacities, as least-request does', (t) => {
  for (const serviceMs of [[20, 20, 22], [20, 20, 25]]) {
    const aware = saturated(serviceMs, 'weighted-round-robin');
    const least = saturated(serviceMs, 'least-request');
    t.true(aware >= 0.975, `${serviceMs.join('/')} ms: ${aware.toFixed(3)}`);
    t.true(aware >= least - 0.01, `${serviceMs.join('/')} ms: load-aware ${aware.toFixed(3)}, least-request ${least.toFixed(3)}`);
  }
});

test('a light load leaves the queue correction out: alike endpoints keep full weight, a slow one still gets almost nothing', (t) => {
  const even = simulate({ serviceMs: [20, 20, 20], rate: 110 });
  even.run(10_000);
  t.deepEqual(even.set.list().map((e) => e.loadFactor), [1, 1, 1]);
  const slow = simulate({ serviceMs: [20, 20, 100], rate: 110 });
  const from = slow.clock.now() + 2_000;
  slow.run(10_000);
  t.true(slow.share(2, from, from + 8_000) < 0.01, `slow share ${slow.share(2, from, from + 8_000)}`);
});
