// LISTs are not hedged (issue 26): a copy doubles the apiserver's most expensive load, and an
// endpoint that serves slow LISTs is alive, not silent. Three HTTPS apiservers on loopback (HTTP/2),
// one of which takes 1.5 s for every LIST; hedging on with a short delay.
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';

const LIST_MS = 1500;

test('slow LISTs are neither hedged nor make their slow-but-alive endpoint look silent; point GETs still hedge', async (t) => {
  const timers = new Set<NodeJS.Timeout>();
  const servers = await startServers(HOSTS, {
    handler: (req, res, server) => {
      const list = !/\/configmaps\/[^/?]+/.test(req.url ?? '');
      const answer = (): void => sendJson(res, 200, { kind: list ? 'ConfigMapList' : 'ConfigMap', server: server.name });
      if (server !== servers[0]) return answer();
      const timer = setTimeout(() => {
        timers.delete(timer);
        answer();
      }, LIST_MS);
      timers.add(timer);
    },
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: { minDelayMs: 50, maxDelayMs: 200 } });
  const retries: string[] = [];
  const ejected: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  balancer.on('eject', (e, reason) => ejected.push(`${e.key} ${reason}`));
  try {
    // Nine at once: about three on the slow endpoint, enough hedge wins to judge it silent if they were hedged.
    const lists = await Promise.all(
      Array.from({ length: 9 }, async () => {
        const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps?limit=500`, { dispatcher: balancer });
        await res.body.dump();
        return res.statusCode;
      }),
    );
    t.deepEqual(lists, Array<number>(9).fill(200));
    t.true(servers[0]!.requests.length > 0, 'the slow endpoint served some');
    t.log(`ejections: ${ejected.join(', ') || 'none'}`);
    t.deepEqual(retries, [], 'no LIST hedged');
    t.is(servers.reduce((n, s) => n + s.requests.length, 0), 9, 'each LIST ran once');
    t.deepEqual(ejected, [], 'the slow endpoint was not judged silent');

    // A GET of one named object on the slow endpoint is still hedged.
    const before = servers[0]!.requests.length;
    for (let i = 0; i < 6 && servers[0]!.requests.length === before; i++) {
      const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps/c${i}`, { dispatcher: balancer });
      await res.body.dump();
    }
    t.true(retries.includes('hedge'), 'the point GET caught on the slow endpoint was hedged');
  } finally {
    for (const timer of timers) clearTimeout(timer);
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});
