import { endpointKey } from '../net/endpointKey.ts';
import type { EndpointAddress, Resolver } from './Resolver.ts';

/**
 * `resolver` with every set it lists cut to `max` endpoints, so a broken or hostile listing cannot
 * make the balancer probe and pool thousands of addresses. The subset is deterministic, whatever the
 * listing's order: the lowest priority value first, then by `address:port`. A cut warns, once per
 * distinct listing.
 */
export function limitEndpoints(resolver: Resolver, max: number): Resolver {
  return {
    start(listener) {
      let warned = '';
      resolver.start({
        error: (error) => listener.error(error),
        warning: (message) => listener.warning?.(message),
        dnsQuery: (result) => listener.dnsQuery?.(result),
        endpoints(set) {
          if (set.length <= max) {
            warned = '';
            listener.endpoints(set);
            return;
          }
          const keyed = set.map((endpoint) => ({ endpoint, key: endpointKey(endpoint), priority: endpoint.priority ?? 0 }));
          keyed.sort((a, b) => a.priority - b.priority || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
          const kept = keyed.slice(0, max);
          const message = `the resolver listed ${set.length} endpoints, more than maxEndpoints (${max}): using the first ${max} by priority, then address (up to ${kept.at(-1)!.key})`;
          if (message !== warned) listener.warning?.(message);
          warned = message;
          listener.endpoints(kept.map(({ endpoint }) => endpoint) satisfies EndpointAddress[]);
        },
      });
    },
    ...(resolver.refresh ? { refresh: () => resolver.refresh!() } : {}),
    ...(resolver.close ? { close: () => resolver.close!() } : {}),
  };
}
