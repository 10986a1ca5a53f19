// API Priority and Fairness against the balancer, with the simulator's per-priority-level
// Retry-After (1 s growing to 32 s, Kubernetes ≥ 1.28): a throttled apiserver rests for its
// Retry-After while the others take its share; when every one is throttled, the 429 is the answer.
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer, type BalancerOptions } from '../../src/index.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { load } from '../helpers/load.ts';

const CM = '/api/v1/namespaces/default/configmaps';

async function setup(options: Partial<BalancerOptions> = {}, clock?: FakeClock) {
  const cluster = await ApiserverCluster.start(clock ? { now: () => clock.now() } : {});
  const origin = cluster.instances[0]!.url;
  const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, probe: false, ...(clock ? { clock } : {}), ...options });
  const send = async (method: 'GET' | 'POST', i: number) => {
    const res = await undici.request(`${origin}${CM}${method === 'GET' ? `?i=${i}` : ''}`, {
      dispatcher: balancer,
      method,
      headers: { ...cluster.authHeaders, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body: JSON.stringify({ metadata: { name: `cm-${i}` } }) } : {}),
    });
    await res.body.dump();
    return { status: res.statusCode, retryAfter: res.headers['retry-after'] };
  };
  // Every restore, as `address:via`.
  const restored: string[] = [];
  balancer.on('restore', (e, via) => restored.push(`${e.address}:${via}`));
  return {
    cluster,
    balancer,
    send,
    restored,
    close: async () => {
      await balancer.close();
      await cluster.close();
    },
  };
}

/** Requests that reached the instance's handlers (not rejected by APF). */
const served = (cluster: ApiserverCluster): number[] => cluster.instances.map((i) => i.counters.requests - i.counters.apfRejected);

test('1 of 3 throttled (half its requests, growing Retry-After): no caller sees a 429, its share drops, GET and POST alike', async (t) => {
  const { cluster, send, close } = await setup();
  try {
    cluster.instances[0]!.setModes({ apfRejectFraction: 0.5 });
    const results = await load(600, 6, (i) => send(i % 2 ? 'POST' : 'GET', i));
    t.deepEqual(results.filter((r) => r.error || (r.value!.status !== 200 && r.value!.status !== 201)).map((r) => r.value?.status ?? String(r.error)), []);
    const shares = served(cluster);
    t.log(`requests served per instance: ${shares.join('/')}; 429s from the throttled one: ${cluster.instances[0]!.counters.apfRejected}`);
    t.true(shares[0]! < shares[1]! * 0.5 && shares[0]! < shares[2]! * 0.5, `shares ${shares.join('/')}`);
  } finally {
    await close();
  }
});

test('a throttled endpoint gets no request for its Retry-After (fake clock), then takes requests again', async (t) => {
  const clock = new FakeClock();
  const { cluster, send, restored, close } = await setup({}, clock);
  try {
    const throttled = cluster.instances[0]!;
    throttled.setModes({ apfRejectFraction: 1, apfRetryAfterSeconds: 20 });
    const first = await load(30, 3, (i) => send(i % 2 ? 'POST' : 'GET', i));
    t.true(first.every((r) => r.value?.status === 200 || r.value?.status === 201));
    const rejected = throttled.counters.apfRejected;
    t.true(rejected >= 1 && rejected <= 3, `${rejected} 429s: only requests already on their way`);
    clock.advance(19_900);
    await load(30, 3, (i) => send('GET', 100 + i));
    t.is(throttled.counters.apfRejected, rejected, 'nothing sent to it within its Retry-After');
    clock.advance(200);
    t.deepEqual(restored, [`${throttled.host}:retry-after`]);
    throttled.setModes({ apfRejectFraction: 0 });
    await load(30, 3, (i) => send('GET', 200 + i));
    t.true(served(cluster)[0]! >= 5, 'it takes its share again');
  } finally {
    await close();
  }
});

