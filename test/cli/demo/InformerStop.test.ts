// client-node's informers stopped for good (InformerStop, used by the demo and the chaos suite): a
// watch still opening when the stop came is aborted too (docs/chaos.md, schedule 343), and a
// reconnect delay pending at the stop ends with no watch after it (schedules 142, 257).
import { KubeConfig, ListWatch, Watch } from '@kubernetes/client-node';
import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiserverCluster } from '../../../fixtures/apiserver/index.ts';
import { InformerStop } from '../../../src/cli/demo/InformerStop.ts';
import { activeResources, leftOver } from '../../helpers/leaks.ts';

test('a watch still opening when the informer stops is aborted once open, and ends', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  t.teardown(() => cluster.close());
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const stop = new InformerStop(new Watch(kc));
  let ended: (error: unknown) => void;
  const done = new Promise((resolve) => (ended = resolve));
  const opening = stop.watch.watch('/api/v1/namespaces/default/configmaps', {}, () => {}, (error: unknown) => ended(error));
  // ListWatch.stop() finds no watch to abort while this one is still opening.
  stop.stop();
  const controller = await opening;
  t.true(controller.signal.aborted);
  t.truthy(await done, 'the watch ended, with the abort');
});

// Serial: alone in the process, so that the timer count is this test's.
test.serial('an informer stopped while client-node waits out a reconnect delay leaves no timer, and opens no watch after', async (t) => {
  // An apiserver whose every watch ends at once, cleanly and with no event: client-node's ListWatch
  // reconnects at once after the first, then waits 1 s, then 2 s… before each next one.
  let watches = 0;
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (new URL(req.url!, 'http://x').searchParams.get('watch') === 'true') {
      watches++;
      return void res.end();
    }
    res.end(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const kc = new KubeConfig();
  // Plain HTTP on loopback: client-node takes `http:` only with skipTLSVerify set.
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const baseline = activeResources();
  const stop = new InformerStop(new Watch(kc));
  const informer = new ListWatch('/api/v1/namespaces/default/configmaps', stop.watch, () => Promise.resolve({ metadata: { resourceVersion: '1' }, items: [] }), false, undefined, undefined, { delayFn: stop.delayFn });
  await informer.start();
  // The third watch has ended: ListWatch now waits 2 s before the fourth. Bounded: 4 s.
  for (let i = 0; i < 200 && watches < 3; i++) await sleep(20);
  t.is(watches, 3);
  await sleep(50);
  stop.stop();
  await informer.stop();
  server.closeAllConnections();
  // The chaos suite's left-open check: 500 ms for what the stop let go.
  t.deepEqual(await leftOver(baseline, 500), {}, 'no timer is left once the informer stopped');
  t.is(watches, 3, 'and no watch was opened after the stop');
});
