import type { Balancer } from '../dispatcher/Balancer.ts';
import { createKubeBalancer, type KubeBalancerOptions } from './createKubeBalancer.ts';
import type { KubeConfigLike } from './readKubeConfig.ts';

/**
 * A balancer for the current context of a `@kubernetes/client-node` `KubeConfig` (or in-cluster
 * config, `kc.loadFromCluster()`): requests to `cluster.server` are balanced over the apiservers
 * `options.target` finds (default: the `default/kubernetes` EndpointSlice, read through the server),
 * with the kubeconfig's CA, client certificate (exec plugins' included), `tls-server-name` and
 * `insecure-skip-tls-verify` as client-node applies them. Every endpoint is verified against
 * `tls-server-name`, else the server's host name, else the server's IP (in-cluster
 * `https://10.96.0.1:443`) — never against the address dialled. Rejects with `ERR_KUBECONFIG` when
 * the cluster has `proxy-url` (dialling apiservers directly would bypass the proxy) or a server that
 * is not `https:`.
 *
 * Use it as the `dispatcher` of undici's `fetch`/`request` (add the credentials yourself), or let
 * `attachToKubeConfig` route every request of the `KubeConfig` through it.
 */
export async function fromKubeConfig(kc: KubeConfigLike, options: KubeBalancerOptions = {}): Promise<Balancer> {
  return (await createKubeBalancer(kc, options)).balancer;
}
