// The chaos workload's client-node informer, and the one fix it needs to stop cleanly.
import { CoreV1Api, ListWatch, Watch, type Informer, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';

/**
 * client-node's ListWatch forgets a watch it was still opening when `stop()` came (it aborts only the
 * one it already holds), and that watch runs on, holding `balancer.close()` (schedule 343): one that
 * opens after the stop is aborted here.
 */
export class StoppableWatch extends Watch {
  stopped = false;

  override async watch(...args: Parameters<Watch['watch']>): Promise<AbortController> {
    const controller = await super.watch(...args);
    if (this.stopped) controller.abort();
    return controller;
  }
}

/** A client-node informer on the ConfigMaps through the balancer, restarted 500 ms after each error as an application does. */
export async function startInformer(kc: KubeConfig): Promise<{ stop(): Promise<void>; errors(): number }> {
  const core = kc.makeApiClient(CoreV1Api);
  const watch = new StoppableWatch(kc);
  const informer: Informer<V1ConfigMap> = new ListWatch('/api/v1/namespaces/default/configmaps', watch, () => core.listNamespacedConfigMap({ namespace: 'default' }), false);
  let errors = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  informer.on('error', () => {
    // stop() ends the watch with an error event of its own: not one to count.
    if (stopped) return;
    errors++;
    timer = setTimeout(() => void informer.start().catch(() => {}), 500);
  });
  await informer.start().catch(() => errors++);
  return {
    stop: async () => {
      stopped = watch.stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
    errors: () => errors,
  };
}
