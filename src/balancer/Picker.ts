import type { Endpoint } from './Endpoint.ts';

/** What the picker may know about a request. */
export interface PickRequest {
  /** Watches, `follow=true` logs and upgrades: balanced by open streams, not by request count. */
  longRunning: boolean;
  /**
   * Endpoints this request has already tried: a retry never goes back to one of them. Only retries
   * pass it, so the common path stays free of set look-ups.
   */
  exclude?: ReadonlySet<Endpoint> | undefined;
}

/**
 * The momentary choice function of the balancer (gRPC's model): rebuilt whenever the endpoint set or
 * an endpoint's eligibility changes, so `pick` reads a fixed snapshot and never allocates.
 */
export interface Picker {
  /** The endpoint for this request, or `undefined` when none can take it. */
  pick(request: PickRequest): Endpoint | undefined;
}

/**
 * - `weighted-round-robin`: the round robin, each endpoint's weight also scaled by its observed load
 *   (latency of short GETs, requests stuck in flight), recomputed a few times a second; a pick goes
 *   round an endpoint whose short requests in flight pile up (far more than a random other's).
 * - `round-robin`: weighted, deterministic order (smooth weighted round robin or earliest deadline
 *   first), by SRV weight, health and slow start only.
 * - `least-request`: power of two choices between the round robin's next endpoint and a random one,
 *   by in-flight requests per unit of weight.
 */
export type Policy = 'weighted-round-robin' | 'round-robin' | 'least-request';
