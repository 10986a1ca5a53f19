// A throttled request's retry in panic mode (under half the endpoints ready): the picker offers the
// draining ones too, and a throttled retry goes to none of them; it must go to the one that is ready
// rather than hand the 429 to the caller. The chaos suite's rolling restart met by API Priority and
// Fairness 429s (docs/chaos.md, after the fixes). Five endpoints: one throttling everything, one
// answering, three draining (their /readyz fails). Real sockets (HTTP/2).
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

test('panic mode: POSTs and GETs throttled by one ready endpoint go to the other ready one, not to a draining one, and no 429 reaches the caller', async (t) => {
  const servers = await startServers([...HOSTS, HOSTS[0]!, HOSTS[1]!]);
  const [throttling, , ...unready] = servers as [(typeof servers)[0], (typeof servers)[0], ...typeof servers];
  for (const server of unready) server.readyzStatus = 500;
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: { intervalMs: 100, timeoutMs: 1000 }, hedge: false });
  const drained = new Set<string>();
  balancer.on('drain', (e) => drained.add(`${e.address}:${e.port}`));
  let throttledRetries = 0;
  balancer.on('retry', (e) => (throttledRetries += e.reason === 'throttled' ? 1 : 0));
  try {
    await until(() => drained.size === 3, { what: 'three drained' });
    throttling.apfFraction = 1;
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      // Over 3 s: the throttled endpoint rests for its Retry-After (1 s), then takes requests again.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const method = i % 2 === 0 ? 'POST' : 'GET';
      const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps`, { dispatcher: balancer, method, body: method === 'POST' ? '{}' : undefined });
      await res.body.dump();
      statuses.push(res.statusCode);
    }
    t.true(throttledRetries > 0, 'the throttling endpoint was met');
    t.deepEqual(statuses.filter((s) => s === 429), [], `statuses ${statuses.join(',')}`);
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});
