import type { Balancer } from '../dispatcher/Balancer.ts';
import { notAttached, type KubeAttachment } from './attachToKubeConfig.ts';
import { createKubeBalancer, type KubeBalancerOptions } from './createKubeBalancer.ts';
import { fluentClientPeers, type DispatchFunction } from './peers.ts';
import { isFluentAgent } from './fluentAgent.ts';
import { unbalanceableReason } from './readKubeConfig.ts';

/** The patched `Agent.prototype.dispatch` of one undici copy, and the balancers it routes to, by origin. */
interface Patch {
  readonly original: DispatchFunction;
  readonly balancers: Map<string, { balancer: Balancer; origin: URL }>;
}

const patches = new WeakMap<object, Patch>();

/**
 * Routes kubernetes-fluent-client's requests to the cluster through a balancer. KFC takes no
 * dispatcher: every call loads the default kubeconfig and sends through a new undici `Agent` that
 * its own modules build (`getHTTPSAgent`), out of reach of any hook but undici's. So the balancer is
 * built from the same kubeconfig (`KUBECONFIG`, `~/.kube/config` or in-cluster, through KFC's own
 * client-node) and from KFC's undici, and `Agent.prototype.dispatch` of that copy — which npm may
 * share with the application — sends to the balancer only the requests of agents that are KFC's
 * own for that cluster (`isFluentAgent`): the cluster's origin, KFC's agent options exactly, and
 * the very CA, client certificate and key the balancer holds. Any other agent (the application's,
 * the global dispatcher, `fetch` with a dispatcher of its own), and everything once the balancer is
 * closed or detached, goes as before: never rerouted, never handed the kubeconfig's certificate.
 * KFC's retries, watch resyncs and credentials (it sets the `Authorization` header itself) are
 * untouched; `tls-server-name` and `insecure-skip-tls-verify`, which KFC ignores, are honoured.
 *
 * With `proxy-url` in the kubeconfig, or a server that is not `https:`, nothing is patched (see `attachToKubeConfig`).
 */
export async function attachToFluentClient(options: KubeBalancerOptions = {}): Promise<KubeAttachment> {
  const { undici, KubeConfig } = await fluentClientPeers();
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const reason = unbalanceableReason(kc);
  if (reason) return notAttached(reason);
  const { balancer, material } = await createKubeBalancer(kc, { undici, ...options });
  const origin = material.server.origin;
  const proto = undici.Agent.prototype as unknown as { dispatch: DispatchFunction };
  const patch = patches.get(proto) ?? patchDispatch(proto);
  patch.balancers.set(origin, { balancer, origin: material.server });
  let detached = false;
  return {
    attached: true,
    reason: undefined,
    balancer,
    detach: async () => {
      if (!detached) {
        detached = true;
        if (patch.balancers.get(origin)?.balancer === balancer) patch.balancers.delete(origin);
        if (patch.balancers.size === 0 && patches.get(proto) === patch) {
          proto.dispatch = patch.original;
          patches.delete(proto);
        }
      }
      await balancer.close();
    },
  };
}

/** Sends the requests of KFC's own agents for an origin in the patch's map to that balancer while it is open. */
function patchDispatch(proto: { dispatch: DispatchFunction }): Patch {
  const patch: Patch = { original: proto.dispatch, balancers: new Map() };
  proto.dispatch = function (opts, handler) {
    const target = patch.balancers.get(originOf(opts.origin));
    if (target && isFluentAgent(this, target.balancer, target.origin)) return target.balancer.dispatch(opts as never, handler as never);
    return patch.original.call(this, opts, handler);
  };
  patches.set(proto, patch);
  return patch;
}

const origins = new Map<string, string>();

/** `opts.origin` as `URL.origin`; undici's fetch passes the string form, parsed once. */
function originOf(origin: string | URL | null | undefined): string {
  if (origin === null || origin === undefined) return '';
  if (typeof origin !== 'string') return origin.origin;
  let parsed = origins.get(origin);
  if (parsed === undefined) {
    try {
      parsed = new URL(origin).origin;
    } catch {
      parsed = '';
    }
    if (origins.size >= 64) origins.clear();
    origins.set(origin, parsed);
  }
  return parsed;
}
