// The chaos workload's client-node informer.
import { CoreV1Api, ListWatch, Watch, type Informer, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { InformerStop } from '../src/cli/demo/InformerStop.ts';

/** A client-node informer on the ConfigMaps through the balancer, restarted 500 ms after each error as an application does. */
export async function startInformer(kc: KubeConfig): Promise<{ stop(): Promise<void>; errors(): number }> {
  const core = kc.makeApiClient(CoreV1Api);
  const stop = new InformerStop(new Watch(kc));
  const informer: Informer<V1ConfigMap> = new ListWatch('/api/v1/namespaces/default/configmaps', stop.watch, () => core.listNamespacedConfigMap({ namespace: 'default' }), false, undefined, undefined, { delayFn: stop.delayFn });
  let errors = 0;
  let timer: NodeJS.Timeout | undefined;
  informer.on('error', () => {
    // stop() ends the watch with an error event of its own: not one to count.
    if (stop.stopped) return;
    errors++;
    // One restart pending at a time, none after the stop: a start() would undo it.
    clearTimeout(timer);
    timer = setTimeout(() => void (stop.stopped || informer.start().catch(() => {})), 500);
  });
  await informer.start().catch(() => errors++);
  return {
    stop: async () => {
      stop.stop();
      clearTimeout(timer);
      await informer.stop();
    },
    errors: () => errors,
  };
}
