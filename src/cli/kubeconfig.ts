import { existsSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { optional } from './optional.ts';

/** What `probe` needs from a kubeconfig: where the cluster is, how to verify it, how to authenticate. */
export interface ClusterAccess {
  /** The file(s) read, or `in-cluster`. */
  source: string;
  context: string;
  /** The kubeconfig's `server`, often a load balancer in front of the apiservers. */
  server: URL;
  /** The name every apiserver certificate must cover: `tls-server-name`, else the server's host (an IP stays an IP). */
  name: string;
  ca: Buffer | string | undefined;
  cert: Buffer | string | undefined;
  key: Buffer | string | undefined;
  /** `false` when the kubeconfig says `insecure-skip-tls-verify`. */
  verify: boolean;
  /** Credentials (`authorization` from a token, token file or exec plugin). */
  headers: Record<string, string>;
}

/**
 * Reads a kubeconfig with `@kubernetes/client-node` and takes the TLS material its own requests
 * would use (`applyToHTTPSOptions`). The one place that maps a kubeconfig to TLS settings in the CLI,
 * so the Kubernetes integration's `fromKubeConfig` can replace it.
 */
export async function loadClusterAccess(file: string | undefined, context: string | undefined): Promise<ClusterAccess> {
  const { KubeConfig } = await optional(() => import('@kubernetes/client-node'), ['@kubernetes/client-node'], 'reading a kubeconfig');
  const kc = new KubeConfig();
  let source: string;
  if (file !== undefined) {
    source = file;
    kc.loadFromFile(file);
  } else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) {
    source = process.env.KUBECONFIG || join(homedir(), '.kube', 'config');
    kc.loadFromDefault();
  } else if (process.env.KUBERNETES_SERVICE_HOST) {
    source = 'in-cluster';
    kc.loadFromCluster();
  } else {
    throw new Error('no kubeconfig found: pass --kubeconfig FILE or set KUBECONFIG');
  }
  if (context !== undefined) {
    const known = kc.getContexts().map((c) => c.name);
    if (!known.includes(context)) throw new Error(`no context "${context}" in ${source} (contexts: ${known.join(', ') || 'none'})`);
    kc.setCurrentContext(context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`${source} has no current context or cluster: pass --context NAME`);
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    throw new Error(`the server of cluster "${cluster.name}" is not a URL: ${JSON.stringify(cluster.server)}`);
  }
  const options: RequestOptions & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(options);
  (options.agent as { destroy?: () => void } | undefined)?.destroy?.();
  return {
    source,
    context: kc.getCurrentContext(),
    server,
    name: cluster.tlsServerName ?? server.hostname.replace(/^\[|\]$/g, ''),
    ca: options.ca as Buffer | undefined,
    cert: options.cert as Buffer | undefined,
    key: options.key as Buffer | undefined,
    verify: options.rejectUnauthorized !== false,
    headers: Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)])),
  };
}
