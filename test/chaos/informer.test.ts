// The chaos informer's stop: a watch client-node was still opening when stop() came is aborted
// too, so no watch outlives the schedule and holds balancer.close() (docs/chaos.md, schedule 343).
import { KubeConfig } from '@kubernetes/client-node';
import test from 'ava';
import { StoppableWatch } from '../../chaos/informer.ts';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';

test('a watch still opening when the informer stops is aborted once open, and ends', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  t.teardown(() => cluster.close());
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const watch = new StoppableWatch(kc);
  let ended: (error: unknown) => void;
  const done = new Promise((resolve) => (ended = resolve));
  const opening = watch.watch('/api/v1/namespaces/default/configmaps', {}, () => {}, (error) => ended(error));
  // ListWatch.stop() finds no watch to abort while this one is still opening; only the flag is set.
  watch.stopped = true;
  const controller = await opening;
  t.true(controller.signal.aborted);
  t.truthy(await done, 'the watch ended, with the abort');
});
