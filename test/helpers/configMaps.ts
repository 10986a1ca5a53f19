// ConfigMaps `cm-0`…`cm-{n-1}` in `default`, one per GET, so that a GET's path names it (where it
// went first, whether it was hedged), a timed GET of one of them, and a balanced cluster holding them.
import * as undici from 'undici';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer, type BalancerOptions } from '../../src/index.ts';

function createConfigMaps(cluster: ApiserverCluster, count: number): void {
  for (let i = 0; i < count; i++) cluster.store.create(RESOURCES.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'default' } });
}

/** GETs `cm-{i}` from `origin` through `dispatcher`: its time in ms; a status other than 200 throws. */
async function getConfigMap(cluster: ApiserverCluster, origin: string, dispatcher: undici.Dispatcher, i: number): Promise<number> {
  const started = performance.now();
  const res = await undici.request(`${origin}/api/v1/namespaces/default/configmaps/cm-${i}`, { dispatcher, headers: cluster.authHeaders });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  return performance.now() - started;
}

/**
 * The black-hole tests' set-up: a simulated cluster holding `count` ConfigMaps, and a balancer over
 * it by the cluster's own name over real TLS, HTTP/2 PINGs off (so that only what the test is about
 * can find a black hole), with `options(cluster)` on top. `get(i)`: `getConfigMap` through it.
 */
export async function configMapCluster(count: number, options: (cluster: ApiserverCluster) => Omit<BalancerOptions, 'origin' | 'target' | 'tls'>) {
  const cluster = await ApiserverCluster.start();
  createConfigMaps(cluster, count);
  const origin = `https://kubernetes.default.svc:${cluster.port}`;
  const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, pingInterval: 0, ...options(cluster) });
  return {
    cluster,
    balancer,
    get: (i: number): Promise<number> => getConfigMap(cluster, origin, balancer, i),
    close: async (): Promise<void> => {
      await balancer.close();
      await cluster.close();
    },
  };
}
