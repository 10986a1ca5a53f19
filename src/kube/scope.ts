import { BalancerError } from '../errors.ts';
import type { KubeConfigLike } from './readKubeConfig.ts';

/**
 * What "the attached cluster" is. A balancer built from a kubeconfig serves one cluster entry as
 * one user entry reaches it: the cluster's name, `server`, `proxy-url`, CA source
 * (`certificate-authority` / `-data`), `tls-server-name` and `insecure-skip-tls-verify`, and the
 * user's name and client certificate source (`client-certificate` / `client-key`, file or data).
 * The context's own name does not count: two contexts naming the same cluster and user are the
 * same cluster. A token, exec plugin or auth provider of that user is read per request and may
 * rotate; so may the contents of the files named. Anything else — another context, or this one
 * after its cluster or user entry was rewritten — is another cluster.
 */
export interface ClusterScope {
  readonly cluster: string;
  readonly server: string;
  readonly proxyUrl: string;
  readonly caFile: string;
  readonly caData: string;
  readonly tlsServerName: string;
  readonly skipTLSVerify: boolean;
  readonly user: string;
  readonly certFile: string;
  readonly certData: string;
  readonly keyFile: string;
  readonly keyData: string;
}

/** The scope of the current context of `kc`, or `undefined` without a current cluster. */
export function currentScope(kc: KubeConfigLike): ClusterScope | undefined {
  const cluster = kc.getCurrentCluster();
  if (!cluster) return undefined;
  const user = kc.getCurrentUser();
  return {
    cluster: cluster.name,
    server: cluster.server,
    proxyUrl: cluster.proxyUrl ?? '',
    caFile: cluster.caFile ?? '',
    caData: cluster.caData ?? '',
    tlsServerName: cluster.tlsServerName ?? '',
    skipTLSVerify: cluster.skipTLSVerify === true,
    user: user?.name ?? '',
    certFile: user?.certFile ?? '',
    certData: user?.certData ?? '',
    keyFile: user?.keyFile ?? '',
    keyData: user?.keyData ?? '',
  };
}

export function sameScope(a: ClusterScope | undefined, b: ClusterScope | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  for (const key of Object.keys(a) as Array<keyof ClusterScope>) if (a[key] !== b[key]) return false;
  return true;
}

/** `KubeConfig.applyToHTTPSOptions` as a method, called with the view as `this`. */
export type ApplyMethod = (this: KubeConfigLike, opts: Record<string, unknown>) => Promise<void>;

/**
 * A view of `kc` that stays on the context current now, whatever `kc.setCurrentContext` does later,
 * and `apply` (client-node's own `applyToHTTPSOptions`, unhooked) run on it: the balancer's own
 * readings (probe and EndpointSlice credentials, TLS rotation) must keep reading the attached
 * cluster's material, never that of the context the application switched to. client-node keeps the
 * context's name in `currentContext`; the view shadows it and reads everything else through. A
 * reading whose scope is not `scope` any more (the entries were rewritten) throws.
 */
export function pinnedView(kc: KubeConfigLike, scope: ClusterScope, apply: ApplyMethod): { view: KubeConfigLike; apply: (opts: Record<string, unknown>) => Promise<void> } {
  const view = Object.create(kc, { currentContext: { value: kc.getCurrentContext(), writable: true, enumerable: true, configurable: true } }) as KubeConfigLike;
  return {
    view,
    apply: async (opts) => {
      // Checked in the same tick as client-node reads the entries (its first step is synchronous).
      if (!sameScope(currentScope(view), scope)) {
        throw new BalancerError(
          'ERR_KUBECONFIG',
          `context ${JSON.stringify(view.getCurrentContext())} no longer names cluster ${JSON.stringify(scope.cluster)} at ${scope.server} with user ${JSON.stringify(scope.user)}: the balancer reads no other cluster's credentials`,
        );
      }
      await apply.call(view, opts);
    },
  };
}
