// An HTTP/2 GOAWAY while a watch runs on the connection (kube-apiserver's --goaway-chance, the start
// of a graceful shutdown): the watch goes on to its end on the old connection. undici's client opens
// a new one only once fewer requests run than its `pipelining` (1 while it has no connection), and it
// counts the watch: the request it was given next waited for the watch to end, minutes (docs/chaos.md,
// finding 4: a POST held to its caller's deadline with every apiserver healthy). Watches now have
// connections of their own. One apiserver, so nothing can go elsewhere. Real sockets (HTTP/2, the
// simulator).
import { setTimeout as delay } from 'node:timers/promises';
import test from 'ava';
import * as undici from 'undici';
import { ChaosFaults } from '../../fixtures/apiserver/ChaosHooks.ts';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';
import { rawWatch } from '../helpers/rawWatch.ts';

const CM = '/api/v1/namespaces/default/configmaps';
/** Far longer than a request to a local simulator takes on a busy machine, far shorter than the watch. */
const PATIENCE_MS = 4000;

for (const method of ['POST', 'GET'] as const) {
  test(`a ${method} sent after a GOAWAY, while a watch still runs on that connection, gets a new connection and its answer`, async (t) => {
    const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
    const origin = cluster.instances[0]!.url;
    const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, probe: false, hedge: false });
    const headers = { ...cluster.authHeaders, 'content-type': 'application/json' };
    try {
      const watch = await rawWatch(`${origin}${CM}?watch=1`, balancer, headers);
      t.is(watch.res.statusCode, 200);
      // The next answer on the connection is followed by a GOAWAY; the watch stays open on it.
      cluster.instances[0]!.setModes({ goawayChance: 1 });
      const first = await undici.request(`${origin}/version`, { dispatcher: balancer, headers });
      await first.body.text();
      cluster.instances[0]!.setModes({ goawayChance: 0 });
      t.is(cluster.instances[0]!.counters.goaways, 1);

      for (let i = 0; i < 3; i++) {
        const body = method === 'POST' ? JSON.stringify({ metadata: { name: `after-goaway-${i}` } }) : undefined;
        const path = method === 'POST' ? CM : `${CM}/after-goaway`;
        const started = Date.now();
        const res = await undici.request(`${origin}${path}`, { dispatcher: balancer, method, headers, body, signal: AbortSignal.timeout(PATIENCE_MS) });
        await res.body.text();
        t.true(res.statusCode === 201 || res.statusCode === 404, `status ${res.statusCode}`);
        t.true(Date.now() - started < PATIENCE_MS, 'answered without waiting for the watch');
      }
      t.false(watch.ended(), 'the watch still runs');
      watch.close();
    } finally {
      await balancer.destroy();
      await cluster.close();
    }
  });
}

// The same for a short request whose 200 never ends (a stalled body): the requests after the GOAWAY
// waited for it until its caller gave up (docs/chaos.md, schedule 300: a discovery GET 7.6 s).
test('a GET sent after a GOAWAY, while a 200 whose body never ends still runs on that connection, gets its answer', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  const instance = cluster.instances[0]!;
  const origin = instance.url;
  const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, probe: false, hedge: false });
  const faults = new ChaosFaults(() => 0);
  instance.chaos = faults;
  const stalled = new AbortController();
  try {
    faults.body = { kind: 'endless', fraction: 1, byteMs: 200 };
    const endless = await undici.request(`${origin}${CM}/stalled`, { dispatcher: balancer, headers: cluster.authHeaders, signal: stalled.signal });
    endless.body.on('data', () => {}).on('error', () => {});
    faults.body = undefined;
    instance.setModes({ goawayChance: 1 });
    const first = await undici.request(`${origin}/version`, { dispatcher: balancer, headers: cluster.authHeaders });
    await first.body.text();
    instance.setModes({ goawayChance: 0 });
    t.is(instance.counters.goaways, 1);
    // Sent once the GOAWAY has arrived (one sent at the same moment may be refused by it and queued again on that client, which no flag reaches).
    await delay(300);

    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const res = await undici.request(`${origin}/api`, { dispatcher: balancer, headers: cluster.authHeaders, signal: AbortSignal.timeout(PATIENCE_MS) });
      await res.body.text();
      t.is(res.statusCode, 200);
      t.true(Date.now() - started < PATIENCE_MS, 'answered without waiting for the stalled body');
    }
  } finally {
    stalled.abort();
    await balancer.destroy();
    await cluster.close();
  }
});
