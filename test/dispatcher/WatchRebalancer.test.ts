import test from 'ava';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { EndpointSet } from '../../src/balancer/EndpointSet.ts';
import { WatchRebalancer } from '../../src/dispatcher/WatchRebalancer.ts';

const GRACE_MS = 60_000;
import { FakeClock } from '../helpers/FakeClock.ts';

const address = (i: number): { address: string; port: number } => ({ address: `10.0.0.${i}`, port: 6443 });

/** One client: its endpoint set, its rebalancer, and watches that re-open where they are moved to. */
function client(clock: FakeClock, watches: number, random: () => number) {
  const set = new EndpointSet(clock, { policy: 'round-robin', slowStartMs: 0, panicThreshold: 0.5 });
  set.update([1, 2, 3].map(address));
  const rebalancer = new WatchRebalancer(set, clock, { maxPerSecond: 1, graceMs: GRACE_MS }, () => {}, random);
  /** Open watches, oldest first. */
  const open: Array<{ endpoint: Endpoint; watch: { move(): void } }> = [];
  const close = (endpoint: Endpoint, watch: { move(): void }): void => {
    rebalancer.closed(endpoint, watch);
    endpoint.streams--;
    open.splice(
      open.findIndex((w) => w.watch === watch),
      1,
    );
  };
  // As Balancer picks for a long-running request.
  const place = (): void => start(rebalancer.claim() ?? set.pick({ longRunning: true })!);
  const start = (endpoint: Endpoint): void => {
    endpoint.streams++;
    const watch = {
      move: () => {
        close(endpoint, watch);
        // The informer re-watches from its last resourceVersion.
        queueMicrotask(place);
      },
    };
    open.push({ endpoint, watch });
    rebalancer.opened(endpoint, watch);
  };
  for (let i = 0; i < watches; i++) start(set.pick({ longRunning: true })!);
  /** The oldest watch ends on its own (its timeout) and the informer starts a new one. */
  const endOldest = (): void => {
    const { endpoint, watch } = open[0]!;
    close(endpoint, watch);
    place();
  };
  return { set, rebalancer, endOldest };
}

async function flush(clock: FakeClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 500) {
    clock.advance(500);
    for (let i = 0; i < 5; i++) await Promise.resolve();
  }
}

test('after a scale-out 3 → 5, clients holding 3 watches each move some, so that the fleet evens out', async (t) => {
  const clock = new FakeClock();
  let seed = 42;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const fleet = Array.from({ length: 500 }, () => client(clock, 3, random));
  for (const { set, rebalancer } of fleet) {
    set.update([1, 2, 3, 4, 5].map(address));
    rebalancer.nudge();
  }
  await flush(clock, GRACE_MS - 1000);
  const perEndpoint = (): number[] => [1, 2, 3, 4, 5].map((i) => fleet.reduce((n, { set }) => n + set.list().find((e) => e.address === `10.0.0.${i}`)!.streams, 0));
  t.deepEqual(perEndpoint().slice(3), [0, 0], 'nothing moves onto a fresh watch cache');
  await flush(clock, GRACE_MS / 3 + 20_000);
  const counts = perEndpoint();
  t.is(counts.reduce((a, b) => a + b, 0), 1500);
  // Each apiserver's share is 300; every client on its own is as even as 3 watches over 5 allow.
  for (const n of counts) t.true(n >= 250 && n <= 350, `${counts.join(' ')}`);
  for (const { set } of fleet) t.true(Math.max(...set.list().map((e) => e.streams)) <= 1);
  for (const { rebalancer } of fleet) rebalancer.close();
});

test('after the scale-out, as the old watches end one by one and re-open, the fleet stays even', async (t) => {
  const clock = new FakeClock();
  let seed = 7;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const fleet = Array.from({ length: 500 }, () => client(clock, 3, random));
  for (const { set, rebalancer } of fleet) {
    set.update([1, 2, 3, 4, 5].map(address));
    rebalancer.nudge();
  }
  await flush(clock, (GRACE_MS * 4) / 3 + 20_000);
  const perEndpoint = (): number[] => [1, 2, 3, 4, 5].map((i) => fleet.reduce((n, { set }) => n + set.list().find((e) => e.address === `10.0.0.${i}`)!.streams, 0));
  const ratio = (counts: number[]): number => Math.max(...counts) / Math.min(...counts);
  t.true(ratio(perEndpoint()) <= 1.2, `after the moves: ${perEndpoint().join(' ')}`);
  // The watches that were never moved are the oldest: they end first, all over the fleet, then the rest.
  for (let round = 0; round < 3; round++) {
    for (const { endOldest } of fleet) endOldest();
    const counts = perEndpoint();
    t.is(counts.reduce((a, b) => a + b, 0), 1500);
    t.true(ratio(counts) <= 1.2, `after ${round + 1} watch(es) per client ended: ${counts.join(' ')}`);
  }
  for (const { rebalancer } of fleet) rebalancer.close();
});
