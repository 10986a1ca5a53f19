import type { KubeConfig } from '@kubernetes/client-node';
import { attachToKubeConfig } from './attachToKubeConfig.ts';
import type { KubeBalancerOptions } from './createKubeBalancer.ts';
import { importClientNode } from './peers.ts';

/**
 * The switch of the original proposal, as a one-line replacement for
 * `const kc = new KubeConfig(); kc.loadFromDefault();`:
 *
 * - `CLIENT_LOAD_BALANCE=true` (or `1`): the `KubeConfig` comes attached to a balancer
 *   (`attachToKubeConfig`; reach it with `attachmentOf(kc)`). `CLIENT_LOAD_BALANCE_TARGET` sets the
 *   target, several separated by spaces to be tried in order; by default the in-cluster chain
 *   (`kubernetes-headless` SRV records, then the `default/kubernetes` EndpointSlice) or, outside a
 *   cluster, the EndpointSlice.
 * - unset, empty, `false` or `0`: a plain `KubeConfig`, exactly what `loadFromDefault()` gives —
 *   nothing of this package is involved. Any other value counts as off, with a warning.
 *
 * `options` go to `attachToKubeConfig` when the switch is on; an explicit `options.target` wins over
 * the environment.
 */
export async function loadBalancedKubeConfig(options: KubeBalancerOptions = {}): Promise<KubeConfig> {
  const { KubeConfig } = await importClientNode();
  const kc = new KubeConfig();
  kc.loadFromDefault();
  if (!switchedOn(process.env.CLIENT_LOAD_BALANCE)) return kc;
  const fromEnv = process.env.CLIENT_LOAD_BALANCE_TARGET?.trim().split(/\s+/).filter(Boolean) ?? [];
  const target = options.target ?? (fromEnv.length === 0 ? undefined : fromEnv.length === 1 ? fromEnv[0] : fromEnv);
  await attachToKubeConfig(kc, { ...options, ...(target === undefined ? {} : { target }) });
  return kc;
}

function switchedOn(value: string | undefined): boolean {
  const normalized = (value ?? '').trim().toLowerCase();
  if (normalized === 'true' || normalized === '1') return true;
  if (normalized !== '' && normalized !== 'false' && normalized !== '0') {
    process.emitWarning(`kube-balancer: CLIENT_LOAD_BALANCE=${JSON.stringify(value)} is neither true nor false; load balancing stays off`, {
      type: 'KubeBalancerWarning',
      code: 'KUBE_BALANCER_SWITCH',
    });
  }
  return false;
}
