import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { type ResolvedTls, type Verification, verificationFor } from '../net/tls.ts';
import { validateTls } from '../options/validate.ts';
import { readKubeConfig } from '../kube/readKubeConfig.ts';
import { optional } from './optional.ts';

/** What `probe` needs from a kubeconfig: where the cluster is, how to verify it, how to authenticate. */
export interface ClusterAccess {
  /** The file(s) read, or `in-cluster`. */
  source: string;
  context: string;
  /** The kubeconfig's `server`, often a load balancer in front of the apiservers. */
  server: URL;
  /** The TLS material, as the balancer takes it; `rejectUnauthorized: false` when the kubeconfig says `insecure-skip-tls-verify`. */
  tls: ResolvedTls;
  /** The name every apiserver certificate must cover (`tls-server-name`, else the server's host; an IP stays an IP), and its SNI. */
  verification: Verification;
  /** Credentials (`authorization` from a token, token file or exec plugin). */
  headers: Record<string, string>;
  /** The loaded kubeconfig, current context set. */
  kubeConfig: KubeConfig;
}

/**
 * Loads a kubeconfig with `@kubernetes/client-node` and reads its current context the way
 * `fromKubeConfig` does (`readKubeConfig`: client-node's own `applyToHTTPSOptions`), and verifies
 * as the balancer does (`verificationFor`), so the probe checks exactly the TLS material, name and
 * credentials the balancer would use.
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
  const material = await readKubeConfig(kc);
  const tls = validateTls(material.tls);
  return {
    source,
    context: kc.getCurrentContext(),
    server: material.server,
    tls,
    verification: verificationFor(material.server, tls),
    headers: material.headers,
    kubeConfig: kc,
  };
}
