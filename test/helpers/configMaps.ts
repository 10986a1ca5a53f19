// ConfigMaps `cm-0`…`cm-{n-1}` in `default`, one per GET, so that a GET's path names it (where it
// went first, whether it was hedged), and a timed GET of one of them.
import * as undici from 'undici';
import { RESOURCES, type ApiserverCluster } from '../../fixtures/apiserver/index.ts';

export function createConfigMaps(cluster: ApiserverCluster, count: number): void {
  for (let i = 0; i < count; i++) cluster.store.create(RESOURCES.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'default' } });
}

/** GETs `cm-{i}` from `origin` through `dispatcher`: its time in ms; a status other than 200 throws. */
export async function getConfigMap(cluster: ApiserverCluster, origin: string, dispatcher: undici.Dispatcher, i: number): Promise<number> {
  const started = performance.now();
  const res = await undici.request(`${origin}/api/v1/namespaces/default/configmaps/cm-${i}`, { dispatcher, headers: cluster.authHeaders });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  return performance.now() - started;
}
