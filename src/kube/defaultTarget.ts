import { unbracket } from '../net/hostnames.ts';
import type { Target } from '../resolver/parseTarget.ts';

/** SRV records of a headless Service over the apiservers (see examples/kubernetes-headless-*.yaml). */
export const IN_CLUSTER_SRV_NAME = '_https._tcp.kubernetes-headless.default.svc.cluster.local.';
const IN_CLUSTER_DNS_TARGET = `dns+srv:///${IN_CLUSTER_SRV_NAME}`;
const ENDPOINTSLICE_TARGET = 'kubernetes:///default/kubernetes';

/**
 * Where to look for apiservers when the caller does not say. In a cluster (the server is the
 * `kubernetes` Service's address from `KUBERNETES_SERVICE_HOST`): the `kubernetes-headless` SRV
 * records if someone created them (no RBAC needed, cluster DNS is at hand), else the
 * `default/kubernetes` EndpointSlice. Outside: the EndpointSlice only (cluster DNS is not reachable
 * from there). Either way the kubeconfig's server stays the last resort.
 */
export function defaultTarget(server: URL, env: NodeJS.ProcessEnv = process.env): Target {
  return inCluster(server, env) ? [IN_CLUSTER_DNS_TARGET, ENDPOINTSLICE_TARGET] : ENDPOINTSLICE_TARGET;
}

function inCluster(server: URL, env: NodeJS.ProcessEnv): boolean {
  const host = env.KUBERNETES_SERVICE_HOST;
  return host !== undefined && host !== '' && unbracket(server.hostname) === unbracket(host);
}
