import { endpointKey } from '../net/endpointKey.ts';

/**
 * A resolver turns a target into a stream of complete endpoint sets (gRPC's naming model). The
 * balancer calls `start` once, `refresh` when it suspects the set is stale (a connection failed),
 * and `close` when it is closed.
 *
 * Contract for implementations (ours and users'):
 * - `endpoints` always receives the whole current set, never a delta, and only when it changed.
 * - A failure never empties the set: report it through `error` and keep the last good answer.
 */
export interface Resolver {
  start(listener: ResolverListener): void;
  /** Re-resolve soon. Implementations rate-limit this themselves. */
  refresh?(): void;
  close?(): void | Promise<void>;
}

export interface ResolverListener {
  endpoints(set: readonly EndpointAddress[]): void;
  /** Resolution failed; the previous set (if any) stays in use. */
  error(error: Error): void;
  /** Something the operator should know that is not a failure (e.g. serving a stale answer). */
  warning?(message: string): void;
  /**
   * A DNS query got its answer or failed: `success`, or the failure (`NXDOMAIN`, `NODATA`,
   * `SERVFAIL`, `TIMEOUT`…). Once per query sent to a server, never for an answer from the cache.
   * Only counted (`stats().resolver.dnsQueries`, the `dns_queries_total` metric). Optional to call.
   */
  dnsQuery?(result: string): void;
}

export interface EndpointAddress {
  /** IPv4 or IPv6 literal, without brackets. */
  address: string;
  port: number;
  /** Relative share of traffic within its priority. Default 1. */
  weight?: number;
  /** Lower is preferred (SRV semantics). Default 0. */
  priority?: number;
  /** Seconds the record that produced this endpoint stays valid, when known (informational). */
  ttl?: number;
  /**
   * Where the endpoint came from, e.g. `static`, `dns+srv`, `kubernetes`. Informational, except
   * `server` (`LAST_RESORT`): the configured server kept as the last resort, which alone does not
   * count as a first set (the apiservers discovered after it start at full weight).
   */
  source?: string;
}

export const LAST_RESORT = 'server';

/**
 * A set as change detection sees it: its endpoints with weight and priority, in any order (TTL and
 * source do not count). A resolver hands a set on only when this differs from the last one's.
 */
export function endpointSignature(set: readonly EndpointAddress[]): string {
  return set
    .map((e) => `${endpointKey(e)}/${e.weight ?? 1}/${e.priority ?? 0}`)
    .sort()
    .join(',');
}

/**
 * Whether two sets have the same signature, answered without building it for small sets (each
 * resolver round compares its answer with the current set; with thousands of simulated clients
 * the signature's strings were a percent of a run): the same (address, port, weight, priority)
 * tuples, as a multiset. `undefined`: not decided here (a large set), compare signatures.
 */
export function sameSignature(a: readonly EndpointAddress[], b: readonly EndpointAddress[]): boolean | undefined {
  if (a.length !== b.length) return false;
  if (a.length > 30) return undefined;
  let used = 0;
  outer: for (const x of a) {
    for (let j = 0; j < b.length; j++) {
      const y = b[j]!;
      if ((used & (1 << j)) === 0 && x.address === y.address && x.port === y.port && (x.weight ?? 1) === (y.weight ?? 1) && (x.priority ?? 0) === (y.priority ?? 0)) {
        used |= 1 << j;
        continue outer;
      }
    }
    return false;
  }
  return true;
}

/** The endpoints in `endpointKey` order, as resolvers hand a set on (a listing's order does not show). */
export function inKeyOrder(endpoints: Iterable<EndpointAddress>): EndpointAddress[] {
  const keyed = Array.from(endpoints, (endpoint) => ({ key: endpointKey(endpoint), endpoint }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map(({ endpoint }) => endpoint);
}
