// A rolling restart of three simulated kube-apiservers in kube-apiserver's default shutdown mode
// (no --shutdown-send-retry-after, no --shutdown-delay-duration) under real @kubernetes/client-node
// writes, reads and informers through the balancer: no caller sees an error, no informer stops.
import { CoreV1Api, KubeConfig, PatchStrategy, makeInformer, setHeaderOptions, type V1ConfigMap } from '@kubernetes/client-node';
import test from 'ava';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { attachToKubeConfig } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

const VERBS = ['create', 'replace', 'patch', 'delete', 'list', 'get'] as const;
type Verb = (typeof VERBS)[number];

/** Each writer's loop stops after this many objects, whatever the clock says. */
const MAX_CYCLES = 400;

test('rolling restart of 3 apiservers (default shutdown) under client-node writes, reads and informers: 0 errors for every verb, 0 informer restarts', async (t) => {
  const cluster = await ApiserverCluster.start();
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, probe: { intervalMs: 300 } });
  if (!attachment.attached) throw new Error(attachment.reason);
  const balancer = attachment.balancer!;
  const core = kc.makeApiClient(CoreV1Api);
  const ok = Object.fromEntries(VERBS.map((v) => [v, 0])) as Record<Verb, number>;
  const errors: string[] = [];
  const run = async <T>(verb: Verb, call: () => Promise<T>): Promise<T | undefined> => {
    try {
      const result = await call();
      ok[verb]++;
      return result;
    } catch (error) {
      errors.push(`${verb}: ${String((error as { code?: string | number }).code ?? '')} ${(error as Error).message.slice(0, 200)}`);
      return undefined;
    }
  };
  const informerErrors: unknown[] = [];
  const informers: Array<ReturnType<typeof makeInformer<V1ConfigMap>>> = [];
  let rolling = true;
  try {
    for (let i = 0; i < 3; i++) {
      const informer = makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }));
      informer.on('error', (err) => informerErrors.push(err));
      await informer.start();
      informers.push(informer);
    }
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; rolling && i < MAX_CYCLES; i++) {
        const name = `w${w}-${i}`;
        const created = await run('create', () => core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name }, data: { step: 'created' } } }));
        if (!created) continue;
        const replaced = await run('replace', () => core.replaceNamespacedConfigMap({ name, namespace: 'default', body: { ...created, data: { step: 'replaced' } } }));
        await run('patch', () =>
          core.patchNamespacedConfigMap({ name, namespace: 'default', body: { data: { step: 'patched' } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
        );
        // Every other object stays, so the informers have something to converge on.
        if (i % 2 === 0 && replaced) await run('delete', () => core.deleteNamespacedConfigMap({ name, namespace: 'default' }));
      }
    };
    const reader = async (): Promise<void> => {
      for (let i = 0; rolling && i < MAX_CYCLES * 2; i++) {
        const list = await run('list', () => core.listNamespacedConfigMap({ namespace: 'default' }));
        const some = list?.items.at(-1)?.metadata?.name;
        // 404 is an answer: the object may have been deleted since the list.
        if (some) {
          await run('get', async () => {
            try {
              return await core.readNamespacedConfigMap({ name: some, namespace: 'default' });
            } catch (error) {
              if ((error as { code?: number }).code === 404) return undefined;
              throw error;
            }
          });
        }
      }
    };
    const workload = Promise.all([0, 1, 2, 3].map(writer).concat([reader(), reader()]));
    const restarts: string[] = [];
    for (const instance of cluster.instances) {
      await until(() => ok.create > 20 * (restarts.length + 1), { what: 'writes before the next restart' });
      const before = instance.counters.shutdownRejected;
      const started = Date.now();
      await instance.restart({ shutdown: { drainMs: 500, timeoutMs: 2000 } });
      restarts.push(`${instance.name}: ${instance.counters.shutdownRejected - before} rejected with 503, down ${Date.now() - started} ms`);
      // Back in the balancer and serving before the next one goes.
      const served = instance.counters.requests;
      await until(() => balancer.endpoints().find((e) => e.address === instance.host)?.state === 'ready' && instance.counters.requests > served + 20, {
        what: `${instance.name} back in service`,
        timeoutMs: 30_000,
      });
    }
    rolling = false;
    await workload;

    const rejected = cluster.instances.reduce((n, i) => n + (i.counters.statuses[503] ?? 0), 0);
    t.log(`requests per verb, all answered: ${VERBS.map((v) => `${v} ${ok[v]}`).join(', ')}; client-visible errors: ${errors.length}`);
    t.log(`restarts: ${restarts.join('; ')}; shutdown 503s met and sent elsewhere: ${rejected}; informer errors: ${informerErrors.length}`);
    t.deepEqual(errors, [], 'no client-visible error, for any verb');
    t.deepEqual(informerErrors, [], 'no informer stopped');
    t.true(rejected > 0, 'the workload met the shutdown 503');
    for (const verb of VERBS) t.true(ok[verb] > 0, `${verb} ran`);

    // Every informer converges to the store.
    const expected = (): string =>
      JSON.stringify(
        cluster.store
          .list(RESOURCES.configmaps, 'default')
          .items.map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)
          .sort(),
      );
    const seen = (informer: (typeof informers)[number]): string =>
      JSON.stringify(
        informer
          .list('default')
          .map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`)
          .sort(),
      );
    await until(() => informers.every((i) => seen(i) === expected()), { what: 'the informers to converge', timeoutMs: 30_000 });
    t.pass();
  } finally {
    rolling = false;
    for (const informer of informers) await informer.stop();
    await attachment.detach();
    await cluster.close();
  }
});
