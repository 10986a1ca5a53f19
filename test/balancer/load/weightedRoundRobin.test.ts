// The 'weighted-round-robin' policy end to end on a fake clock: the real EndpointSet in front of
// simulated capacity-bound servers (4 requests at once each; the set-up: 20/20/100 ms).
import test from 'ava';
import { percentile } from '../../../bench/lib.ts';
import { simulate, type Simulation } from '../../helpers/loadSimulation.ts';
import { worstWindow } from '../../helpers/endpoints.ts';

const factors = (sim: Simulation): number[] => sim.set.list().map((e) => e.loadFactor);

/** The fraction of the callers' requests sent in [from, to) that `server` answered (exploration copies are no caller's). */
function waitedOn(sim: Simulation, server: number, from: number, to: number): number {
  const done = sim.done.filter((d) => d.at >= from && d.at < to);
  return done.filter((d) => d.server === server).length / done.length;
}

function p99(sim: Simulation, from: number): number {
  return percentile(sim.done.filter((d) => d.at >= from).map((d) => d.ms).sort((a, b) => a - b), 0.99);
}

test("a slow endpoint's share falls within a second and comes back within 10 s of it recovering, with or without exploration copies", (t) => {
  for (const [rate, explore] of [[110, false], [10, false], [110, true], [10, true]] as const) {
    const sim = simulate({ serviceMs: [20, 20, 20], rate, explore });
    const start = sim.clock.now();
    sim.run(3_000);
    t.deepEqual(factors(sim), [1, 1, 1], `${rate}/s: alike servers, no load factor`);
    sim.servers[2]!.serviceMs = 100;
    const slowAt = sim.clock.now();
    const copies = sim.copies;
    sim.run(10_000);
    // The callers' requests: exploration copies re-measure it on top, paced by time (`load/remeasure.ts`).
    const slowShare = waitedOn(sim, 2, slowAt + 1_000, slowAt + 10_000);
    t.true(slowShare < 0.03, `${rate}/s: slow share ${slowShare}`);
    t.true(sim.copies - copies <= 12, `${rate}/s: ${sim.copies - copies} copies in 10 s`);
    t.true(sim.set.list()[2]!.lagging);
    if (explore) t.true(waitedOn(sim, 2, slowAt + 1_000, slowAt + 10_000) < 0.005, `${rate}/s: callers waited on it: ${waitedOn(sim, 2, slowAt + 1_000, slowAt + 10_000)}`);
    sim.servers[2]!.serviceMs = 20;
    const recoveredAt = sim.clock.now();
    sim.run(13_000);
    t.deepEqual(factors(sim), [1, 1, 1], `${rate}/s: back to full weight`);
    t.false(sim.set.list()[2]!.lagging, `${rate}/s: no longer lagging`);
    // From 10 s after the recovery on, a third again (3 s: a whole number of round-robin cycles at 10/s).
    t.true(Math.abs(sim.share(2, recoveredAt + 10_000, recoveredAt + 13_000) - 1 / 3) < 0.02, `${rate}/s: ${sim.share(2, recoveredAt + 10_000, recoveredAt + 13_000)}`);
    t.true(start < slowAt);
  }
});

test('when the share falls, it falls at once: within 500 ms of the first slow answers', (t) => {
  const sim = simulate({ serviceMs: [20, 20, 20], rate: 110 });
  sim.run(2_000);
  sim.servers[2]!.serviceMs = 100;
  const slowAt = sim.clock.now();
  sim.run(2_000);
  t.true(sim.share(2, slowAt + 500, slowAt + 2_000) < 0.03, `${sim.share(2, slowAt + 500, slowAt + 2_000)}`);
});

test('alike endpoints stay exactly even (±1 in every 10·N window), lightly loaded and saturated, and none lags', (t) => {
  for (const load of [{ rate: 110 }, { concurrency: 64 }, { concurrency: 3 }, { rate: 110, explore: true }, { concurrency: 64, explore: true }]) {
    const sim = simulate({ serviceMs: [20, 20, 20], ...load });
    sim.run(10_000);
    t.deepEqual(factors(sim), [1, 1, 1]);
    t.true(worstWindow(sim.picks.map((p) => p.server), [1, 1, 1], 30) <= 1, JSON.stringify(load));
    t.is(sim.copies, 0, JSON.stringify(load));
  }
});

