import type { Endpoint } from './Endpoint.ts';

/** What the picker may know about a request. */
export interface PickRequest {
  /** Watches, `follow=true` logs and upgrades: balanced by open streams, not by request count. */
  longRunning: boolean;
  /** Endpoints this request already tried: a retry never goes to the same endpoint twice. */
  exclude?: ReadonlySet<Endpoint> | undefined;
}

/**
 * The momentary choice function of the balancer (gRPC's model): rebuilt whenever the endpoint set or
 * an endpoint's eligibility changes, so `pick` reads a fixed snapshot and stays O(1).
 */
export interface Picker {
  /** The endpoint for this request, or `undefined` when none can take it. */
  pick(request: PickRequest): Endpoint | undefined;
}
