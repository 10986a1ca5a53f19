import type { Balancer } from '../../index.ts';
import { endpointKey } from '../../net/endpointKey.ts';
import type { DemoCluster } from './DemoCluster.ts';
import { seconds } from './seconds.ts';
import type { BalancerCounts } from './summary.ts';

/** What kube-balancer did, for the summary: its `stats()`, and the drains and restores its events told. */
export class BalancerAccount {
  readonly #balancer: Balancer;
  #drains = 0;
  #restores = 0;

  /** Tells the view about ejections, drains, restores and DNS failures as they happen. */
  constructor(balancer: Balancer, demo: DemoCluster, event: (text: string) => void) {
    this.#balancer = balancer;
    const name = (e: { address: string; port: number }): string => demo.apiservers.find((a) => a.address === endpointKey(e))?.name ?? endpointKey(e);
    balancer.on('eject', (e, reason, ms) => event(`kube-balancer ejected ${name(e)} (${reason}) for ${seconds(ms)}`));
    balancer.on('drain', (e, reason) => {
      this.#drains++;
      event(`kube-balancer drains ${name(e)}: ${reason === 'shutdown' ? 'it answered "shutting down"' : '/readyz failed'}; no new requests go there`);
    });
    balancer.on('restore', (e, via) => {
      this.#restores++;
      event(`kube-balancer sends ${name(e)} requests again (${via === 'probation' ? 'a probation request succeeded' : via === 'probe' ? '/readyz passes' : 'Retry-After is over'})`);
    });
    balancer.on('dns-error', (error) => event(`kube-balancer: ${error.message} (the last endpoints stay in use)`));
  }

  get retries(): number {
    return sum(this.#balancer.stats().totals.retries);
  }

  counts(): BalancerCounts {
    const { totals, budget, resolver } = this.#balancer.stats();
    return {
      requests: totals.requests,
      failed: totals.failed,
      ejections: sum(totals.ejections),
      ejectionsByReason: nonZero(totals.ejections),
      drains: this.#drains,
      restores: this.#restores,
      retries: sum(totals.retries),
      retriesByReason: nonZero(totals.retries),
      retriesRefused: budget.refused,
      dnsQueries: resolver.dnsQueries,
    };
  }
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

function nonZero(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}
