// What the port-forward tests through the proxy share: kubectl port-forward started against a
// proxied cluster with pod `p`, and which apiserver switched each tunnel.
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import type { ApiserverCluster, ApiserverInstance } from '../../fixtures/apiserver/index.ts';
import type { KubeProxy } from '../../src/proxy/createProxy.ts';
import { until } from '../helpers/poll.ts';
import { follow, freePort, writeProxyKubeconfig, type Followed } from '../helpers/realClients.ts';
import { proxiedCluster } from './helpers.ts';

/** The instances that switched the port-forward upgrades, in the order they were asked. */
export function carriers(cluster: ApiserverCluster): ApiserverInstance[] {
  return cluster.instances
    .flatMap((instance) => instance.requests.filter((r) => r.subresource === 'portforward' && r.status === 101).map((r) => ({ instance, time: r.time })))
    .sort((a, b) => a.time - b.time)
    .map((c) => c.instance);
}

/**
 * Three apiservers behind a proxy, pod `p`, and `portForward()`: kubectl 1.32 forwarding a free
 * local port to the pod's 8080, once it listens (asserted running). Everything stops at teardown.
 */
export async function portForwarding(
  t: ExecutionContext,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ cluster: ApiserverCluster; proxy: KubeProxy; portForward: () => Promise<{ forward: Followed; port: number }> }> {
  const { cluster, proxy, close } = await proxiedCluster();
  const forwards: Followed[] = [];
  t.teardown(async () => {
    for (const forward of forwards) await forward.stop();
    await close();
  });
  cluster.addPod('p');
  const kubeconfig = join((await cluster.kubeconfigFile()).replace(/\/[^/]+$/, ''), 'via-proxy.yaml');
  await writeProxyKubeconfig(kubeconfig, proxy.url!);
  const env = { KUBECONFIG: kubeconfig, ...extraEnv };
  const portForward = async (): Promise<{ forward: Followed; port: number }> => {
    const port = await freePort();
    const forward = follow('kubectl', ['port-forward', 'pod/p', `${port}:8080`], env);
    forwards.push(forward);
    await until(() => forward.output().includes(`Forwarding from 127.0.0.1:${port}`) || forward.exited(), { what: 'kubectl to listen', timeoutMs: 30_000 });
    t.is(forward.exited(), undefined, `kubectl port-forward runs: ${forward.errors()}`);
    return { forward, port };
  };
  return { cluster, proxy, portForward };
}
