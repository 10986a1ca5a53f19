// Hedging is off: these tests count attempts exactly, and a hedge on a busy machine would add one.
// A list pinned to a resourceVersion that one apiserver's watch cache has not reached: that one
// answers 504 "Too large resource version" after 3 s; the balancer sends the read to another
// apiserver, and the lagging one is not held to have failed.
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';

test('a "Too large resource version" 504 on a GET is retried on another endpoint; the lagging endpoint counts no failure', async (t) => {
  const cluster = await ApiserverCluster.start();
  const lagging = cluster.instances[0]!;
  const balancer = createBalancer({ origin: lagging.url, target: cluster.target, tls: { ca: certs.ca }, probe: false, hedge: false });
  try {
    lagging.setModes({ watchCacheLagMs: 600_000 });
    const rv = cluster.store.create(RESOURCES.configmaps, { metadata: { name: 'new', namespace: 'default' } }).metadata.resourceVersion!;
    const answers: string[] = [];
    // Round robin from a random start: within three reads one goes to the lagging instance first.
    for (let i = 0; i < 3 && (lagging.counters.statuses[504] ?? 0) === 0; i++) {
      const res = await undici.request(`${lagging.url}/api/v1/namespaces/default/configmaps?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan&i=${i}`, {
        dispatcher: balancer,
        headers: cluster.authHeaders,
      });
      const body = (await res.body.json()) as { items?: { metadata: { name: string } }[] };
      answers.push(`${res.statusCode} ${body.items?.map((o) => o.metadata.name).join(',') ?? ''}`);
    }
    t.is(lagging.counters.statuses[504], 1, 'the lagging instance answered 504');
    t.true(answers.every((a) => a === '200 new'), `answers: ${answers.join('; ')}`);
    t.is(balancer.stats().totals.retries['5xx'], 1);
    const endpoint = balancer.endpoints().find((e) => e.address === lagging.host)!;
    t.is(endpoint.failures, 0, 'a lagging cache is not a failing server');
    t.is(endpoint.state, 'ready');
  } finally {
    await balancer.close();
    await cluster.close();
  }
});
