import type { Balancer } from '../dispatcher/Balancer.ts';
import { balancerInternals } from '../dispatcher/internals.ts';
import { BalancingAgent } from '../dispatcher/BalancingAgent.ts';
import { BalancerError } from '../errors.ts';
import { createKubeBalancer, type KubeBalancerOptions } from './createKubeBalancer.ts';
import { tlsOf, unbalanceableReason, type KubeConfigLike } from './readKubeConfig.ts';
import { currentScope, sameScope, type ApplyMethod } from './scope.ts';

/** What `attachToKubeConfig` did. */
export interface KubeAttachment {
  /** False when the kubeconfig could not be attached (see `reason`); the `KubeConfig` is untouched then. */
  readonly attached: boolean;
  /** Why it was not attached. */
  readonly reason: string | undefined;
  /** The balancer every request of the `KubeConfig` goes through, when attached. */
  readonly balancer: Balancer | undefined;
  /** Restores the `KubeConfig`'s own methods and closes the balancer (running requests finish). */
  detach(): Promise<void>;
}

interface RequestContextLike {
  setDispatcher(dispatcher: unknown): void;
}

/** client-node 2.x builds a new undici Agent per request here; JavaScript-visible, TypeScript-private. */
type CreateDispatcher = (this: unknown, cluster: unknown, agentOptions: Record<string, unknown>) => unknown;

interface Hookable {
  applySecurityAuthentication: (this: unknown, context: RequestContextLike) => Promise<void>;
  applyToHTTPSOptions: ApplyMethod;
}

const HOOKED = ['applySecurityAuthentication', 'applyToHTTPSOptions'] as const;
const attachments = new WeakMap<object, KubeAttachment>();
/** KubeConfigs whose attachment is being set up (reading credentials may run an exec plugin). */
const attaching = new WeakSet<object>();

/**
 * Routes the requests of a client-node 2.x `KubeConfig` for its current cluster through a balancer
 * (see `fromKubeConfig` for `options`): generated APIs, `KubernetesObjectApi`, `Watch`, informers,
 * `Log`, `Metrics`, `Health` get it as their undici dispatcher (`applySecurityAuthentication`), and
 * the WebSockets of `Exec`, `Attach`, `PortForward` and `Cp` an `https.Agent` that picks an
 * endpoint per connection (`applyToHTTPSOptions`). Pools come from client-node's own undici. As a
 * side effect client-node stops opening a TLS connection per request: each apiserver gets one
 * (HTTP/2) connection.
 *
 * Only the attached cluster is balanced (`ClusterScope`: the same cluster and user entries, whatever
 * the context is called). Each request is judged when client-node reads its context: after
 * `kc.setCurrentContext()` to another cluster, requests are client-node's own, unchanged (its
 * proxies, its refusal of `http:`); the balancer never sees that cluster's TLS material or
 * credentials, and switching back balances again. Credentials are still client-node's, asked for
 * per request, so tokens and exec plugins rotate as before; TLS material that changes (an exec
 * plugin's new client certificate) gets new connections.
 *
 * A current cluster with `proxy-url` is not attached — dialling apiservers directly would bypass the
 * proxy — nor one whose server is not `https:` (`kubectl proxy`'s `http:`: one local endpoint,
 * nothing to balance): the result says why, and a `KubeBalancerWarning` is emitted on `process`.
 */
export async function attachToKubeConfig(kc: KubeConfigLike, options: KubeBalancerOptions = {}): Promise<KubeAttachment> {
  if (attachments.has(kc) || attaching.has(kc)) throw new BalancerError('ERR_KUBECONFIG', 'this KubeConfig is already attached to a balancer; detach it first');
  const reason = unbalanceableReason(kc);
  if (reason) return notAttached(reason);
  attaching.add(kc);
  try {
    return await attach(kc, options);
  } finally {
    attaching.delete(kc);
  }
}

/** The result for a cluster the balancer must not take over (`unbalanceableReason`), with the warning. */
export function notAttached(why: string): KubeAttachment {
  const reason = `not attached: ${why}`;
  process.emitWarning(`kube-balancer: ${reason}`, { type: 'KubeBalancerWarning', code: 'KUBE_BALANCER_NOT_ATTACHED' });
  return { attached: false, reason, balancer: undefined, detach: () => Promise.resolve() };
}

async function attach(kc: KubeConfigLike, options: KubeBalancerOptions): Promise<KubeAttachment> {
  const target = kc as unknown as Hookable;
  const own = new Map<string, PropertyDescriptor | undefined>(HOOKED.map((name) => [name, Object.getOwnPropertyDescriptor(target, name)]));
  const original = {
    applySecurityAuthentication: target.applySecurityAuthentication,
    applyToHTTPSOptions: target.applyToHTTPSOptions,
  };
  const { balancer, scope } = await createKubeBalancer(kc, options, original.applyToHTTPSOptions);
  const internals = balancerInternals(balancer);
  const agent = new BalancingAgent(balancer);

  const restore = (): void => {
    if (attachments.get(kc) !== attachment) return;
    attachments.delete(kc);
    for (const [name, descriptor] of own) {
      if (descriptor) Object.defineProperty(target, name, descriptor);
      else delete (target as unknown as Record<string, unknown>)[name];
    }
  };
  // After `balancer.close()` without `detach()`, the KubeConfig behaves as it did before.
  const live = (): boolean => {
    if (!internals.closed()) return true;
    restore();
    return false;
  };
  // Judged in the same tick as client-node reads the context's entries (the synchronous start of
  // the original methods), so the material it reads is the attached cluster's whenever this holds.
  const balanced = (self: unknown): boolean => live() && sameScope(currentScope(self as KubeConfigLike), scope);

  // client-node's own request, with `this.createDispatcher` answered by the balancer: its credentials
  // and headers are set as ever, and its reading of the TLS material (per request: new material gets
  // new connections) replaces the pools'. Other clusters go through `kc` itself, untouched.
  // Each reading is numbered as it begins, so one that an exec plugin made slow cannot undo a
  // rotation that a later reading already brought.
  const withBalancer = (self: object, reading: number): object =>
    Object.create(self, {
      createDispatcher: {
        value: ((_cluster, agentOptions) => {
          internals.replaceTls(tlsOf(agentOptions), reading);
          return balancer;
        }) satisfies CreateDispatcher,
      },
    }) as object;
  target.applySecurityAuthentication = async function (context) {
    if (!balanced(this)) return original.applySecurityAuthentication.call(this, context);
    await original.applySecurityAuthentication.call(withBalancer(this as object, internals.beginTlsReading()), context);
    context.setDispatcher(balancer);
  };
  target.applyToHTTPSOptions = async function (opts) {
    if (!balanced(this)) return original.applyToHTTPSOptions.call(this, opts);
    const reading = internals.beginTlsReading();
    await original.applyToHTTPSOptions.call(this, opts);
    internals.replaceTls(tlsOf(opts), reading);
    opts.agent = agent;
  };

  const attachment: KubeAttachment = {
    attached: true,
    reason: undefined,
    balancer,
    detach: async () => {
      restore();
      agent.destroy();
      await balancer.close();
    },
  };
  attachments.set(kc, attachment);
  return attachment;
}

/** The attachment of a `KubeConfig` (e.g. one from `loadBalancedKubeConfig`), to reach its balancer or detach it. */
export function attachmentOf(kc: object): KubeAttachment | undefined {
  return attachments.get(kc);
}
