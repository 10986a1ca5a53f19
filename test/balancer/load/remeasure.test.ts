// A lagging endpoint is re-measured by time, not by its share (issue 27, `load/remeasure.ts`), on
// the fake clock: the real EndpointSet and Hedging in front of simulated servers. What
// `kube-balancer demo` met at ~50 calls a second: a few slow answers in a row put one apiserver
// at the weights' floor, where it got no request that would measure it again, and it stayed out
// until its estimate aged (~6 s) although it was fast again at once.
import test from 'ava';
import { simulate, type Simulation } from '../../helpers/loadSimulation.ts';

const SERVICE_MS = 4;
const RATE = 50;
/** The demo's mix: 3 in 7 calls are GETs of one object, the others LISTs, creates and deletes. */
const request = (i: number) => (i % 7 < 3 ? { timed: true, cost: 1 } : { timed: false, cost: 1, loadClass: `class ${i % 7}` });

function share(sim: Simulation, server: number): number {
  const factors = sim.set.list().map((e) => e.loadFactor);
  return factors[server]! / factors.reduce((a, b) => a + b, 0);
}

/**
 * Slows `server` to 10× for `slowMs`, then back, and runs 8 s more; returns how low its load factor
 * fell and the ms from its recovery until its share is ≥ 90 % of a fair one again. Watched by a
 * timer on the fake clock, within one run: a run that ends on a send's time would skip that send.
 */
function blip(sim: Simulation, server: number, slowMs: number): { floor: number; backAfterMs: number } {
  const s = sim.servers[server]!;
  const clock = sim.clock;
  s.serviceMs = 10 * SERVICE_MS;
  let recoveredAt = NaN;
  let floor = 1;
  let backAt = NaN;
  clock.setTimeout(() => {
    s.serviceMs = SERVICE_MS;
    recoveredAt = clock.now();
  }, slowMs);
  const observe = (): void => {
    floor = Math.min(floor, sim.set.list()[server]!.loadFactor);
    if (recoveredAt === recoveredAt && floor < 0.01 && share(sim, server) >= 0.9 / 3) backAt = clock.now();
    else clock.setTimeout(observe, 10);
  };
  observe();
  sim.run(slowMs + 8_000);
  return { floor, backAfterMs: backAt - recoveredAt };
}

test('an endpoint at the floor after a few slow answers at 50 req/s is back to 90 % of its share within 2 s of answering fast again', (t) => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const sim = simulate({ serviceMs: [SERVICE_MS, SERVICE_MS, SERVICE_MS], slots: 100, rate: RATE, request, explore: true, seed });
    sim.run(5_000);
    t.deepEqual(
      sim.set.list().map((e) => e.loadFactor),
      [1, 1, 1],
    );
    const before = sim.copies;
    const { floor, backAfterMs } = blip(sim, 1, 400);
    t.true(floor < 0.01, `seed ${seed}: pushed to the floor (${floor})`);
    t.log(`seed ${seed}: back after ${backAfterMs} ms, ${sim.copies - before} copies`);
    t.true(backAfterMs <= 2_000, `seed ${seed}: back ${backAfterMs} ms after it answered fast again`);
    // A handful of copies measured it meanwhile, and none once it was back (8 s).
    t.true(sim.copies - before <= 6, `seed ${seed}: ${sim.copies - before} copies`);
    const end = sim.clock.now();
    const last = sim.share(1, end - 3_000, end);
    t.true(last > 0.3, `seed ${seed}: its share of the last 3 s: ${last.toFixed(3)}`);
  }
});

test('a still-slow endpoint is re-measured less and less often, stays out while it is slow, and is back soon after it recovers', (t) => {
  const sim = simulate({ serviceMs: [SERVICE_MS, SERVICE_MS, SERVICE_MS], slots: 100, rate: RATE, request, explore: true });
  sim.run(5_000);
  const slowAt = sim.clock.now();
  sim.servers[1]!.serviceMs = 25 * SERVICE_MS;
  const copies: number[] = [];
  for (let k = 0; k < 30; k++) {
    const before = sim.copies;
    sim.run(1_000);
    copies.push(sim.copies - before);
  }
  t.log(`copies in each second of its slowness: ${copies.join(' ')}`);
  const sum = (from: number, to: number): number => copies.slice(from, to).reduce((a, b) => a + b, 0);
  t.true(sum(0, 3) >= 3, 'a brief slowness is re-measured about twice a second');
  t.true(sum(20, 30) <= 4, 'a lasting one every few seconds');
  // Its fresh samples keep it at the floor: hardly any caller's request waits there.
  const callers = sim.done.filter((d) => d.server === 1 && d.at >= slowAt + 1_000).length;
  t.true(callers <= 3, `callers' requests there in 29 s: ${callers}`);
  // Re-measured every 4 s by now, it is back within about that once it answers fast again.
  sim.servers[1]!.serviceMs = SERVICE_MS;
  const recoveredAt = sim.clock.now();
  let backAt = NaN;
  const observe = (): void => {
    if (share(sim, 1) >= 0.9 / 3) backAt = sim.clock.now();
    else sim.clock.setTimeout(observe, 10);
  };
  observe();
  sim.run(10_000);
  t.log(`back after ${backAt - recoveredAt} ms`);
  t.true(backAt - recoveredAt <= 5_000, `back after ${backAt - recoveredAt} ms`);
});
