// A rolling restart as the chaos suite plays it (docs/chaos.md, finding 6): one apiserver crashed,
// was ejected for its refused connections and is back; then the other starts its shutdown. With the
// restarted one still serving its ejection, no endpoint is ready, and every request met the
// shutdown's 429 after one attempt. Now, with none ready, the ejected endpoints are probed at once,
// and one whose connections were refused comes back on a passing probe. Real sockets (HTTP/2, the
// simulator); the ejection (20 s) and the probe interval (30 s) are far longer than the test, so
// neither the ejection's timer nor a scheduled probe brings it back.
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

const CM = '/api/v1/namespaces/default/configmaps';

test('an apiserver ejected for refused connections and restarted comes back on a probe as soon as the other one drains', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2', '127.0.0.3'] });
  const origin = cluster.instances[0]!.url;
  const balancer = createBalancer({
    origin,
    target: cluster.target,
    tls: { ca: certs.ca },
    baseEjectionMs: 20_000,
    probe: { intervalMs: 30_000, timeoutMs: 1000, path: '/readyz', headers: cluster.authHeaders },
    hedge: false,
  });
  const events: string[] = [];
  const name = (address: string): string => `#${cluster.instances.findIndex((i) => i.host === address)}`;
  balancer.on('eject', (e, reason) => events.push(`eject ${name(e.address)} ${reason}`));
  balancer.on('drain', (e, reason) => events.push(`drain ${name(e.address)} ${reason}`));
  balancer.on('restore', (e, via) => events.push(`restore ${name(e.address)} ${via}`));
  const get = async (): Promise<number> => {
    const res = await undici.request(`${origin}${CM}`, { dispatcher: balancer, headers: cluster.authHeaders, signal: AbortSignal.timeout(5000) });
    await res.body.text();
    return res.statusCode;
  };
  try {
    for (let i = 0; i < 4; i++) t.is(await get(), 200);
    await cluster.instances[0]!.crash();
    await until(async () => (await get().catch(() => 0), events.includes('eject #0 connect')), { what: 'the ejection for refused connections' });
    await cluster.instances[0]!.restart();
    t.is(balancer.endpoints().find((e) => name(e.address) === '#0')!.state, 'ejected', 'still serving its 20-s ejection');

    void cluster.instances[1]!.shutdown({ sendRetryAfter: true, drainMs: 3000, timeoutMs: 2000 });
    await cluster.instances[1]!.waitForState('draining');
    // The shutdown's 429s drain #1 in the balancer's view; #0 is then probed and back at once.
    await until(async () => (await get().catch(() => 0), events.includes('restore #0 probe')), { timeoutMs: 8000, what: 'the restarted apiserver back on a probe' });
    t.is(await get(), 200);
    t.false(events.includes('restore #0 probation'));
    t.log(events.join(', '));
  } finally {
    await balancer.destroy();
    await cluster.close();
  }
});
