// Issue 12, defect 2: a request for another site must never be judged against the apiservers, and
// probes always go to the balanced origin, whichever origin a request named first.
import test from 'ava';
import * as undici from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget, TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

test('a request to another site (origin from bootstrap.server) passes through and never ejects an endpoint', async (t) => {
  const servers = await startServers(HOSTS);
  // Another HTTPS site, with a certificate for another name: through the balancer it would fail the name check.
  const hooks = await TestServer.start({ host: '127.0.0.5', tls: certs.wrongName });
  const balancer = createBalancer({
    target: staticTarget(servers),
    tls: { ca: certs.ca },
    bootstrap: { server: `https://${APISERVER_NAME}:6443`, lastResort: false },
    probe: { intervalMs: 100, timeoutMs: 2_000 },
  });
  try {
    await balancer.ready();
    const other = await undici
      .request(`https://127.0.0.5:${hooks.port}/hook`, { dispatcher: balancer, method: 'POST', body: '{}' })
      .then((res) => res.body.dump().then(() => res.statusCode), (error: unknown) => error);
    // Passed through (a plain Agent with Node's roots, which do not hold the test CA): no endpoint tried it.
    t.true(other instanceof Error);
    t.deepEqual(balancer.endpoints().map((e) => e.requests + e.failures), [0, 0, 0]);
    // Probes keep verifying the balanced origin's name: every endpoint answers several.
    const before = servers.map((s) => s.probes);
    await until(() => servers.every((s, i) => s.probes >= before[i]! + 3), { what: 'three more probes on every endpoint' });
    t.deepEqual(balancer.endpoints().map((e) => e.state), ['ready', 'ready', 'ready']);
    const res = await undici.request(`${ORIGIN}/version`, { dispatcher: balancer });
    t.is(res.statusCode, 200);
    await res.body.dump();
  } finally {
    await balancer.close();
    await Promise.all([...servers, hooks].map((s) => s.close()));
  }
});
