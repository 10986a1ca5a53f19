// A lagging endpoint re-measured by time (issue 27, `src/balancer/load/remeasure.ts`), end to end
// over real HTTPS/h2 servers and real time: at ~50 GETs a second, an apiserver put at the weights'
// floor by a few slow answers got no request that would measure it again, and came back only when
// its estimate aged (up to 10 s). Exploration copies now re-measure it, so it is back within about
// a second of answering fast again. Probes are off: a probe timing out on a busy machine would eject
// an endpoint and blur the picture.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Balancer } from '../../src/index.ts';
import { cluster, get } from '../helpers/balancer.ts';

const PATH = '/api/v1/namespaces/default/configmaps/a';
const LIST = '/api/v1/namespaces/default/configmaps';
const GAP_MS = 20;

/** GETs of `path` every `GAP_MS` for up to `ms`, until `done()` says so; resolves with whether it did. */
async function paced(balancer: Balancer, ms: number, done: () => boolean = () => false, path = PATH): Promise<boolean> {
  const sent: Array<Promise<number>> = [];
  const until = performance.now() + ms;
  let reached = false;
  while (performance.now() < until && !(reached = done())) {
    sent.push(get(balancer, path));
    await sleep(GAP_MS);
  }
  const statuses = await Promise.all(sent);
  if (statuses.some((s) => s !== 200)) throw new Error(`statuses ${[...new Set(statuses)].join(', ')}`);
  return reached;
}

test('at 50 GETs a second, an apiserver put at the floor by a few slow answers is back within 2.5 s of answering fast again', async (t) => {
  // Hedging on for its copies, its hedges held off for 1 s: a hedge that beats a 200-ms answer a few
  // times would judge the endpoint silent and eject it, and it would come back by its restart instead.
  const { servers, balancer, close } = await cluster({ probe: false, hedge: { minDelayMs: 1_000, maxDelayMs: 1_000, percentile: 99 } });
  try {
    const slow = () => balancer.endpoints().find((e) => e.port === servers[1]!.port)!;
    await paced(balancer, 2_000);
    servers[1]!.latencyMs = 200;
    t.true(await paced(balancer, 3_000, () => slow().loadFactor < 0.02), `at the floor: ${slow().loadFactor}`);
    servers[1]!.latencyMs = 0;
    const recoveredAt = performance.now();
    const requestsBefore = servers[1]!.requests.length;
    const back = await paced(balancer, 6_000, () => slow().loadFactor >= 0.86);
    const ms = Math.round(performance.now() - recoveredAt);
    t.log(`back after ${ms} ms, ${servers[1]!.requests.length - requestsBefore} requests there meanwhile; ${balancer.stats().totals.retries.hedge} copies and hedges in all`);
    t.true(back && ms <= 2_500, `back: ${back}, after ${ms} ms (load factor ${slow().loadFactor})`);
  } finally {
    await close();
  }
});

// A client that sends only LISTs (an informer's relists, a dashboard): its weights follow their
// latency against the class's elsewhere, and its LISTs are copied to measure a lagging apiserver as
// GETs of one object are. Before, no LIST was copied: a caller's LIST re-measured it, every 0.5 s at
// first, and waited the slow answer (0.3–0.5 % of the LISTs at 110 a second, the light-load p99).
test('LISTs only at 50 a second: callers keep off an apiserver at the floor, which copies of LISTs measure; back within 5 s of answering fast again', async (t) => {
  const { servers, balancer, close } = await cluster({ probe: false, hedge: { minDelayMs: 1_000, maxDelayMs: 1_000, percentile: 99 } });
  const port = servers[1]!.port;
  let copies = 0;
  balancer.on('retry', (e) => void (e.reason === 'hedge' && e.from.port === port && copies++));
  try {
    const slow = () => balancer.endpoints().find((e) => e.port === port)!;
    await paced(balancer, 2_000, undefined, LIST);
    servers[1]!.latencyMs = 100;
    t.true(await paced(balancer, 3_000, () => slow().loadFactor < 0.02, LIST), `at the floor: ${slow().loadFactor}`);
    const [requestsBefore, copiesBefore] = [servers[1]!.requests.length, copies];
    await paced(balancer, 4_000, undefined, LIST);
    const copied = copies - copiesBefore;
    const callers = servers[1]!.requests.length - requestsBefore - copied;
    t.log(`over 4 s at the floor: ${copied} copies there, ${callers} callers' LISTs`);
    t.true(copied >= 2, `${copied} copies`);
    t.true(callers <= 1, `${callers} callers' LISTs waited on it`);
    servers[1]!.latencyMs = 0;
    const recoveredAt = performance.now();
    const back = await paced(balancer, 8_000, () => slow().loadFactor >= 0.86, LIST);
    const ms = Math.round(performance.now() - recoveredAt);
    t.log(`back after ${ms} ms`);
    t.true(back && ms <= 5_000, `back: ${back}, after ${ms} ms (load factor ${slow().loadFactor})`);
  } finally {
    await close();
  }
});
