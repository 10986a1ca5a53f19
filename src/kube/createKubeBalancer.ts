import { createBalancer, type Balancer } from '../dispatcher/Balancer.ts';
import { balancerInternals } from '../dispatcher/internals.ts';
import { systemClock, type Clock } from '../clock.ts';
import { BalancerError } from '../errors.ts';
import type { BalancerOptions, BootstrapOptions, TlsOptions } from '../options/BalancerOptions.ts';
import type { Target } from '../resolver/parseTarget.ts';
import { defaultTarget } from './defaultTarget.ts';
import { clientNodeUndici } from './peers.ts';
import { readKubeConfig, unbalanceableReason, type KubeConfigLike, type KubeMaterial } from './readKubeConfig.ts';
import { currentScope, pinnedView, type ApplyMethod, type ClusterScope } from './scope.ts';

/** Balancer options for a kubeconfig: everything but what the kubeconfig decides. */
export interface KubeBalancerOptions extends Omit<BalancerOptions, 'target' | 'origin' | 'tls' | 'bootstrap'> {
  /**
   * Where the apiservers are. Default: in a cluster `['dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.',
   * 'kubernetes:///default/kubernetes']`, outside `'kubernetes:///default/kubernetes'`.
   */
  target?: Target;
  /** `{ lastResort: false }` keeps the kubeconfig's server out of the endpoint set. */
  bootstrap?: Pick<BootstrapOptions, 'lastResort'>;
  /**
   * The TLS material is the kubeconfig's; only the opt-in for a kubeconfig with
   * `insecure-skip-tls-verify: true` and a discovering target is yours (see `tls.allowUnverifiedDiscovered`).
   */
  tls?: Pick<TlsOptions, 'allowUnverifiedDiscovered'>;
}

/** How long one reading of the kubeconfig's credentials serves probes and the resolver. */
const CREDENTIALS_TTL_MS = 1_000;

/**
 * A balancer for the kubeconfig's current context: its server is the balanced origin, the bootstrap
 * of `kubernetes:` targets and the last resort; its TLS material and credentials are client-node's
 * own reading (`apply`, default `kc.applyToHTTPSOptions` as it is now), re-read for probes and
 * EndpointSlice requests so rotations reach them, and new TLS material replaces the pools' (the
 * client's own requests bring theirs through the hooks). Those readings stay on this context
 * (`pinnedView`) when the application switches to another one; `scope` is the cluster served.
 * `credentials` reads the headers that authenticate a request (re-read once a second at most, and
 * swapping in a rotated client certificate as it does): `kube-balancer proxy` adds them to each request.
 */
export async function createKubeBalancer(
  kc: KubeConfigLike,
  options: KubeBalancerOptions,
  // The method as it is now, before any hook: it is called on the pinned view.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  apply: ApplyMethod = kc.applyToHTTPSOptions,
): Promise<{ balancer: Balancer; material: KubeMaterial; scope: ClusterScope; credentials: () => Promise<Record<string, string>> }> {
  const ownTls = Object.keys(options.tls ?? {}).find((key) => key !== 'allowUnverifiedDiscovered');
  if (ownTls !== undefined) throw new BalancerError('ERR_INVALID_OPTION', `options.tls.${ownTls} comes from the kubeconfig; only tls.allowUnverifiedDiscovered is an option here`);
  const unbalanceable = unbalanceableReason(kc);
  if (unbalanceable) throw new BalancerError('ERR_KUBECONFIG', unbalanceable);
  const scope = currentScope(kc);
  if (!scope) throw new BalancerError('ERR_KUBECONFIG', 'the kubeconfig has no current cluster (check current-context)');
  const pinned = pinnedView(kc, scope, apply);
  const read = (): Promise<KubeMaterial> => readKubeConfig(pinned.view, pinned.apply);
  const material = await read();
  // Filled in below; the resolver may ask for credentials while the balancer is being built.
  const built: { balancer?: Balancer } = {};
  // The reading just made serves first, so the first probes and EndpointSlice requests do not run an exec plugin again.
  const credentials = cachedFor(
    CREDENTIALS_TTL_MS,
    options.clock ?? systemClock,
    async () => {
      const internals = built.balancer && balancerInternals(built.balancer);
      const reading = internals?.beginTlsReading();
      const fresh = await read();
      internals?.replaceTls(fresh.tls, reading);
      return fresh.headers;
    },
    material.headers,
  );
  const { target, bootstrap, probe, undici, tls, ...rest } = options;
  const balancer = createBalancer({
    ...rest,
    undici: undici ?? clientNodeUndici(),
    target: target ?? defaultTarget(material.server),
    origin: material.server.origin,
    tls: tls?.allowUnverifiedDiscovered === undefined ? material.tls : { ...material.tls, allowUnverifiedDiscovered: tls.allowUnverifiedDiscovered },
    bootstrap: { server: material.server, headers: credentials, lastResort: bootstrap?.lastResort ?? true },
    // /readyz may be closed to anonymous requests: probes carry the kubeconfig's credentials.
    probe: probe === false ? false : { ...probe, headers: probe?.headers ?? credentials },
  });
  built.balancer = balancer;
  return { balancer, material, scope, credentials };
}

/**
 * `read`, asked again only once its last answer is `ttlMs` of `clock` time old; a failed read is not
 * kept. `first`, when given, is an answer read just now.
 */
export function cachedFor<T>(ttlMs: number, clock: Clock, read: () => Promise<T>, first?: T): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | undefined = first === undefined ? undefined : { at: clock.now(), value: Promise.resolve(first) };
  return () => {
    const now = clock.now();
    if (cached && now - cached.at < ttlMs) return cached.value;
    const value = read();
    value.catch(() => (cached = undefined));
    cached = { at: now, value };
    return value;
  };
}