test('all 3 throttled: callers get the 429 with its Retry-After, after one attempt each once all are known throttled; retries within the budget', async (t) => {
  const clock = new FakeClock();
  const concurrency = 6;
  const count = 120;
  const { cluster, balancer, send, close } = await setup({}, clock);
  let retries = 0;
  balancer.on('retry', () => retries++);
  try {
    cluster.setModes({ apfRejectFraction: 1 });
    const started = Date.now();
    // The clock stands still: every Retry-After outlasts the window.
    const results = await load(count, concurrency, (i) => send(i % 2 ? 'POST' : 'GET', i));
    const elapsed = Date.now() - started;
    t.true(results.every((r) => r.value?.status === 429), 'every caller sees the 429');
    t.true(results.every((r) => r.value?.retryAfter !== undefined && Number(r.value.retryAfter) >= 1 && Number(r.value.retryAfter) <= 32), 'with its Retry-After');
    const attempts = cluster.instances.reduce((n, i) => n + i.counters.apfRejected, 0);
    const perGet = new Map<string, number>();
    for (const instance of cluster.instances) for (const r of instance.requests) if (r.method === 'GET') perGet.set(r.path, (perGet.get(r.path) ?? 0) + 1);
    t.log(`${count} requests, ${attempts} attempts, ${retries} retries, in ${elapsed} ms; budget refused ${balancer.stats().budget.refused}`);
    // Only requests under way before the last endpoint was known throttled were retried (at most twice each).
    t.true(retries <= 2 * concurrency, `${retries} retries`);
    t.is(attempts, count + retries);
    t.true([...perGet.values()].every((n) => n <= 3), 'never more than maxAttempts per request');
    const late = [...perGet.entries()].filter(([path]) => Number(new URL(path, 'https://x').searchParams.get('i')) >= count / 2);
    t.true(late.length > 0 && late.every(([, n]) => n === 1), 'once every endpoint is throttled: one attempt per request');
  } finally {
    await close();
  }
});

test('all 3 throttled for a long Retry-After, then 2 recover: their answers end their rest, and no caller sees the third one\'s 429 (docs/chaos.md, schedule 50)', async (t) => {
  const { cluster, send, restored, close } = await setup({}, new FakeClock());
  try {
    cluster.setModes({ apfRejectFraction: 1, apfRetryAfterSeconds: 32 });
    const throttled = await load(12, 3, (i) => send('GET', i));
    t.true(throttled.every((r) => r.value?.status === 429), 'all three throttled: the 429 is the answer');
    // The clock stands still: every rest outlasts the test unless an answer ends it.
    cluster.instances[0]!.setModes({ apfRejectFraction: 0 });
    cluster.instances[1]!.setModes({ apfRejectFraction: 0 });
    const results = await load(60, 3, (i) => send(i % 2 ? 'POST' : 'GET', 100 + i));
    const late = results.slice(30).map((r) => r.value?.status ?? String(r.error));
    t.log(`statuses after recovery: ${results.map((r) => r.value?.status ?? 'error').join(' ')}; restored ${restored.join(', ')}`);
    t.deepEqual(late.filter((s) => s !== 200 && s !== 201), [], 'once the two answered, no 429 reaches a caller');
    t.deepEqual(restored.sort(), [cluster.instances[0]!.host, cluster.instances[1]!.host].map((h) => `${h}:answer`).sort());
  } finally {
    await close();
  }
});

test('1 of 3 saturated (APF seats: 2 seats, a queue of 2, a 150 ms wait): its queued requests are served late, its 429s (full queue, wait too long) go elsewhere; no caller sees one', async (t) => {
  const { cluster, send, close } = await setup();
  try {
    cluster.setModes({ latencyMs: 20 });
    const saturated = cluster.instances[0]!;
    saturated.setModes({ apfSeats: 2, apfQueueLength: 2, apfQueueWaitMs: 150, latencyMs: 120 });
    const results = await load(300, 12, (i) => send(i % 2 ? 'POST' : 'GET', i));
    t.deepEqual(results.filter((r) => r.error || (r.value!.status !== 200 && r.value!.status !== 201)).map((r) => r.value?.status ?? String(r.error)), []);
    const { apfQueued, apfRejected } = saturated.counters;
    t.log(`requests served per instance: ${served(cluster).join('/')}; the saturated one queued ${apfQueued}, rejected ${apfRejected}`);
    t.true(apfQueued + apfRejected > 0, 'the seats were exhausted at least once');
  } finally {
    await close();
  }
});
