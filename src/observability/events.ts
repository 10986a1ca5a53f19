import type { EjectReason, EndpointInfo } from '../balancer/Endpoint.ts';
import type { RestoreVia } from '../health/HealthTracker.ts';
import type { RetryReason } from '../health/outcome.ts';

export interface BalancerEvents {
  /** The endpoint set changed (resolver update). */
  endpoints: [endpoints: EndpointInfo[]];
  /** An endpoint stopped taking requests for `durationMs` (connect/TLS failure, 5xx, 429, failed probe). */
  eject: [endpoint: EndpointInfo, reason: EjectReason, durationMs: number];
  /** An endpoint takes requests again. */
  restore: [endpoint: EndpointInfo, via: RestoreVia];
  /** An endpoint's apiserver is shutting down or failing /readyz: no new requests, running ones finish. */
  drain: [endpoint: EndpointInfo, reason: 'probe' | 'shutdown'];
  /** A request is tried again on another endpoint. */
  retry: [event: { from: EndpointInfo; to: EndpointInfo; reason: RetryReason; attempt: number }];
  /** An open watch was ended (at an event boundary) so that its client re-watches where `to` has fewer. */
  rebalance: [event: { from: EndpointInfo; to: EndpointInfo }];
  /** Resolution failed, whatever the resolver (DNS, EndpointSlice, custom); the previous endpoints stay in use. */
  'resolver-error': [error: Error];
  /** A DNS resolution failed (`dns:`, `dns+srv:` targets; code `ERR_DNS`); also emitted as `resolver-error`. */
  'dns-error': [error: Error];
  /** Something to know that is not a failure: a resolver serving a stale answer, a probe refused for lack of credentials. */
  warning: [message: string];
}

/** What emits those events (a `Balancer`): all the logger and other listeners need of one. */
export interface BalancerEventSource {
  on<E extends keyof BalancerEvents>(event: E, listener: (...args: BalancerEvents[E]) => void): unknown;
}
