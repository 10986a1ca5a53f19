import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { type ResolvedTls, type Verification, verificationFor } from '../net/tls.ts';
import { validateTls } from '../options/validate.ts';
import { readKubeConfig } from '../kube/readKubeConfig.ts';
import { UsageError } from './args.ts';
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
    await loadFile(kc, file);
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
    if (!known.includes(context)) throw new UsageError(`no context "${context}" in ${source} (contexts: ${known.join(', ') || 'none'})`);
    kc.setCurrentContext(context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    const contexts = kc.getContexts().map((c) => c.name);
    throw new UsageError(`${source} has no current context with a cluster: pass --context NAME (contexts: ${contexts.join(', ') || 'none'})`);
  }
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

/**
 * `kc.loadFromFile(file)`, each way the file can be wrong a usage error (exit 2) naming it: missing,
 * a directory, unreadable, not YAML, or YAML that is not a kubeconfig (client-node takes any YAML
 * and finds nothing in it, which read as "no current context" before).
 */
async function loadFile(kc: KubeConfig, file: string): Promise<void> {
  try {
    if ((await stat(file)).isDirectory()) throw new UsageError(`--kubeconfig ${file} is a directory, not a kubeconfig file`);
    await readFile(file);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const { code, message } = error as NodeJS.ErrnoException;
    const why = code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : code === 'EACCES' || code === 'EPERM' ? 'cannot be read (permission denied)' : `cannot be read (${message})`;
    throw new UsageError(`--kubeconfig ${file} ${why}`);
  }
  try {
    kc.loadFromFile(file);
  } catch (error) {
    const { name, message } = error as Error;
    const first = message.split('\n')[0]!;
    throw new UsageError(name === 'YAMLException' ? `--kubeconfig ${file} is not YAML: ${first}` : `--kubeconfig ${file} is not a kubeconfig: ${first}`);
  }
  if (kc.getClusters().length === 0 && kc.getContexts().length === 0) {
    throw new UsageError(`--kubeconfig ${file} is YAML but not a kubeconfig: it lists no clusters and no contexts`);
  }
}