test("the issue's set-up: saturated ≈ 0.95 of the capacities' sum, light-load p99 ≤ 1.3× the fast service time", (t) => {
  const capacity = 4 / 20 + 4 / 20 + 4 / 100; // requests per ms
  for (const explore of [false, true]) {
    const saturated = simulate({ serviceMs: [20, 20, 100], concurrency: 64, explore });
    const from = saturated.clock.now() + 2_000;
    saturated.run(10_000);
    const throughput = saturated.done.filter((d) => d.at >= from).length / 8_000;
    t.log(`saturated${explore ? ', exploration copies' : ''}: ${(throughput / capacity).toFixed(3)} of capacity, ${saturated.copies} copies`);
    // 0.947–0.957 over the schedules' random starts: the target (0.95) is at the edge, so the floor is a notch below.
    t.true(throughput >= 0.94 * capacity, `saturated: ${(throughput / capacity).toFixed(3)} of capacity`);
    // Saturated, the slow one's picks are real requests (its cost near twice the queueing fast ones'): copies are rare —
    // 0.5 % of the requests, plus the re-measures, paced by time at one per 0.5 s at most over the 10 s
    // (load/remeasure.ts; 12–23 copies in all over the random starts).
    t.true(saturated.copies < 0.005 * saturated.done.length + 10_000 / 500, `${saturated.copies} copies`);
  }
  // Round robin as it was: the slow server caps everything at 3 × its capacity.
  const plain = simulate({ serviceMs: [20, 20, 100], concurrency: 64, picker: { policy: 'round-robin' } });
  const plainFrom = plain.clock.now() + 2_000;
  plain.run(10_000);
  t.true(plain.done.filter((d) => d.at >= plainFrom).length / 8_000 < 0.4 * capacity);

  const light = simulate({ serviceMs: [20, 20, 100], rate: 110 });
  const lightFrom = light.clock.now() + 2_000;
  light.run(10_000);
  t.true(p99(light, lightFrom) <= 26, `light-load p99 ${p99(light, lightFrom)} ms`);
});

test('lightly loaded, a 5× slower endpoint gets under 1 % in steady state, and still some', (t) => {
  // 110 requests a second over 30 s: its factor gives ~0.2 %, its estimate relaxing between its
  // answers once it is due to be measured again (load/measureAgain.ts) about as much again. Holding
  // lone answers instead halved it, but kept passing queues in a quiet fleet's weights (docs/fleet.md).
  const sim = simulate({ serviceMs: [20, 20, 100], rate: 110 });
  const from = sim.clock.now() + 2_000;
  sim.run(32_000);
  const share = sim.share(2, from, from + 30_000);
  t.true(share < 0.01, `slow share ${share}`);
  t.true(share > 0, 'it is still tried');
  t.true(p99(sim, from) <= 22, `p99 ${p99(sim, from)} ms`);
});

test('with exploration copies, lightly loaded, callers wait on a 5× slower endpoint for under 0.5 % of requests while it keeps its trickle, the same as without copies', (t) => {
  const run = (explore: boolean): Simulation => {
    const sim = simulate({ serviceMs: [20, 20, 100], rate: 110, explore });
    sim.run(32_000);
    return sim;
  };
  const plain = run(false);
  const copied = run(true);
  const from = copied.clock.now() - 30_000;
  const to = copied.clock.now();
  t.log(`slow share ${plain.share(2, from, to).toFixed(4)} → ${copied.share(2, from, to).toFixed(4)}; callers waited on it ${waitedOn(plain, 2, from, to).toFixed(4)} → ${waitedOn(copied, 2, from, to).toFixed(4)}; copies ${copied.copies}`);
  t.true(waitedOn(plain, 2, from, to) > 0.002, 'without copies, its trickle is the callers’');
  t.true(waitedOn(copied, 2, from, to) < 0.005, `callers waited on it: ${waitedOn(copied, 2, from, to)}`);
  // It gets the requests (and gives the answers) it would have had: the weights are not moved.
  t.true(Math.abs(copied.share(2, from, to) - plain.share(2, from, to)) < 0.002, `${copied.share(2, from, to)} against ${plain.share(2, from, to)}`);
  t.true(copied.share(2, from, to) > 0);
  // Within the hedge budget (2 % of the answers), and short of the reserve kept for black holes.
  t.true(copied.copies < 0.01 * copied.done.length, `${copied.copies} copies for ${copied.done.length} requests`);
  t.true(p99(copied, from) <= 22);
});

