import { BalancerError } from '../errors.ts';
import type { Pem, TlsOptions } from '../net/tls.ts';

/** The cluster and user entries as client-node keeps them (1.x and 2.x alike). */
export interface ClusterEntry {
  name: string;
  server: string;
  proxyUrl?: string | undefined;
  skipTLSVerify?: boolean;
  caFile?: string | undefined;
  caData?: string | undefined;
  tlsServerName?: string | undefined;
}
export interface UserEntry {
  name: string;
  certFile?: string | undefined;
  certData?: string | undefined;
  keyFile?: string | undefined;
  keyData?: string | undefined;
}

/**
 * The parts of a `@kubernetes/client-node` `KubeConfig` this package uses (2.x, and the 1.x that
 * kubernetes-fluent-client brings), so that neither package is needed to compile against it.
 */
export interface KubeConfigLike {
  getCurrentCluster(): ClusterEntry | null;
  getCurrentUser(): UserEntry | null;
  getCurrentContext(): string;
  applyToHTTPSOptions(opts: object): Promise<void>;
  applySecurityAuthentication(context: never): Promise<void>;
}

/** What a request to the current cluster needs, as client-node itself works it out. */
export interface KubeMaterial {
  /** `cluster.server`, as written (a path prefix included). */
  server: URL;
  tls: TlsOptions;
  /** `Authorization` (token, token file, exec plugin, OIDC, basic auth) and `Impersonate-User`. */
  headers: Record<string, string>;
}

/** `KubeConfig.applyToHTTPSOptions`, called on a scratch object. */
export type ApplyToHttpsOptions = (opts: Record<string, unknown>) => Promise<void>;

/**
 * Reads the current context's server, TLS material and credentials by asking client-node to apply
 * them to a scratch request (`applyToHTTPSOptions`): that runs exec plugins and token files exactly
 * as a request of the client would, so what rotates there (exec plugin certificates and tokens, a
 * service-account token re-read every minute, a rewritten CA file) is current here too.
 */
export async function readKubeConfig(kc: KubeConfigLike, apply: ApplyToHttpsOptions = (opts) => kc.applyToHTTPSOptions(opts)): Promise<KubeMaterial> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new BalancerError('ERR_KUBECONFIG', 'the kubeconfig has no current cluster (check current-context)');
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    throw new BalancerError('ERR_KUBECONFIG', `the current cluster's server ${JSON.stringify(cluster.server)} is not a URL`);
  }
  const opts: Record<string, unknown> = {};
  await apply(opts);
  return { server, tls: tlsOf(opts), headers: headersOf(opts) };
}

/**
 * Why the balancer must not dial the current cluster's apiservers itself, if it must not: through
 * `proxy-url` it would bypass the proxy; a server that is not https (`kubectl proxy`'s `http:`) is
 * one local endpoint with nothing to balance. No current cluster, or a server that is not a URL, is
 * `readKubeConfig`'s error to report.
 */
export function unbalanceableReason(kc: KubeConfigLike): string | undefined {
  const cluster = kc.getCurrentCluster();
  if (!cluster) return undefined;
  if (cluster.proxyUrl) return `the current cluster has proxy-url ${cluster.proxyUrl}: dialling apiservers directly would bypass the proxy`;
  const protocol = URL.parse(cluster.server)?.protocol;
  if (protocol !== undefined && protocol !== 'https:') {
    return `the current cluster's server ${cluster.server} is not https: (a local proxy such as kubectl proxy has nothing to balance)`;
  }
  return undefined;
}

/** TLS settings from options client-node filled in (`https.RequestOptions` or its agent options). */
export function tlsOf(opts: Record<string, unknown>): TlsOptions {
  const tls: TlsOptions = { rejectUnauthorized: opts.rejectUnauthorized !== false };
  if (opts.ca !== undefined && opts.ca !== null) tls.ca = opts.ca as Pem;
  if (opts.cert !== undefined && opts.cert !== null) tls.cert = opts.cert as Pem;
  if (opts.key !== undefined && opts.key !== null) tls.key = opts.key as Pem;
  if (typeof opts.servername === 'string' && opts.servername !== '') tls.servername = opts.servername;
  return tls;
}

function headersOf(opts: Record<string, unknown>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries((opts.headers ?? {}) as Record<string, unknown>)) {
    if (typeof value === 'string' || typeof value === 'number') headers[name.toLowerCase()] = String(value);
  }
  if (typeof opts.auth === 'string') headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  return headers;
}
