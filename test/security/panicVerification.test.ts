// Issue 12, defect 7: an endpoint whose certificate failed verification is not transiently sick:
// panic mode, which distrusts health, must still never send requests there.
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';

test('3 good + 30 wrong-name endpoints: none of 200 GETs fails, and the wrong-name ones never see a request', async (t) => {
  const good = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  const wrong = await startServers(Array.from({ length: 30 }, (_, i) => `127.0.1.${i + 1}`), { tls: certs.wrongName });
  // Interleaved, so round robin reaches a wrong-name endpoint on almost every pick at first.
  const all = [...wrong.slice(0, 10), good[0]!, ...wrong.slice(10, 20), good[1]!, ...wrong.slice(20), good[2]!];
  const balancer = createBalancer({ target: staticTarget(all), origin: ORIGIN, tls: { ca: certs.ca }, baseEjectionMs: 100, maxEjectionMs: 200 });
  try {
    let failed = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < 200) {
          next++;
          try {
            const res = await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer });
            await res.body.dump();
            if (res.statusCode !== 200) failed++;
          } catch (error) {
            if (failed++ < 3) t.log(String(error));
          }
        }
      }),
    );
    t.is(failed, 0);
    t.is(wrong.reduce((n, s) => n + s.requests.length, 0), 0);
    // Each GET once, plus at most each hedge (on a busy machine a first GET waits past the 250-ms
    // hedge delay for its TLS handshakes): hedges too must never reach a wrong-name endpoint.
    const served = good.reduce((n, s) => n + s.requests.length, 0);
    const hedges = balancer.stats().totals.retries.hedge;
    t.log(`requests at the good endpoints: ${served}, hedges: ${hedges}`);
    t.true(served >= 200 && served <= 200 + hedges, `${served} requests for 200 GETs and ${hedges} hedges`);
  } finally {
    await balancer.close();
    await Promise.all([...good, ...wrong].map((s) => s.close()));
  }
});
