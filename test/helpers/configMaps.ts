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

/**
 * Call `n` of a mixed workload through `dispatcher`: an odd `n` creates ConfigMap `cm-n` (a POST,
 * which may not be retried once sent), an even one lists the ConfigMaps. What went wrong (`n: status`
 * or `n: error`), or undefined when it succeeded.
 */
export async function listOrCreate(cluster: ApiserverCluster, origin: string, dispatcher: undici.Dispatcher, n: number): Promise<string | undefined> {
  const post = n % 2 === 1;
  try {
    const res = await undici.request(`${origin}/api/v1/namespaces/default/configmaps${post ? '' : `?i=${n}`}`, {
      dispatcher,
      method: post ? 'POST' : 'GET',
      headers: { ...cluster.authHeaders, 'content-type': 'application/json' },
      ...(post ? { body: JSON.stringify({ metadata: { name: `cm-${n}` } }) } : {}),
    });
    await res.body.dump();
    return res.statusCode === 200 || res.statusCode === 201 ? undefined : `${n}: ${res.statusCode}`;
  } catch (err) {
    return `${n}: ${(err as Error).message}`;
  }
}
