import type { Policy } from '../../src/balancer/Picker.ts';
import { defaultOptions } from '../../src/options/BalancerOptions.ts';

/** How a simulated client's requests reach the apiservers. */
export interface Strategy {
  id: string;
  label: string;
  kind: 'l4' | 'kube';
  /** The apiservers' `--goaway-chance` in this run. */
  goawayChance?: number;
  /** kube-balancer's `policy`. */
  policy?: Policy;
  /**
   * kube-balancer's target: the `kubernetes-headless` SRV name, `kubernetes:///default/kubernetes`
   * (the EndpointSlice, listed and watched through the bootstrap server), or a static list.
   */
  discovery?: 'srv' | 'endpointslice' | 'static';
}

/** The library's default policy, whatever it is when this runs (so a new default is picked up). */
const DEFAULT_POLICY: Policy = defaultOptions.policy;

export const strategies: Record<string, Strategy> = {
  'l4-pinned': { id: 'l4-pinned', label: 'L4-pinned', kind: 'l4' },
  'l4-goaway': { id: 'l4-goaway', label: 'L4 + --goaway-chance 0.001', kind: 'l4', goawayChance: 0.001 },
  'kube-round-robin': { id: 'kube-round-robin', label: 'kube-balancer round robin', kind: 'kube', policy: 'round-robin', discovery: 'srv' },
  'kube-default': { id: 'kube-default', label: `kube-balancer default (${DEFAULT_POLICY})`, kind: 'kube', policy: DEFAULT_POLICY, discovery: 'srv' },
  'kube-endpointslice': {
    id: 'kube-endpointslice',
    label: `kube-balancer default, kubernetes:///default/kubernetes`,
    kind: 'kube',
    policy: DEFAULT_POLICY,
    discovery: 'endpointslice',
  },
};

export const defaultStrategies = ['l4-pinned', 'l4-goaway', 'kube-round-robin', 'kube-default'] as const;