test("a busy machine's stalls (a process not run for 40 ms, every 300 ms): saturated equal endpoints stay near round robin's throughput, a slow one's light-load share stays small", (t) => {
  // Every stall makes one endpoint look slower for a moment; reacting to each would starve it and
  // idle its slots (with the estimate falling at τ = 300 ms: 0.87–0.90 against round robin's 0.96;
  // at τ = 1 s, 0.94).
  const stalls = { everyMs: 300, ms: 40 };
  const throughput = (policy: 'weighted-round-robin' | 'round-robin'): number => {
    const sim = simulate({ serviceMs: [20, 20, 20], concurrency: 64, stalls, picker: { policy } });
    const from = sim.clock.now() + 2_000;
    sim.run(10_000);
    return sim.done.filter((d) => d.at >= from).length / 8_000 / 0.6;
  };
  const aware = throughput('weighted-round-robin');
  const plain = throughput('round-robin');
  t.true(aware >= plain - 0.04, `load-aware ${aware.toFixed(3)}, round robin ${plain.toFixed(3)}`);
  const light = simulate({ serviceMs: [20, 20, 100], rate: 110, stalls });
  const from = light.clock.now() + 2_000;
  light.run(32_000);
  t.true(light.share(2, from, from + 30_000) < 0.02, `slow share ${light.share(2, from, from + 30_000)}`);
});

test('the mix does not matter: LISTs 20× dearer than GETs leave alike endpoints even, and a slow one still loses its share', (t) => {
  // One request in ten is a LIST (a collection: not timed), 20 times a GET's cost.
  const mixed = (i: number): { timed: boolean; cost: number } => (i % 10 === 3 ? { timed: false, cost: 20 } : { timed: true, cost: 1 });
  const even = simulate({ serviceMs: [5, 5, 5], rate: 110, request: mixed });
  even.run(10_000);
  t.deepEqual(factors(even), [1, 1, 1]);
  t.true(worstWindow(even.picks.map((p) => p.server), [1, 1, 1], 30) <= 1);
  // Were the LISTs timed too, whichever endpoint served the last ones would look slow: one LIST in
  // ten the estimate's median of three leaves out, one in three not.
  const naive = simulate({ serviceMs: [5, 5, 5], rate: 110, request: (i) => (i % 3 === 1 ? { timed: true, cost: 20 } : { timed: true, cost: 1 }) });
  naive.run(10_000);
  t.true(worstWindow(naive.picks.map((p) => p.server), [1, 1, 1], 30) > 1, 'timing every request unbalances alike endpoints');

  const slow = simulate({ serviceMs: [5, 5, 25], rate: 110, request: mixed });
  const from = slow.clock.now() + 2_000;
  slow.run(10_000);
  t.true(slow.share(2, from, from + 8_000) < 0.03, `${slow.share(2, from, from + 8_000)}`);
});

test('an endpoint that stops answering loses its share from its in-flight requests, before any of them fails', (t) => {
  const sim = simulate({ serviceMs: [20, 20, 20], rate: 110 });
  sim.run(2_000);
  sim.servers[1]!.serviceMs = Infinity;
  const at = sim.clock.now();
  sim.run(2_000);
  t.true(sim.share(1, at + 500, at + 2_000) < 0.03, `${sim.share(1, at + 500, at + 2_000)}`);
  t.true(sim.set.list()[1]!.loadFactor < 0.05);
  t.false(sim.set.list()[1]!.lagging, 'silent, not lagging: an exploration copy would only hang there, and hedges move what is stuck');
});

test("'round-robin' and 'least-request' keep no load factor", (t) => {
  for (const policy of ['round-robin', 'least-request'] as const) {
    const sim = simulate({ serviceMs: [20, 20, 100], rate: 110, picker: { policy } });
    sim.run(3_000);
    t.deepEqual(factors(sim), [1, 1, 1], policy);
  }
});

test('noise on every answer (a busy client machine) narrows the gap, and the slow one still gets little', (t) => {
  // An exponentially distributed extra 20 ms on every answer, whatever the server: the ratio of a
  // 100-ms server to a 20-ms one shrinks from 5 to about 2.5, and so does the penalty.
  const sim = simulate({ serviceMs: [20, 20, 100], rate: 110, jitterMs: 20 });
  const from = sim.clock.now() + 2_000;
  sim.run(10_000);
  const share = sim.share(2, from, from + 8_000);
  t.true(share < 0.05, `${share}`);
  t.true(share > 0.007, 'more than without noise: the limit of a latency ratio');
});
