// Issue 26, "never worse than one connection": a rolling restart over three apiservers with two out
// at once, one crashed (its connections refused) and one shut down (its 429s drain it). With one of
// three ready the picker is in panic; the two come back as soon as a probe finds them ready (every
// ~500 ms in panic, one pass), not after two passing probes an interval apart (here 10 s) or the
// refused one's ejection (here 20 s), and no caller's request fails meanwhile. Real sockets (HTTP/2,
// the simulator); the bounds (6 s) are generous for a busy machine and far below the old timing.
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster, type ApiserverInstance } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

const CM = '/api/v1/namespaces/default/configmaps';
const BOUND_MS = 6_000;

test('in panic, a crashed and a shut-down apiserver are back within seconds of their restart, and no request fails', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2', '127.0.0.3', '127.0.0.4'] });
  const origin = cluster.instances[0]!.url;
  const balancer = createBalancer({
    origin,
    target: cluster.target,
    tls: { ca: certs.ca },
    baseEjectionMs: 20_000,
    probe: { intervalMs: 10_000, timeoutMs: 1000, path: '/readyz', headers: cluster.authHeaders },
    hedge: false,
  });
  const events: string[] = [];
  const start = Date.now();
  const name = (address: string): string => `#${cluster.instances.findIndex((i) => i.host === address)}`;
  const log = (line: string): number => events.push(`${Date.now() - start} ${line}`);
  balancer.on('eject', (e, reason) => log(`eject ${name(e.address)} ${reason}`));
  balancer.on('drain', (e, reason) => log(`drain ${name(e.address)} ${reason}`));
  balancer.on('restore', (e, via) => log(`restore ${name(e.address)} ${via}`));
  const state = (n: number): string => balancer.endpoints().find((e) => name(e.address) === `#${n}`)!.state;
  let sent = 0;
  const failures: string[] = [];
  let running = true;
  const caller = async (): Promise<void> => {
    while (running) {
      sent++;
      try {
        const res = await undici.request(`${origin}${CM}`, { dispatcher: balancer, headers: cluster.authHeaders, signal: AbortSignal.timeout(10_000) });
        await res.body.text();
        if (res.statusCode !== 200) failures.push(String(res.statusCode));
      } catch (err) {
        failures.push((err as Error).message);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const callers = Array.from({ length: 4 }, () => caller());
  try {
    await until(() => sent > 40, { what: 'traffic' });
    const [i0, i1, i2] = cluster.instances as [ApiserverInstance, ApiserverInstance, ApiserverInstance];
    // #0 shuts down (429 + Connection: close, as --shutdown-send-retry-after) and restarts; with two
    // of three ready that is no panic, and it stays out (draining, or ejected if refused meanwhile).
    await i0.restart({ shutdown: { sendRetryAfter: true, drainMs: 1000, timeoutMs: 1000 } });
    const restarted0 = Date.now();
    t.not(state(0), 'ready', 'out after its restart: two passing probes 10 s apart, or a 20-s ejection, to come back');
    // #1 crashes: one of three ready, panic. #0, back, is found so within a panic probe.
    await i1.crash();
    await until(() => state(0) === 'ready', { timeoutMs: 30_000, what: '#0 ready' });
    const back0 = Date.now() - restarted0;
    // #2 shuts down while #1 is still out: panic again, and #1 restarts.
    const stopping2 = i2.shutdown({ sendRetryAfter: true, drainMs: 3000, timeoutMs: 1000 });
    await until(() => state(2) !== 'ready', { what: '#2 out' });
    await i1.restart();
    const restarted1 = Date.now();
    await until(() => state(1) === 'ready', { timeoutMs: 30_000, what: '#1 ready' });
    const back1 = Date.now() - restarted1;
    await stopping2;
    t.log(`#0 back ${back0} ms after its restart (before: ≥ 10 s), #1 ${back1} ms after its (before: 20 s)`);
    t.log(events.join(', '));
    t.true(back0 < BOUND_MS, `#0 back in ${back0} ms`);
    t.true(back1 < BOUND_MS, `#1 back in ${back1} ms`);
    running = false;
    await Promise.all(callers);
    t.log(`${sent} requests`);
    t.deepEqual(failures, [], 'no caller request failed');
  } finally {
    running = false;
    await Promise.all(callers);
    await balancer.destroy();
    await cluster.close();
  }
});
