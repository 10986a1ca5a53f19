// kube-apiserver's idle timeout (90 s, research/k8s.md §3.6): an HTTP/2 connection with no stream
// open for that long gets a GOAWAY and closes, PINGs or not. A request sent as it goes is one the
// server never processed: it must reach an apiserver all the same, whatever its method.
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';
import { listOrCreate } from '../helpers/configMaps.ts';

test('idle GOAWAYs: requests sent around the moment each idle connection goes all succeed, GET and POST, and no endpoint is ejected', async (t) => {
  const idleTimeoutMs = 60;
  const cluster = await ApiserverCluster.start({ idleTimeoutMs });
  const origin = cluster.instances[0]!.url;
  const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, probe: false, hedge: false });
  const ejections: string[] = [];
  balancer.on('eject', (e, reason) => ejections.push(`${e.address}:${String(reason)}`));
  let retries = 0;
  balancer.on('retry', () => retries++);
  try {
    const failures: string[] = [];
    for (let i = 0; i < 60; i++) {
      const failure = await listOrCreate(cluster, origin, balancer, i);
      if (failure) failures.push(failure);
      // Around the idle timeout of the connection this request used: now before it, now after.
      await sleep(idleTimeoutMs * (0.8 + 0.4 * ((i * 7) % 10) / 10));
    }
    const goaways = cluster.instances.reduce((n, s) => n + s.counters.goaways, 0);
    t.log(`${goaways} idle GOAWAYs, ${retries} retries, ejections: ${ejections.join(', ') || 'none'}`);
    t.deepEqual(failures, []);
    t.true(goaways >= 10, `${goaways} idle GOAWAYs`);
    t.deepEqual(ejections, []);
  } finally {
    await balancer.close();
    await cluster.close();
  }
});
